package controllers

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/trustplane/trustplane/pki"
)

// testCSR is a node client CSR of the key made by newKey, as tmpl asks.
func testCSR(t *testing.T, key crypto.Signer, tmpl *x509.CertificateRequest, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
		SignerName: "kubernetes.io/kube-apiserver-client-kubelet",
		Usages:     usages,
	}}
}

func ecKey(t *testing.T) crypto.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A node client request is exactly a node's client certificate: anything
// more is refused, with the reason.
func TestNodeClientRequest(t *testing.T) {
	ec := ecKey(t)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	weakRSA, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	node := pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}
	ds, ke, ca, sa := certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth
	caTrue, err := asn1.Marshal(struct{ IsCA bool }{true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		key    crypto.Signer
		tmpl   x509.CertificateRequest
		usages []certificatesv1.KeyUsage
		ok     bool
	}{
		{"a node's client certificate", ec, x509.CertificateRequest{Subject: node}, []certificatesv1.KeyUsage{ds, ca}, true},
		{"its usages in any order", ec, x509.CertificateRequest{Subject: node}, []certificatesv1.KeyUsage{ca, ds}, true},
		{"an RSA key with key encipherment", rsaKey, x509.CertificateRequest{Subject: node}, []certificatesv1.KeyUsage{ds, ke, ca}, true},
		{"an RSA key without", rsaKey, x509.CertificateRequest{Subject: node}, []certificatesv1.KeyUsage{ds, ca}, true},
		{"key encipherment for an EC key", ec, x509.CertificateRequest{Subject: node}, []certificatesv1.KeyUsage{ds, ke, ca}, false},
		{"server auth", ec, x509.CertificateRequest{Subject: node}, []certificatesv1.KeyUsage{ds, ca, sa}, false},
		{"no client auth", ec, x509.CertificateRequest{Subject: node}, []certificatesv1.KeyUsage{ds}, false},
		{"system:masters", ec, x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes", "system:masters"}}}, []certificatesv1.KeyUsage{ds, ca}, false},
		{"no organization", ec, x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1"}}, []certificatesv1.KeyUsage{ds, ca}, false},
		{"another common name", ec, x509.CertificateRequest{Subject: pkix.Name{CommonName: "admin", Organization: []string{"system:nodes"}}}, []certificatesv1.KeyUsage{ds, ca}, false},
		{"no node name", ec, x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:", Organization: []string{"system:nodes"}}}, []certificatesv1.KeyUsage{ds, ca}, false},
		{"another subject attribute", ec, x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}, OrganizationalUnit: []string{"x"}}}, []certificatesv1.KeyUsage{ds, ca}, false},
		{"a DNS name", ec, x509.CertificateRequest{Subject: node, DNSNames: []string{"n1"}}, []certificatesv1.KeyUsage{ds, ca}, false},
		{"an address", ec, x509.CertificateRequest{Subject: node, IPAddresses: []net.IP{net.IPv4(10, 0, 0, 1)}}, []certificatesv1.KeyUsage{ds, ca}, false},
		{"a CA", ec, x509.CertificateRequest{Subject: node, ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 19}, Critical: true, Value: caTrue}}}, []certificatesv1.KeyUsage{ds, ca}, false},
		{"a 1024-bit RSA key", weakRSA, x509.CertificateRequest{Subject: node}, []certificatesv1.KeyUsage{ds, ke, ca}, false},
		{"a P-224 key", p224, x509.CertificateRequest{Subject: node}, []certificatesv1.KeyUsage{ds, ca}, false},
		{"a node name that is not a name", ec, x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:a:b", Organization: []string{"system:nodes"}}}, []certificatesv1.KeyUsage{ds, ca}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			csr := testCSR(t, tt.key, &tt.tmpl, tt.usages...)
			name, err := nodeClientRequest(csr)
			if (err == nil) != tt.ok || (tt.ok && name != "n1") {
				t.Errorf("nodeClientRequest: %q, %v; want ok %v", name, err, tt.ok)
			}
		})
	}
}

