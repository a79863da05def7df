package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// joiningNode plays a node agent: its key, and the CSRs it sends.
type joiningNode struct {
	name string
	key  *ecdsa.PrivateKey
}

func newJoiningNode(t *testing.T, name string) *joiningNode {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &joiningNode{name: name, key: key}
}

// request is a CSR of the node's key for subject, with usages.
func (n *joiningNode) request(t *testing.T, csrName string, tmpl x509.CertificateRequest, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &tmpl, n.key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: csrName},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: "kubernetes.io/kube-apiserver-client-kubelet",
			Usages:     usages,
		},
	}
}

func nodeSubject(name string) x509.CertificateRequest {
	return x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}}}
}

var nodeClientUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

// decision waits until the approver has decided a CSR and, once approved,
// the signer has issued or failed it; it returns the CSR then.
func decision(t *testing.T, cs kubernetes.Interface, name string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	var out *certificatesv1.CertificateSigningRequest
	waitFor(t, "CSR "+name+" decided", func(ctx context.Context) error {
		c, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == certificatesv1.CertificateDenied || cond.Type == certificatesv1.CertificateFailed || len(c.Status.Certificate) > 0 {
				out = c
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", c.Status.Conditions)
	})
	return out
}

func csrCondition(c *certificatesv1.CertificateSigningRequest, ct certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequestCondition {
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == ct {
			return &c.Status.Conditions[i]
		}
	}
	return nil
}

// withBearer is cfg, without its credential, with a bearer token.
func withBearer(t *testing.T, cfg *rest.Config, token string) kubernetes.Interface {
	t.Helper()
	c := rest.AnonymousClientConfig(cfg)
	c.BearerToken = token
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// withCert is cfg, without its credential, with a client certificate.
func withCert(t *testing.T, cfg *rest.Config, certPEM []byte, key *ecdsa.PrivateKey) kubernetes.Interface {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := rest.AnonymousClientConfig(cfg)
	c.CertData = certPEM
	c.KeyData = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// tokenCreate runs trustplane token create with args and returns what it
// printed, by field: token, ca-cert-hash, expires.
func tokenCreate(t testing.TB, c *e2etest.Cluster, args ...string) map[string]string {
	t.Helper()
	stdout, stderr, err := e2etest.Run(t, append([]string{"token", "create", "--kubeconfig", c.AdminConf()}, args...)...)
	if err != nil {
		t.Fatalf("token create: %v\n%s", err, stderr)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(stdout)), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		fields[k] = v
	}
	id, secret, _ := strings.Cut(fields["token"], ".")
	if len(id) != 6 || len(secret) != 16 {
		t.Fatalf("token create printed %q", stdout)
	}
	return fields
}

func whoami(ctx context.Context, cs kubernetes.Interface) (string, error) {
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username + " " + strings.Join(r.Status.UserInfo.Groups, ","), nil
}

// A node joins as kube's do: a bootstrap token from `trustplane token
// create`, a CSR made with it, approved and signed by the controller
// manager, and then the node's own certificate, with which it creates its
// Node. Every way to get more than that is tried and refused.
func TestNodeJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := e2etest.StartCluster(t)
	admin, adminCfg := clientFor(t, c.AdminConf())
	ctx := t.Context()

	fields := tokenCreate(t, c, "--ttl", "1h", "--description", "rack 4")
	token := fields["token"]
	id, secret, _ := strings.Cut(token, ".")
	// The pin is kubeadm's: sha256 of the CA's public key.
	caPEM, err := os.ReadFile(filepath.Join(c.Dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(caPEM)
	ca, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(ca.RawSubjectPublicKeyInfo)
	if want := "sha256:" + hex.EncodeToString(sum[:]); fields["ca-cert-hash"] != want {
		t.Errorf("ca-cert-hash %q, want %q", fields["ca-cert-hash"], want)
	}
	stdout, _, err := e2etest.Run(t, "token", "list", "--kubeconfig", c.AdminConf())
	if err != nil || !strings.Contains(string(stdout), id) || !strings.Contains(string(stdout), "rack 4") || strings.Contains(string(stdout), secret) {
		t.Errorf("token list: %v\n%s; want the id and description, never the secret", err, stdout)
	}

	bootstrap := withBearer(t, adminCfg, token)
	if who, err := whoami(ctx, bootstrap); err != nil || who != "system:bootstrap:"+id+" system:bootstrappers,system:authenticated" {
		t.Fatalf("whoami with the token: %q %v", who, err)
	}
	// A bootstrap token may create and read CSRs, and nothing else.
	refusals := map[string]error{}
	_, refusals["list secrets"] = bootstrap.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	_, refusals["get its own token"] = bootstrap.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+id, metav1.GetOptions{})
	_, refusals["create a node"] = bootstrap.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	_, refusals["list pods"] = bootstrap.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	_, refusals["list nodes"] = bootstrap.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	_, refusals["create a token"] = bootstrap.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	for what, err := range refusals {
		if !apierrors.IsForbidden(err) {
			t.Errorf("bootstrap token may %s: %v, want Forbidden", what, err)
		}
	}

	// The node joins.
	n1 := newJoiningNode(t, "n1")
	if _, err := bootstrap.CertificatesV1().CertificateSigningRequests().Create(ctx, n1.request(t, "node-csr-n1", nodeSubject("n1"), nodeClientUsages...), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CSR with the bootstrap token: %v", err)
	}
	got := decision(t, bootstrap, "node-csr-n1")
	if a := csrCondition(got, certificatesv1.CertificateApproved); a == nil || a.Reason != "AutoApproved" || len(got.Status.Certificate) == 0 {
		t.Fatalf("node CSR: conditions %+v, %d bytes of certificate; want approved and issued", got.Status.Conditions, len(got.Status.Certificate))
	}
	if got.Spec.Username != "system:bootstrap:"+id {
		t.Errorf("CSR requester %q", got.Spec.Username)
	}
	// It reads its own CSR, as a node agent waits for it (a watch of its
	// name), and no one else's.
	if _, err := bootstrap.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=node-csr-n1"}); err != nil {
		t.Errorf("bootstrap token lists its own CSR by name: %v", err)
	}
	if _, err := admin.CertificatesV1().CertificateSigningRequests().Create(ctx, newJoiningNode(t, "x").request(t, "admins-own", nodeSubject("x"), nodeClientUsages...), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.CertificatesV1().CertificateSigningRequests().Get(ctx, "admins-own", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bootstrap token reads another's CSR: %v, want Forbidden", err)
	}
	if _, err := bootstrap.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bootstrap token lists every CSR: %v, want Forbidden", err)
	}
	// The bootstrap token may not approve, sign or delete, even its own.
	mine := got.DeepCopy()
	mine.Status.Conditions = nil
	if _, err := bootstrap.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, mine.Name, mine, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bootstrap token updates an approval: %v, want Forbidden", err)
	}
	if err := bootstrap.CertificatesV1().CertificateSigningRequests().Delete(ctx, mine.Name, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bootstrap token deletes a CSR: %v, want Forbidden", err)
	}

	node := withCert(t, adminCfg, got.Status.Certificate, n1.key)
	if who, err := whoami(ctx, node); err != nil || who != "system:node:n1 system:nodes,system:authenticated" {
		t.Fatalf("whoami with the node's certificate: %q %v", who, err)
	}
	if _, err := node.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the node creates its Node: %v", err)
	}
	if _, err := node.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the node creates another's Node: %v, want Forbidden", err)
	}
	if _, err := node.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the node lists secrets: %v, want Forbidden", err)
	}
	// The node renews its own certificate, with a new key.
	renewed := newJoiningNode(t, "n1")
	if _, err := node.CertificatesV1().CertificateSigningRequests().Create(ctx, renewed.request(t, "node-csr-n1-renew", nodeSubject("n1"), nodeClientUsages...), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a renewal CSR: %v", err)
	}
	if got := decision(t, node, "node-csr-n1-renew"); len(got.Status.Certificate) == 0 {
		t.Errorf("renewal: conditions %+v, no certificate", got.Status.Conditions)
	}

	// What is not a node's client certificate, or not the requester's,
	// is denied with a reason, and never signed.
	caTrue, err := asn1.Marshal(struct{ IsCA bool }{true})
	if err != nil {
		t.Fatal(err)
	}
	caRequest := nodeSubject("n3")
	caRequest.ExtraExtensions = []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 19}, Critical: true, Value: caTrue}}
	masters := x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n3", Organization: []string{"system:nodes", "system:masters"}}}
	extraOrg := x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n3", Organization: []string{"system:nodes", "ops"}}}
	admins := x509.CertificateRequest{Subject: pkix.Name{CommonName: "admin", Organization: []string{"trustplane:cluster-admins"}}}
	n3 := newJoiningNode(t, "n3")
	for _, tt := range []struct {
		name   string
		as     kubernetes.Interface
		csr    *certificatesv1.CertificateSigningRequest
		reason string
	}{
		{"server auth", bootstrap, n3.request(t, "server-auth", nodeSubject("n3"), certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth), "NotANodeClientRequest"},
		{"a CA", bootstrap, n3.request(t, "a-ca", caRequest, nodeClientUsages...), "NotANodeClientRequest"},
		{"an organization more", bootstrap, n3.request(t, "extra-org", extraOrg, nodeClientUsages...), "NotANodeClientRequest"},
		{"the cluster admins", bootstrap, n3.request(t, "admins", admins, nodeClientUsages...), "NotANodeClientRequest"},
		{"another node's certificate from a node", node, n3.request(t, "other-node", nodeSubject("other"), nodeClientUsages...), "RequesterNotPermitted"},
	} {
		if _, err := tt.as.CertificatesV1().CertificateSigningRequests().Create(ctx, tt.csr, metav1.CreateOptions{}); err != nil {
			t.Errorf("%s: create: %v", tt.name, err)
			continue
		}
		got := decision(t, admin, tt.csr.Name)
		if d := csrCondition(got, certificatesv1.CertificateDenied); d == nil || d.Reason != tt.reason || d.Message == "" || len(got.Status.Certificate) > 0 {
			t.Errorf("%s: conditions %+v, %d bytes of certificate; want denied for %s, with a message", tt.name, got.Status.Conditions, len(got.Status.Certificate), tt.reason)
		}
	}
	// system:masters is refused before it is even stored.
	if _, err := bootstrap.CertificatesV1().CertificateSigningRequests().Create(ctx, n3.request(t, "masters", masters, nodeClientUsages...), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a CSR for system:masters: %v, want Forbidden", err)
	}

	// Deleted, the token is refused at once.
	if _, stderr, err := e2etest.Run(t, "token", "delete", "--kubeconfig", c.AdminConf(), token); err != nil {
		t.Fatalf("token delete: %v\n%s", err, stderr)
	}
	if _, err := whoami(ctx, bootstrap); !apierrors.IsUnauthorized(err) {
		t.Errorf("deleted token: %v, want Unauthorized", err)
	}

	// Expired, it is refused, and the token cleaner deletes it.
	expiring := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-expire", Namespace: "kube-system"},
		Type:       "bootstrap.kubernetes.io/token",
		StringData: map[string]string{
			"token-id": "expire", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true",
			"expiration": time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339),
		},
	}
	if _, err := admin.CoreV1().Secrets("kube-system").Create(ctx, expiring, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expiringClient := withBearer(t, adminCfg, "expire.0123456789abcdef")
	if _, err := whoami(ctx, expiringClient); err != nil {
		t.Fatalf("token before it expires: %v", err)
	}
	waitFor(t, "the expired token refused", func(ctx context.Context) error {
		if _, err := whoami(ctx, expiringClient); !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("whoami: %v", err)
		}
		return nil
	})
	waitFor(t, "the expired token deleted", func(ctx context.Context) error {
		_, err := admin.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-expire", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errors.Join(err, errors.New("still there"))
	})

	// The controllers' identities hold what their jobs need, no more.
	cleaner := tokenClient(t, admin, adminCfg, "token-cleaner")
	if _, err := cleaner.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the token cleaner lists kube-system's Secrets: %v", err)
	}
	for what, err := range map[string]error{
		"lists Secrets elsewhere": func() error {
			_, err := cleaner.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
			return err
		}(),
		"lists every Secret": func() error { _, err := cleaner.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); return err }(),
		"reads a Secret": func() error {
			_, err := cleaner.CoreV1().Secrets("kube-system").Get(ctx, "any", metav1.GetOptions{})
			return err
		}(),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the token cleaner %s: %v, want Forbidden", what, err)
		}
	}
	approver := tokenClient(t, admin, adminCfg, "csr-approving-controller")
	issued, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, "node-csr-n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := approver.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, issued, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the approver writes a status: %v, want Forbidden", err)
	}
	// The signer signs what the approver approved: it may approve
	// nothing itself, and it reads the CA key from its file, never a
	// Secret.
	signer := tokenClient(t, admin, adminCfg, "csr-signing-controller")
	refusals = map[string]error{}
	_, refusals["approve a CSR"] = signer.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, issued.Name, issued, metav1.UpdateOptions{})
	_, refusals["list kube-system's Secrets"] = signer.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	_, refusals["read a Secret"] = signer.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+id, metav1.GetOptions{})
	for what, err := range refusals {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the signer may %s: %v, want Forbidden", what, err)
		}
	}

	// No token's secret reaches the audit log or the server's output.
	audit, err := os.ReadFile(c.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secret, "0123456789abcdef"} {
		if strings.Contains(string(audit), s) || strings.Contains(c.Output(), s) {
			t.Errorf("a token's secret is in the audit log or the server's output")
		}
	}
}
