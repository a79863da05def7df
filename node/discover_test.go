package node

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trustplane/trustplane/pki"
)

type testCert struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// issue makes a certificate from tmpl, signed by parent (self-signed when
// nil).
func issue(t *testing.T, tmpl *x509.Certificate, parent *testCert) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	signer, signerCert := key, tmpl
	if parent != nil {
		signer, signerCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCert{cert: c, key: key}
}

func newCA(t *testing.T, name string) testCert {
	return issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}, nil)
}

func newServing(t *testing.T, ca testCert) testCert {
	return issue(t, &x509.Certificate{Subject: pkix.Name{CommonName: "apiserver"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames: []string{"localhost"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, &ca)
}

// A node trusts the CA its pin names, and only when that CA signed the
// server's certificate for the host it dialled.
func TestPinnedCA(t *testing.T) {
	ca, other := newCA(t, "cluster"), newCA(t, "intruder")
	serving, forged := newServing(t, ca), newServing(t, other)
	for _, tt := range []struct {
		name  string
		chain []*x509.Certificate
		host  string
		pin   string
		err   string
	}{
		{"the pinned CA after its server certificate", []*x509.Certificate{serving.cert, ca.cert}, "127.0.0.1", pki.Pin(ca.cert), ""},
		{"an upper-case pin", []*x509.Certificate{serving.cert, ca.cert}, "localhost", strings.ToUpper(pki.Pin(ca.cert)[7:]), "want sha256:"},
		{"no CA presented", []*x509.Certificate{serving.cert}, "127.0.0.1", pki.Pin(ca.cert), "no CA certificate that matches"},
		{"another CA presented", []*x509.Certificate{forged.cert, other.cert}, "127.0.0.1", pki.Pin(ca.cert), "no CA certificate that matches"},
		{"the pinned CA beside a certificate it did not sign", []*x509.Certificate{forged.cert, ca.cert}, "127.0.0.1", pki.Pin(ca.cert), "not valid under the pinned CA"},
		{"the server certificate is not for the host", []*x509.Certificate{serving.cert, ca.cert}, "10.0.0.1", pki.Pin(ca.cert), "not valid under the pinned CA"},
		{"the leaf pinned as if a CA", []*x509.Certificate{serving.cert, serving.cert}, "127.0.0.1", pki.Pin(serving.cert), "no CA certificate that matches"},
		{"no certificate", nil, "127.0.0.1", pki.Pin(ca.cert), "no certificate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if err = pki.ValidatePin(tt.pin); err == nil {
				_, err = pinnedCA(tt.chain, tt.host, tt.pin)
			}
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("got %v, want %q", err, tt.err)
			}
		})
	}
}

// DiscoverCA reads the chain off a real TLS handshake, sending nothing.
func TestDiscoverCA(t *testing.T) {
	ca := newCA(t, "cluster")
	serving := newServing(t, ca)
	var requests int
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests++ }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{serving.cert.Raw, ca.cert.Raw}, PrivateKey: serving.key}}}
	srv.StartTLS()
	defer srv.Close()
	got, err := DiscoverCA(t.Context(), srv.URL, pki.Pin(ca.cert))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "BEGIN CERTIFICATE") {
		t.Errorf("got %q", got)
	}
	if _, err := DiscoverCA(t.Context(), srv.URL, pki.Pin(newCA(t, "other").cert)); err == nil {
		t.Error("a CA that does not match the pin was trusted")
	}
	if _, err := DiscoverCA(t.Context(), strings.Replace(srv.URL, "https", "http", 1), pki.Pin(ca.cert)); err == nil {
		t.Error("a plain HTTP server was accepted")
	}
	if requests != 0 {
		t.Errorf("%d requests sent before the CA was trusted", requests)
	}
}
