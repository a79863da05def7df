package kinds

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestValidateCertificateSigningRequest(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "a"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	request := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	tampered := append([]byte(nil), der...)
	tampered[len(tampered)-1] ^= 1
	ten, nine := int32(600), int32(599)
	valid := func() *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: request, SignerName: "example.com/signer", Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}, ExpirationSeconds: &ten,
		}}
	}
	for _, tt := range []struct {
		name   string
		change func(c *certificatesv1.CertificateSigningRequest)
		want   []string // field paths, in order
	}{
		{"valid", func(*certificatesv1.CertificateSigningRequest) {}, nil},
		{"no request", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = nil }, []string{"spec.request"}},
		{"a signature that does not verify", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: tampered})
		}, []string{"spec.request"}},
		{"no signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" }, []string{"spec.signerName"}},
		{"a signer without a path", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com/" }, []string{"spec.signerName"}},
		{"a signer of a bare domain", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example/signer" }, []string{"spec.signerName"}},
		{"no usages", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil }, []string{"spec.usages"}},
		{"an unknown usage and a twice", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []certificatesv1.KeyUsage{"everything", certificatesv1.UsageClientAuth, certificatesv1.UsageClientAuth}
		}, []string{"spec.usages[0]", "spec.usages[2]"}},
		{"under ten minutes", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = &nine }, []string{"spec.expirationSeconds"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(c)
			errs := ValidateCertificateSigningRequest(c, nil)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) || (len(got) > 1 && got[1] != tt.want[1]) {
				t.Errorf("errors %v, want at %v", errs, tt.want)
			}
		})
	}
	// kube's words for the legacy signer, which certificates/v1 refuses.
	legacy := valid()
	legacy.Spec.SignerName = "kubernetes.io/legacy-unknown"
	if errs := ValidateCertificateSigningRequest(legacy, nil); len(errs) != 1 || errs[0].Field != "spec.signerName" || errs[0].Detail != "the legacy signerName is not allowed via this API version" {
		t.Errorf("the legacy signer: %v, want kube's one error at spec.signerName", errs)
	}
	// The spec is immutable.
	old, next := valid(), valid()
	next.Spec.Usages = append(next.Spec.Usages, certificatesv1.UsageDigitalSignature)
	if errs := ValidateCertificateSigningRequest(next, old); len(errs) != 1 || errs[0].Field != "spec" {
		t.Errorf("changed spec: %v, want one error at spec", errs)
	}
}

func TestValidateCertificateSigningRequestStatus(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cond := func(ct certificatesv1.RequestConditionType, s corev1.ConditionStatus) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: ct, Status: s}
	}
	approved := cond(certificatesv1.CertificateApproved, corev1.ConditionTrue)
	denied := cond(certificatesv1.CertificateDenied, corev1.ConditionTrue)
	failed := cond(certificatesv1.CertificateFailed, corev1.ConditionTrue)
	csr := func(cert []byte, cs ...certificatesv1.CertificateSigningRequestCondition) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{Conditions: cs, Certificate: cert}}
	}
	for _, tt := range []struct {
		name     string
		csr, old *certificatesv1.CertificateSigningRequest
		ok       bool
	}{
		{"approved", csr(nil, approved), csr(nil), true},
		{"issued", csr(cert, approved), csr(nil, approved), true},
		{"another condition", csr(nil, approved, cond("Checked", corev1.ConditionFalse)), csr(nil, approved), true},
		{"approved twice", csr(nil, approved, approved), csr(nil), false},
		{"approved and denied", csr(nil, approved, denied), csr(nil), false},
		{"approved False", csr(nil, cond(certificatesv1.CertificateApproved, corev1.ConditionFalse)), csr(nil), false},
		{"a status not known", csr(nil, cond("Checked", "Maybe")), csr(nil), false},
		{"no type", csr(nil, cond("", corev1.ConditionTrue)), csr(nil), false},
		{"the approval removed", csr(nil), csr(nil, approved), false},
		{"the denial removed", csr(nil), csr(nil, denied), false},
		{"a certificate unapproved", csr(cert), csr(nil), false},
		{"a certificate failed", csr(cert, approved, failed), csr(nil, approved), false},
		{"a certificate not PEM", csr([]byte("x"), approved), csr(nil, approved), false},
		{"a certificate and more", csr(append(append([]byte(nil), cert...), []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")...), approved), csr(nil, approved), false},
		{"the certificate changed", csr(append(append([]byte(nil), cert...), cert...), approved), csr(cert, approved), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateCertificateSigningRequestStatus(tt.csr, tt.old)
			if (len(errs) == 0) != tt.ok {
				t.Errorf("errors %v, want ok %v", errs, tt.ok)
			}
		})
	}
	if !ApprovalUnchanged(csr(cert, approved, failed), csr(nil, approved)) || ApprovalUnchanged(csr(nil, approved), csr(nil)) {
		t.Error("ApprovalUnchanged: wrong about the Approved condition")
	}
}
