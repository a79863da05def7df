package apiserver

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/trustplane/trustplane/apiserver/filters"
	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/pki"
)

// handshake dials the server with cfg and completes a request, returning
// the first error.
func handshake(ts *testServer, cfg *tls.Config) error {
	tr := &http.Transport{TLSClientConfig: cfg}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(ts.url + "/livez")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func TestTLSRefusals(t *testing.T) {
	ts := startServer(t)
	foreignCertPEM, foreignKeyPEM, err := pki.NewCA("foreign-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := pki.ParseCA(foreignCertPEM, foreignKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(ca *pki.CA, r pki.Request) tls.Certificate {
		r.Validity = time.Hour
		certPEM, keyPEM, err := ca.Issue(r)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return pair
	}
	roots := ts.etcd.PKI.ClusterCA.Pool()
	// Go's client only offers a certificate the server's CA list names;
	// an attacker offers it anyway.
	force := func(c tls.Certificate) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	}
	tests := []struct {
		name   string
		cfg    *tls.Config
		refuse bool
	}{
		{"no client certificate", &tls.Config{RootCAs: roots}, false},
		{"TLS 1.3", &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS13}, false},
		{"TLS 1.2", &tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS12}, false},
		{"TLS 1.1", &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}, true},
		{"TLS 1.2 without forward secrecy", &tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_GCM_SHA256}}, true},
		{"TLS 1.2 with CBC", &tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}}, true},
		{"admin name from a foreign CA", &tls.Config{RootCAs: roots, GetClientCertificate: force(issue(foreign, pki.Request{CommonName: "admin", Organizations: []string{"trustplane:cluster-admins"}, Profile: pki.Client}))}, true},
		{"server-only certificate as a client", &tls.Config{RootCAs: roots, GetClientCertificate: force(issue(ts.etcd.PKI.ClusterCA, pki.Request{CommonName: "admin", Organizations: []string{"trustplane:cluster-admins"}, Hosts: []string{"localhost"}, Profile: pki.Server}))}, true},
		{"etcd CA client certificate", &tls.Config{RootCAs: roots, GetClientCertificate: force(issue(ts.etcd.PKI.EtcdCA, pki.Request{CommonName: "admin", Organizations: []string{"trustplane:cluster-admins"}, Profile: pki.Client}))}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := handshake(ts, tt.cfg)
			if tt.refuse && err == nil {
				t.Error("accepted, want the handshake refused")
			}
			if !tt.refuse && err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
}

func TestAuthenticationAndAuthorizationRefusals(t *testing.T) {
	ts := startServer(t)
	ctx := testContext(t)
	anonymous := ts.httpClient(t, nil)
	for _, path := range []string{"/api/v1/namespaces", "/api", "/version", "/api/v1/namespaces/default/secrets"} {
		resp, err := anonymous.Get(ts.url + path)
		if err != nil {
			t.Fatal(err)
		}
		if st := statusOf(t, resp); resp.StatusCode != http.StatusUnauthorized || st.Reason != metav1.StatusReasonUnauthorized {
			t.Errorf("GET %s without credentials: %d %s, want 401", path, resp.StatusCode, st.Reason)
		}
	}
	for _, path := range []string{"/livez", "/readyz", "/healthz"} {
		resp, err := anonymous.Get(ts.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s without credentials: %d, want 200", path, resp.StatusCode)
		}
		// Audited at level None, and still given an audit ID, as kube does.
		if resp.Header.Get(filters.AuditIDHeader) == "" {
			t.Errorf("GET %s: no Audit-Id header", path)
		}
	}
	// A bearer token no authenticator knows is refused: it never makes a
	// request anonymous.
	req, _ := http.NewRequest(http.MethodGet, ts.url+"/api/v1/namespaces", nil)
	req.Header.Set("Authorization", "Bearer forged")
	resp, err := anonymous.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if statusOf(t, resp); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unknown bearer token: %d, want 401", resp.StatusCode)
	}

	sched := ts.clientset(t, scheduler)
	_, err = sched.CoreV1().Secrets("default").Get(ctx, "any", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("scheduler get secret: %v, want Forbidden", err)
	}
	want := `secrets "any" is forbidden: User "system:kube-scheduler" cannot get resource "secrets" in API group "" in the namespace "default"`
	if err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
	if _, err := sched.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("scheduler list secrets: %v, want Forbidden", err)
	}
	if _, err := sched.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("scheduler list namespaces: %v", err)
	}
	cm := ts.clientset(t, &identity{user: "system:kube-controller-manager"})
	if _, err := cm.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("controller-manager list secrets: %v, want Forbidden", err)
	}
	// system:masters means nothing here.
	masters := ts.clientset(t, &identity{user: "mallory", groups: []string{"system:masters"}})
	if _, err := masters.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("system:masters list secrets: %v, want Forbidden", err)
	}
}

