package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/trustplane/trustplane/pki"
)

// DiscoverCA connects to the API server at server without trusting it and
// without sending any credential, finds among the certificates it presents
// the CA whose public key pin names, checks that this CA signed the
// server's certificate for server's host, and returns the CA as PEM. A
// server that presents no such CA, or a certificate the CA did not sign,
// is refused: a node trusts nothing but its pin.
func DiscoverCA(ctx context.Context, server, pin string) ([]byte, error) {
	if err := pki.ValidatePin(pin); err != nil {
		return nil, err
	}
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("server %q: want https://host:port", server)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "443"
	}
	dialer := &tls.Dialer{
		NetDialer: &net.Dialer{Timeout: 10 * time.Second},
		Config: &tls.Config{
			// Checked below, against the pin, before anything is sent.
			InsecureSkipVerify: true, //nolint:gosec
			MinVersion:         tls.VersionTLS12,
		},
	}
	conn, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("reach the API server to discover its CA: %w", err)
	}
	state := conn.(*tls.Conn).ConnectionState()
	conn.Close()
	return pinnedCA(state.PeerCertificates, host, pin)
}

// pinnedCA picks out of chain, a server's certificates as it presented
// them, the CA that pin names, and checks that the server's certificate
// is valid for host under it.
func pinnedCA(chain []*x509.Certificate, host, pin string) ([]byte, error) {
	if len(chain) == 0 {
		return nil, errors.New("the API server presented no certificate")
	}
	var ca *x509.Certificate
	for _, c := range chain[1:] {
		if c.IsCA && pki.MatchesPin(c, pin) {
			ca = c
			break
		}
	}
	if ca == nil {
		return nil, fmt.Errorf("the API server presented no CA certificate that matches the pin %s", pin)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	opts := x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if _, err := chain[0].Verify(opts); err != nil {
		return nil, fmt.Errorf("the API server's certificate is not valid under the pinned CA: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), nil
}
