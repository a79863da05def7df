package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trustplane/trustplane/rbac"
)

// csrPEM is a PEM CERTIFICATE REQUEST for subject, signed by a new P-256
// key.
func csrPEM(subject pkix.Name) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// certPEM is a self-signed certificate, something to put in a status.
func certPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// CertificateSigningRequests are validated as kube-apiserver validates
// them; their requester is who created them, whatever the client says;
// approving needs the approve verb on the signer and signing the sign
// verb, each through its own subresource.
func TestCertificateSigningRequests(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	csrs := cs.CertificatesV1().CertificateSigningRequests()
	newCSR := func(name, signer string, request []byte, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       certificatesv1.CertificateSigningRequestSpec{Request: request, SignerName: signer, Usages: usages},
		}
	}
	good := csrPEM(pkix.Name{CommonName: "alice"})
	short := int32(599)

	for name, c := range map[string]*certificatesv1.CertificateSigningRequest{
		"no request":          newCSR("a", "example.com/s", nil, certificatesv1.UsageClientAuth),
		"a request not PEM":   newCSR("a", "example.com/s", []byte("hello"), certificatesv1.UsageClientAuth),
		"a certificate":       newCSR("a", "example.com/s", certPEM(t), certificatesv1.UsageClientAuth),
		"two requests":        newCSR("a", "example.com/s", append(append([]byte{}, good...), good...), certificatesv1.UsageClientAuth),
		"no signer":           newCSR("a", "", good, certificatesv1.UsageClientAuth),
		"a signer no domain":  newCSR("a", "signer", good, certificatesv1.UsageClientAuth),
		"no usages":           newCSR("a", "example.com/s", good),
		"an unknown usage":    newCSR("a", "example.com/s", good, "root of all trust"),
		"a usage twice":       newCSR("a", "example.com/s", good, certificatesv1.UsageClientAuth, certificatesv1.UsageClientAuth),
		"too short a request": {ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: certificatesv1.CertificateSigningRequestSpec{Request: good, SignerName: "example.com/s", Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}, ExpirationSeconds: &short}},
	} {
		if _, err := csrs.Create(ctx, c, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("CSR with %s: %v, want Invalid", name, err)
		}
	}
	masters := newCSR("masters", "example.com/s", csrPEM(pkix.Name{CommonName: "eve", Organization: []string{"system:masters"}}), certificatesv1.UsageClientAuth)
	if _, err := csrs.Create(ctx, masters, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("CSR for system:masters: %v, want Forbidden", err)
	}

	// The requester is the server's to say.
	c := newCSR("alice", "example.com/s", good, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)
	c.Spec.Username, c.Spec.Groups = "root", []string{"system:masters"}
	c.Status.Certificate = certPEM(t)
	got, err := csrs.Create(ctx, c, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Username != "admin" || strings.Join(got.Spec.Groups, ",") != rbac.ClusterAdminsGroup+",system:authenticated" || len(got.Status.Certificate) != 0 {
		t.Errorf("created CSR: username %q groups %q certificate %d bytes; want admin's, and no certificate", got.Spec.Username, got.Spec.Groups, len(got.Status.Certificate))
	}
	// The spec is immutable.
	got.Spec.Usages = append(got.Spec.Usages, certificatesv1.UsageServerAuth)
	if _, err := csrs.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("update of the spec: %v, want Invalid", err)
	}

	// approve and sign on signers, for one signer, by name or domain.
	approver := &identity{user: "approver"}
	signer := &identity{user: "signer"}
	grant := func(name string, rules ...rbacv1.PolicyRule) {
		t.Helper()
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	csrRule := func(verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: verbs, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status"}}
	}
	grant("approver", csrRule("get", "update"), rbacv1.PolicyRule{Verbs: []string{"approve"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{"example.com/*"}})
	grant("signer", csrRule("get", "update"), rbacv1.PolicyRule{Verbs: []string{"sign"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{"example.com/s"}})
	eventually(t, "the grants in force", func() error {
		if _, err := ts.clientset(t, approver).CertificatesV1().CertificateSigningRequests().Get(ctx, "alice", metav1.GetOptions{}); err != nil {
			return err
		}
		_, err := ts.clientset(t, signer).CertificatesV1().CertificateSigningRequests().Get(ctx, "alice", metav1.GetOptions{})
		return err
	})
	other, err := csrs.Create(ctx, newCSR("other", "other.example/s", good, certificatesv1.UsageClientAuth), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	approve := func(id *identity, c *certificatesv1.CertificateSigningRequest, ct certificatesv1.RequestConditionType) (*certificatesv1.CertificateSigningRequest, error) {
		c = c.DeepCopy()
		c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: ct, Status: corev1.ConditionTrue, Reason: "Test"})
		return ts.clientset(t, id).CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, c.Name, c, metav1.UpdateOptions{})
	}
	withCert := func(c *certificatesv1.CertificateSigningRequest, cert []byte) *certificatesv1.CertificateSigningRequest {
		c = c.DeepCopy()
		c.Status.Certificate = cert
		return c
	}
	if _, err := approve(signer, got, certificatesv1.CertificateApproved); !apierrors.IsForbidden(err) {
		t.Errorf("approval by the signer: %v, want Forbidden", err)
	}
	if _, err := approve(approver, other, certificatesv1.CertificateApproved); !apierrors.IsForbidden(err) {
		t.Errorf("approval for another signer: %v, want Forbidden", err)
	}
	// The status is not a way around the approval.
	unapproved := got.DeepCopy()
	unapproved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	if _, err := ts.clientset(t, signer).CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, unapproved, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("approval through the status: %v, want Invalid", err)
	}
	if _, err := ts.clientset(t, signer).CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, withCert(got, certPEM(t)), metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("certificate on an unapproved request: %v, want Invalid", err)
	}
	approved, err := approve(approver, got, certificatesv1.CertificateApproved)
	if err != nil {
		t.Fatalf("approval by the approver: %v", err)
	}
	if c := approved.Status.Conditions; len(c) != 1 || c[0].LastUpdateTime.IsZero() || len(approved.Spec.Usages) != 2 {
		t.Errorf("approved: conditions %+v, usages %v", c, approved.Spec.Usages)
	}
	if _, err := approve(approver, approved, certificatesv1.CertificateDenied); !apierrors.IsInvalid(err) {
		t.Errorf("denial of an approved request: %v, want Invalid", err)
	}
	revoked := approved.DeepCopy()
	revoked.Status.Conditions = nil
	if _, err := ts.clientset(t, approver).CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, "alice", revoked, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("removal of the approval: %v, want Invalid", err)
	}

	if _, err := ts.clientset(t, approver).CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, withCert(approved, certPEM(t)), metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("signing by the approver: %v, want Forbidden", err)
	}
	if _, err := ts.clientset(t, signer).CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, withCert(approved, []byte("not a certificate")), metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a certificate not PEM: %v, want Invalid", err)
	}
	signed, err := ts.clientset(t, signer).CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, withCert(approved, certPEM(t)), metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("signing by the signer: %v", err)
	}
	if _, err := ts.clientset(t, signer).CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, withCert(signed, certPEM(t)), metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a second certificate: %v, want Invalid", err)
	}
	// A write of the object keeps its status.
	signed.Labels = map[string]string{"seen": "yes"}
	signed.Status = certificatesv1.CertificateSigningRequestStatus{}
	kept, err := csrs.Update(ctx, signed, metav1.UpdateOptions{})
	if err != nil || len(kept.Status.Certificate) == 0 || len(kept.Status.Conditions) != 1 {
		t.Errorf("update of the object: %v, status %+v", err, kept.Status)
	}
}