func TestSecretsCiphertextInEtcd(t *testing.T) {
	ts := startServer(t)
	ctx := testContext(t)
	const value = "correct-horse-battery-staple"
	cs := ts.clientset(t, admin)
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Data: map[string][]byte{"password": []byte(value)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	raw, err := ts.etcd.Client(t).Get(ctx, storage.Key(schema.GroupResource{Resource: "secrets"}, "default", "db"))
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatalf("raw read: %v %v", raw, err)
	}
	v := raw.Kvs[0].Value
	if !bytes.HasPrefix(v, []byte("k8s:enc:aesgcm:v1:key1:")) {
		t.Errorf("stored value starts %q, want k8s:enc:aesgcm:v1:key1:", v[:min(24, len(v))])
	}
	for _, leak := range []string{value, base64.StdEncoding.EncodeToString([]byte(value)), "password"} {
		if bytes.Contains(v, []byte(leak)) {
			t.Errorf("stored value contains %q", leak)
		}
	}
	got, err := cs.CoreV1().Secrets("default").Get(ctx, "db", metav1.GetOptions{})
	if err != nil || string(got.Data["password"]) != value {
		t.Errorf("read back: %v %v", got, err)
	}
}

func readAuditLog(t *testing.T, path string) []auditv1.Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var events []auditv1.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit line is not an event: %v: %q", err, sc.Text())
		}
		events = append(events, ev)
	}
	return events
}

func TestAuditOneEventPerRequest(t *testing.T) {
	ts := startServer(t)
	ctx := testContext(t)
	const value = "s3cr3t-value-for-audit"
	before := len(readAuditLog(t, ts.auditLog))

	cs := ts.clientset(t, admin)
	// 1: create secret (201), 2: get it (200), 3: create configmap (201),
	// 4: scheduler get secret (403), 5: anonymous list (401),
	// 6: anonymous /livez (policy None: no event).
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "a"}, StringData: map[string]string{"k": value}, Data: map[string][]byte{"k2": []byte(value)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("default").Get(ctx, "a", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "visible"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.clientset(t, scheduler).CoreV1().Secrets("default").Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatal(err)
	}
	anonymous := ts.httpClient(t, nil)
	for _, path := range []string{"/api/v1/namespaces", "/livez"} {
		resp, err := anonymous.Get(ts.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	events := readAuditLog(t, ts.auditLog)[before:]
	type summary struct {
		verb, resource, user, decision string
		code                           int32
		level                          auditv1.Level
	}
	var got []summary
	for _, ev := range events {
		s := summary{verb: ev.Verb, user: ev.User.Username, decision: ev.Annotations[filters.DecisionAnnotation], code: ev.ResponseStatus.Code, level: ev.Level}
		if ev.ObjectRef != nil {
			s.resource = ev.ObjectRef.Resource
		}
		if ev.Stage != auditv1.StageResponseComplete || ev.AuditID == "" || ev.RequestReceivedTimestamp.IsZero() {
			t.Errorf("incomplete event %+v", ev)
		}
		got = append(got, s)
	}
	want := []summary{
		{"create", "secrets", "admin", "allow", 201, auditv1.LevelMetadata},
		{"get", "secrets", "admin", "allow", 200, auditv1.LevelMetadata},
		{"create", "configmaps", "admin", "allow", 201, auditv1.LevelMetadata},
		{"get", "clusterroles", "admin", "allow", 200, auditv1.LevelRequest},
		{"get", "secrets", "system:kube-scheduler", "forbid", 403, auditv1.LevelMetadata},
		{"list", "namespaces", "", "", 401, auditv1.LevelRequest},
	}
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if reason := events[0].Annotations[filters.ReasonAnnotation]; !strings.Contains(reason, `ClusterRoleBinding "trustplane:cluster-admins"`) {
		t.Errorf("allow reason %q does not name the binding", reason)
	}
	data, _ := os.ReadFile(ts.auditLog)
	for _, leak := range []string{value, base64.StdEncoding.EncodeToString([]byte(value))} {
		if bytes.Contains(data, []byte(leak)) {
			t.Errorf("audit log contains the secret value %q", leak)
		}
	}
}

// failingSink loses every event.
type failingSink struct{}

func (failingSink) Write(*auditv1.Event) error { return errors.New("disk full") }

func TestAuditFailureRefusesRequest(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AuditSink = failingSink{} })
	_, err := ts.clientset(t, admin).CoreV1().Namespaces().List(testContext(t), metav1.ListOptions{})
	if !apierrors.IsInternalError(err) {
		t.Fatalf("list with a failing audit log: %v, want an internal error", err)
	}
	if strings.Contains(err.Error(), "disk full") {
		t.Errorf("error %q leaks the internal cause", err)
	}
}

func TestNewRefusesIncompleteConfig(t *testing.T) {
	_, err := New(Config{})
	if err == nil {
		t.Fatal("empty config accepted")
	}
	for _, want := range []string{"serving certificate", "client CA", "etcd client", "secrets", "audit policy", "audit sink", "logger"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}