// The signer issues a client certificate from the cluster CA: the node's
// subject, client auth only, for the shorter of its duration and the
// request's, and never beyond the CA.
func TestCSRSigner(t *testing.T) {
	certPEM, keyPEM, err := pki.NewCA("test-ca", 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.ParseCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	node := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	hour := int32(3600)
	for _, tt := range []struct {
		name       string
		duration   time.Duration
		expiration *int32
		want       time.Duration
	}{
		{"its duration", 24 * time.Hour, nil, 24 * time.Hour},
		{"the request's, shorter", 24 * time.Hour, &hour, time.Hour},
		{"no longer than the CA", 365 * 24 * time.Hour, nil, time.Until(ca.Cert.NotAfter)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &csrSigner{ca: ca, duration: tt.duration}
			csr := testCSR(t, ecKey(t), node, usages...)
			csr.Spec.ExpirationSeconds = tt.expiration
			out, err := s.sign(csr)
			if err != nil {
				t.Fatal(err)
			}
			cert := parseCertificate(t, out)
			if cert.Subject.CommonName != "system:node:n1" || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
				t.Errorf("subject %v", cert.Subject)
			}
			if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || cert.IsCA || len(cert.DNSNames)+len(cert.IPAddresses) > 0 {
				t.Errorf("usages %v, CA %v, names %v %v; want client auth only", cert.ExtKeyUsage, cert.IsCA, cert.DNSNames, cert.IPAddresses)
			}
			if cert.NotAfter.After(ca.Cert.NotAfter) {
				t.Errorf("not after %s, beyond the CA's %s", cert.NotAfter, ca.Cert.NotAfter)
			}
			if got := time.Until(cert.NotAfter); got > tt.want || got < tt.want-time.Minute {
				t.Errorf("lives %s more, want %s", got, tt.want)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("does not verify from the CA: %v", err)
			}
		})
	}
	// A request the approver would deny is not signed, approved or not.
	s := &csrSigner{ca: ca, duration: time.Hour}
	bad := testCSR(t, ecKey(t), node, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth)
	if _, err := s.sign(bad); err == nil {
		t.Error("signed a request for server auth")
	}
}

// The signer of the controller manager's options: its certificates live a
// year unless the options say otherwise, as kube's
// --cluster-signing-duration; a negative duration or no CA is refused.
func TestNewCSRSigner(t *testing.T) {
	certPEM, keyPEM, err := pki.NewCA("test-ca", 2*365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	node := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}}
	for _, tt := range []struct {
		name     string
		duration time.Duration
		want     time.Duration
	}{
		{"kube's default, a year", 0, 365 * 24 * time.Hour},
		{"the options'", 2 * time.Hour, 2 * time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := newCSRSigner(Options{ClusterSigningCertFile: certFile, ClusterSigningKeyFile: keyFile, ClusterSigningDuration: tt.duration})
			if err != nil {
				t.Fatal(err)
			}
			out, err := s.sign(testCSR(t, ecKey(t), node, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth))
			if err != nil {
				t.Fatal(err)
			}
			cert := parseCertificate(t, out)
			if got := time.Until(cert.NotAfter); got > tt.want || got < tt.want-time.Minute {
				t.Errorf("signs certificates that live %s more, want %s", got, tt.want)
			}
		})
	}
	for _, o := range []Options{
		{ClusterSigningCertFile: certFile, ClusterSigningKeyFile: keyFile, ClusterSigningDuration: -time.Hour},
		{ClusterSigningCertFile: certFile},
		{ClusterSigningCertFile: certFile, ClusterSigningKeyFile: filepath.Join(dir, "missing.key")},
	} {
		if _, err := newCSRSigner(o); err == nil {
			t.Errorf("newCSRSigner(%+v) made a signer, want an error", o)
		}
	}
}

func TestSignable(t *testing.T) {
	cond := func(ts ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
		c := &certificatesv1.CertificateSigningRequest{}
		for _, t := range ts {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue})
		}
		return c
	}
	issued := cond(certificatesv1.CertificateApproved)
	issued.Status.Certificate = []byte("x")
	for name, tt := range map[string]struct {
		csr  *certificatesv1.CertificateSigningRequest
		want bool
	}{
		"pending":  {cond(), false},
		"approved": {cond(certificatesv1.CertificateApproved), true},
		"denied":   {cond(certificatesv1.CertificateDenied), false},
		"failed":   {cond(certificatesv1.CertificateApproved, certificatesv1.CertificateFailed), false},
		"issued":   {issued, false},
	} {
		if got := signable(tt.csr); got != tt.want {
			t.Errorf("%s: signable %v, want %v", name, got, tt.want)
		}
	}
}

// CheckOptions refuses a CSR signer whose CA does not load, and only
// when the signer runs.
func TestCheckOptions(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		name        string
		controllers []string
		cert, key   string
		wantErr     bool
	}{
		{"the signer without its files", []string{"replicaset", "csrsigning"}, missing, missing, true},
		{"the signer with files that hold no CA", []string{"csrsigning"}, garbage, garbage, true},
		{"the signer with no files named", []string{"csrsigning"}, "", "", true},
		{"no signer", []string{"replicaset", "garbagecollector"}, missing, missing, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckOptions(Options{Controllers: tc.controllers, ClusterSigningCertFile: tc.cert, ClusterSigningKeyFile: tc.key})
			if (err != nil) != tc.wantErr {
				t.Errorf("CheckOptions: %v, want an error %v", err, tc.wantErr)
			}
		})
	}
}

// parseCertificate is the certificate a signer wrote in PEM.
func parseCertificate(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	if b == nil {
		t.Fatalf("not PEM: %q", certPEM)
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
