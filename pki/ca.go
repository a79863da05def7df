package pki

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cloudflare/cfssl/csr"
	"github.com/cloudflare/cfssl/helpers"
	"github.com/cloudflare/cfssl/initca"
	cflog "github.com/cloudflare/cfssl/log"
)

func init() {
	// cfssl logs every issued serial number at Info on stderr; trustplane
	// reports what it issues itself.
	cflog.Level = cflog.LevelError
}

// Default validity periods.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultLeafValidity = 365 * 24 * time.Hour
)

// CA is a certificate authority that can issue leaf certificates.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// NewCA creates a self-signed CA certificate and its ECDSA P-256 key. The CA
// may sign leaves only (path length zero).
func NewCA(commonName string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if validity <= 0 {
		return nil, nil, fmt.Errorf("CA validity must be positive, got %s", validity)
	}
	req := &csr.CertificateRequest{
		CN:         commonName,
		KeyRequest: &csr.KeyRequest{A: "ecdsa", S: 256},
		CA:         &csr.CAConfig{Expiry: validity.String(), PathLenZero: true},
	}
	certPEM, _, keyPEM, err = initca.New(req)
	if err != nil {
		return nil, nil, fmt.Errorf("create CA %q: %w", commonName, err)
	}
	return certPEM, keyPEM, nil
}

// ParseCA parses a CA from its PEM certificate and key, checking that the
// key belongs to the certificate and that the certificate is a CA.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := helpers.ParseCertificatePEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("certificate %q is not a CA", cert.Subject.CommonName)
	}
	key, err := helpers.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, errors.New("parse CA private key: malformed key")
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("CA key does not match certificate %q", cert.Subject.CommonName)
	}
	return &CA{Cert: cert, CertPEM: certPEM, key: key}, nil
}

// LoadCA reads the CA dir/name.crt and dir/name.key.
func LoadCA(dir, name string) (*CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, name+".crt"))
	if err != nil {
		return nil, fmt.Errorf("read CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, name+".key"))
	if err != nil {
		return nil, fmt.Errorf("read CA key: %w", err)
	}
	ca, err := ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, name+".crt"), err)
	}
	return ca, nil
}

// EnsureCA loads the CA dir/name.{crt,key}, creating it when neither file
// exists. One file without the other is an error: nothing is overwritten.
func EnsureCA(dir, name, commonName string, validity time.Duration) (ca *CA, created bool, err error) {
	created, err = ensurePair(dir, name, func() ([]byte, []byte, error) {
		return NewCA(commonName, validity)
	})
	if err != nil {
		return nil, false, err
	}
	ca, err = LoadCA(dir, name)
	return ca, created, err
}

// Pool returns a certificate pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ak, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ak.Equal(b)
}
