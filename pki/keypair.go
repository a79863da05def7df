package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
)

// LoadKeyPair reads dir/name.crt and dir/name.key as a TLS certificate with
// its parsed leaf.
func LoadKeyPair(dir, name string) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("load %s key pair: %w", filepath.Join(dir, name), err)
	}
	if pair.Leaf == nil {
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("parse %s.crt: %w", filepath.Join(dir, name), err)
		}
		pair.Leaf = leaf
	}
	return pair, nil
}

// LoadCertPool reads a PEM file of CA certificates into a pool.
func LoadCertPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no certificate", path)
	}
	return pool, nil
}

// WithIssuer appends the CA certificate in caFile to pair's chain, when
// that CA signed pair's leaf, so that a client that does not trust the CA
// yet (a joining node holding only its pin) is shown the CA with the
// server's certificate and can check both.
func WithIssuer(pair tls.Certificate, caFile string) (tls.Certificate, error) {
	data, err := os.ReadFile(caFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("read CA: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return tls.Certificate{}, fmt.Errorf("%s holds no certificate", caFile)
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("parse %s: %w", caFile, err)
	}
	if pair.Leaf == nil || pair.Leaf.CheckSignatureFrom(ca) != nil || len(pair.Certificate) != 1 {
		return pair, nil
	}
	pair.Certificate = append(pair.Certificate, ca.Raw)
	return pair, nil
}
