package apiserver

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/etcd/etcdtest"
	"github.com/trustplane/trustplane/pki"
)

func TestAuditOptionsRefuseBadValues(t *testing.T) {
	if err := DefaultAuditOptions().validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	err := AuditOptions{MaxAge: -1, MaxBackup: -1, MaxSize: 0, Webhook: audit.WebhookConfig{KubeconfigFile: "hook.conf"}}.validate()
	for _, want := range []string{"--audit-log-maxage -1", "--audit-log-maxbackup -1", "--audit-log-maxsize 0", "audit webhook buffer size 0", "audit webhook batch wait 0s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want one naming %s", err, want)
		}
	}
	r := DefaultAuditOptions().rotation()
	if r.MaxSize != 100<<20 || r.MaxBackups != 10 || r.MaxAge.Hours() != 30*24 || !r.Compress {
		t.Errorf("the defaults rotate as %+v, want 100 MiB, 10 files, 30 days, compressed", r)
	}
}

// auditSigner is the test cluster's audit key, and its verifier.
func auditSigner(t testing.TB, e *etcdtest.Etcd) (note.Signer, note.Verifiers) {
	t.Helper()
	if _, err := audit.EnsureSigningKey(e.PKI.Dir); err != nil {
		t.Fatal(err)
	}
	s, err := audit.LoadSigner(e.PKI.Dir)
	if err != nil {
		t.Fatal(err)
	}
	v, err := audit.LoadVerifier(filepath.Join(e.PKI.Dir, audit.VerifierKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	return s, note.VerifierList(v)
}

// The server's requests, through a log that rotates every few events,
// verify as one chain across the compressed files.
func TestServerAuditLogRotates(t *testing.T) {
	e := etcdtest.Start(t)
	signer, verifiers := auditSigner(t, e)
	dir := filepath.Join(t.TempDir(), "audit")
	w, err := audit.OpenRotatingWriter(filepath.Join(dir, "audit.log"), signer, 0, audit.Rotation{MaxSize: 8 << 10, Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerOn(t, e, func(c *Config) { c.AuditSink = w })
	cs := ts.clientset(t, admin)
	for i := range 60 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": strings.Repeat("v", 100)}}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(testContext(t), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := audit.LogFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("files %v, want the log rotated three times or more", files)
	}
	for _, f := range files[:len(files)-1] {
		if !strings.HasSuffix(f, ".gz") {
			t.Errorf("rotated file %s is not compressed", f)
		}
	}
	v, err := audit.Verify(files, verifiers)
	if err != nil {
		t.Fatal(err)
	}
	if v.Finding != nil || v.Events < 60 || v.Signed != v.Events {
		t.Errorf("got %v, %d events, %d signed; want no finding, 60 events or more, all signed", v.Finding, v.Events, v.Signed)
	}
}

// An audit log that cannot be written refuses every request: the real
// writer on /dev/full, where every write fails as on a full disk.
func TestUnwritableAuditLogRefusesRequests(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	e := etcdtest.Start(t)
	signer, _ := auditSigner(t, e)
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
	w, err := audit.OpenWriter(path, signer, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	ts := startServerOn(t, e, func(c *Config) { c.AuditSink = w })
	cs := ts.clientset(t, admin)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unaudited"}}
	_, err = cs.CoreV1().ConfigMaps("default").Create(testContext(t), cm, metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) {
		t.Fatalf("create with the audit log on a full disk: %v, want an internal error", err)
	}
	if strings.Contains(err.Error(), "no space") {
		t.Errorf("error %q leaks the internal cause", err)
	}
	if _, err := cs.CoreV1().Namespaces().List(testContext(t), metav1.ListOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("list with the audit log on a full disk: %v, want an internal error", err)
	}
	// Read from the registry: /metrics, audited, is refused too.
	for name, want := range map[string]float64{
		"apiserver_audit_error_total":             2,
		"apiserver_audit_requests_rejected_total": 2,
	} {
		if got := counter(t, ts.server.metrics, name); got < want {
			t.Errorf("%s = %v, want %v or more", name, got, want)
		}
	}
}

// The audit counters, under kube-apiserver's names, on /metrics, which
// RBAC lets the admin read and no one else.
func TestAuditMetrics(t *testing.T) {
	ts := startServer(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "counted"}}
	if _, err := ts.clientset(t, admin).CoreV1().ConfigMaps("default").Create(testContext(t), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := ts.httpClient(t, admin).Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics as admin: %d %s", resp.StatusCode, body)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^apiserver_audit_event_total [1-9]`),
		regexp.MustCompile(`(?m)^apiserver_audit_error_total\{plugin="log"\} 0$`),
		regexp.MustCompile(`(?m)^apiserver_audit_requests_rejected_total 0$`),
	} {
		if !want.Match(body) {
			t.Errorf("/metrics does not match %s:\n%s", want, body)
		}
	}
	resp, err = ts.httpClient(t, &identity{user: "alice"}).Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET /metrics as alice: %d, want 403", resp.StatusCode)
	}
}

// counter is the sum of a counter's series in reg.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// With a webhook that stops answering, its buffer fills and requests are
// refused, counted under the webhook's plugin label; once it answers, the
// events buffered reach it, over mutual TLS.
func TestAuditWebhookFullBufferRefusesRequests(t *testing.T) {
	e := etcdtest.Start(t)
	signer, _ := auditSigner(t, e)
	gate := make(chan struct{})
	var mu sync.Mutex
	received := 0
	kubeconfig := startAuditWebhook(t, e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-gate
		var list auditv1.EventList
		if err := json.NewDecoder(r.Body).Decode(&list); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		received += len(list.Items)
		mu.Unlock()
	}))

	o := DefaultAuditOptions()
	o.Webhook.KubeconfigFile = kubeconfig
	o.Webhook.BufferSize, o.Webhook.MaxBatchSize = 2, 1
	o.Webhook.InitialBackoff, o.Webhook.MaxBackoff = time.Millisecond, 10*time.Millisecond
	sink, closeAudit, err := o.open(filepath.Join(t.TempDir(), "audit.log"), signer, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := closeAudit(); err != nil {
			t.Error(err)
		}
	})
	ts := startServerOn(t, e, func(c *Config) { c.AuditSink = sink })
	cs := ts.clientset(t, admin)
	refused := false
	for i := range 10 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}
		_, err := cs.CoreV1().ConfigMaps("default").Create(testContext(t), cm, metav1.CreateOptions{})
		if apierrors.IsInternalError(err) {
			refused = true
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !refused {
		t.Fatal("10 creates with the webhook's buffer of 2 stuck: none refused")
	}
	if got := webhookErrors(t, ts.server.metrics); got < 1 {
		t.Errorf(`apiserver_audit_error_total{plugin="webhook"} = %v, want 1 or more`, got)
	}
	close(gate)
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := received
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the webhook received nothing once it answered")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func webhookErrors(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if f.GetName() == "apiserver_audit_error_total" && l.GetName() == "plugin" && l.GetValue() == audit.WebhookPlugin {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// startAuditWebhook serves h as an audit webhook over mutual TLS, its
// certificate and the API server's from e's cluster CA, until the test
// ends, and returns the path of its kubeconfig.
func startAuditWebhook(t *testing.T, e *etcdtest.Etcd, h http.Handler) string {
	t.Helper()
	ca := e.PKI.ClusterCA
	hook := httptest.NewUnstartedServer(h)
	serverCert, serverKey, err := ca.Issue(pki.Request{CommonName: "webhook", Hosts: []string{"127.0.0.1"}, Profile: pki.Server, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(serverCert, serverKey)
	if err != nil {
		t.Fatal(err)
	}
	hook.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert}
	hook.StartTLS()
	t.Cleanup(hook.Close)
	clientCert, clientKey, err := ca.Issue(pki.Request{CommonName: "apiserver", Profile: pki.Client, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["webhook"] = &clientcmdapi.Cluster{Server: hook.URL, CertificateAuthorityData: ca.CertPEM}
	kc.AuthInfos["apiserver"] = &clientcmdapi.AuthInfo{ClientCertificateData: clientCert, ClientKeyData: clientKey}
	kc.Contexts["webhook"] = &clientcmdapi.Context{Cluster: "webhook", AuthInfo: "apiserver"}
	kc.CurrentContext = "webhook"
	kubeconfig := filepath.Join(t.TempDir(), "webhook.conf")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}
