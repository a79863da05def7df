package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"slices"
	"testing"
	"time"
)

// SignClientCSR issues client certificates only: no other usage, no CA,
// no hosts, nothing beyond the CA's expiry.
func TestSignClientCSR(t *testing.T) {
	certPEM, keyPEM, err := NewCA("test-ca", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := ParseCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	request := func(tmpl *x509.CertificateRequest) []byte {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}
	subject := pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}
	caTrue, err := asn1.Marshal(struct{ IsCA bool }{true})
	if err != nil {
		t.Fatal(err)
	}
	caFalse, err := asn1.Marshal(struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	bcOID := asn1.ObjectIdentifier{2, 5, 29, 19}
	delegationOID := asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 44363, 44}
	asn1NULL := []byte{0x05, 0x00}
	for _, tt := range []struct {
		name   string
		tmpl   x509.CertificateRequest
		usages []string
		ok     bool
	}{
		{"a client", x509.CertificateRequest{Subject: subject, DNSNames: []string{"n1.example"}}, []string{"digital signature", "client auth"}, true},
		{"server auth", x509.CertificateRequest{Subject: subject}, []string{"digital signature", "client auth", "server auth"}, false},
		{"no client auth", x509.CertificateRequest{Subject: subject}, []string{"digital signature"}, false},
		{"a CA", x509.CertificateRequest{Subject: subject, ExtraExtensions: []pkix.Extension{{Id: bcOID, Critical: true, Value: caTrue}}}, []string{"digital signature", "client auth"}, false},
		// Basic constraints that do not parse cleanly are read as asking.
		{"basic constraints with bytes after them", x509.CertificateRequest{Subject: subject, ExtraExtensions: []pkix.Extension{{Id: bcOID, Value: append(slices.Clone(caFalse), 0)}}}, []string{"digital signature", "client auth"}, false},
		{"basic constraints saying not a CA", x509.CertificateRequest{Subject: subject, ExtraExtensions: []pkix.Extension{{Id: bcOID, Value: caFalse}}}, []string{"digital signature", "client auth"}, true},
		// cfssl copies a request's TLS delegation extension unless the
		// profile lists what it takes from a request.
		{"a delegation extension", x509.CertificateRequest{Subject: subject, ExtraExtensions: []pkix.Extension{{Id: delegationOID, Value: asn1NULL}}}, []string{"digital signature", "client auth"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := ca.SignClientCSR(request(&tt.tmpl), tt.usages, time.Now().Add(365*24*time.Hour))
			if (err == nil) != tt.ok {
				t.Fatalf("SignClientCSR: %v; want ok %v", err, tt.ok)
			}
			if !tt.ok {
				return
			}
			b, _ := pem.Decode(out)
			cert, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			for _, ext := range cert.Extensions {
				if ext.Id.Equal(delegationOID) {
					t.Errorf("the certificate carries the request's delegation extension")
				}
			}
			if cert.IsCA || len(cert.DNSNames) > 0 || len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
				t.Errorf("CA %v, DNS names %v, usages %v; want a client certificate naming no host", cert.IsCA, cert.DNSNames, cert.ExtKeyUsage)
			}
			if cert.NotAfter.After(ca.Cert.NotAfter) {
				t.Errorf("not after %s, beyond the CA's %s", cert.NotAfter, ca.Cert.NotAfter)
			}
		})
	}
}
