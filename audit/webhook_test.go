package audit

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/trustplane/trustplane/pki"
)

// sink is a webhook over mutual TLS that records the batches it accepts.
type sink struct {
	srv        *httptest.Server
	kubeconfig string // with a client certificate
	anonymous  string // without one

	mu      sync.Mutex
	batches [][]string // the events' object names
	fail    int        // POSTs still to answer 503
	gate    chan struct{}
}

func startSink(t *testing.T) *sink {
	t.Helper()
	caPEM, caKey, err := pki.NewCA("webhook-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.ParseCA(caPEM, caKey)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(r pki.Request) tls.Certificate {
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
	s := &sink{}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{issue(pki.Request{CommonName: "webhook", Hosts: []string{"127.0.0.1"}, Profile: pki.Server, Validity: time.Hour})},
		ClientCAs:    ca.Pool(),
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	clientCert, clientKey, err := ca.Issue(pki.Request{CommonName: "apiserver", Profile: pki.Client, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, withCert bool) string {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["webhook"] = &clientcmdapi.Cluster{Server: s.srv.URL, CertificateAuthorityData: caPEM}
		user := &clientcmdapi.AuthInfo{}
		if withCert {
			user.ClientCertificateData, user.ClientKeyData = clientCert, clientKey
		}
		cfg.AuthInfos["apiserver"] = user
		cfg.Contexts["webhook"] = &clientcmdapi.Context{Cluster: "webhook", AuthInfo: "apiserver"}
		cfg.CurrentContext = "webhook"
		path := filepath.Join(t.TempDir(), name)
		if err := clientcmd.WriteToFile(*cfg, path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	s.kubeconfig, s.anonymous = write("webhook.conf", true), write("anonymous.conf", false)
	return s
}

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	if s.gate != nil {
		<-s.gate
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	var list auditv1.EventList
	if err := json.Unmarshal(body, &list); err != nil || list.Kind != "EventList" {
		http.Error(w, "not an EventList", http.StatusBadRequest)
		return
	}
	var names []string
	for _, ev := range list.Items {
		names = append(names, ev.ObjectRef.Name)
	}
	s.batches = append(s.batches, names)
}

func (s *sink) received() (events []string, batches int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.batches {
		events = append(events, b...)
	}
	return events, len(s.batches)
}

func testWebhookConfig(kubeconfig string) WebhookConfig {
	c := DefaultWebhookConfig()
	c.KubeconfigFile = kubeconfig
	c.MaxBatchSize = 5
	c.MaxBatchWait = 10 * time.Millisecond
	c.InitialBackoff = time.Millisecond
	c.MaxBackoff = 10 * time.Millisecond
	return c
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// Events go in batches over mutual TLS, in order, retried past failures.
func TestWebhookDeliversInBatchesWithRetries(t *testing.T) {
	s := startSink(t)
	s.fail = 2
	w, err := NewWebhook(testWebhookConfig(s.kubeconfig), discard)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if err := w.Write(testEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Close sends what is left; every batch was retried until accepted.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, batches := s.received()
	if len(got) != 12 {
		t.Fatalf("received %v, want s0 to s11", got)
	}
	for i, name := range got {
		if want := testEvent(i).ObjectRef.Name; name != want {
			t.Errorf("event %d is %s, want %s", i, name, want)
		}
	}
	if batches < 3 {
		t.Errorf("%d batches, want 3 or more of at most 5", batches)
	}
	if s.fail != 0 {
		t.Errorf("%d failures left unanswered: no retry", s.fail)
	}
	if err := w.Write(testEvent(0)); err == nil {
		t.Error("a write after Close succeeded")
	}
}

// A client without its certificate is refused by the webhook: nothing is
// delivered, and Close says so.
func TestWebhookNeedsItsClientCertificate(t *testing.T) {
	s := startSink(t)
	cfg := testWebhookConfig(s.anonymous)
	cfg.Timeout = 100 * time.Millisecond // how long Close tries
	w, err := NewWebhook(cfg, discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(testEvent(1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil {
		t.Error("Close: no error, want the event reported undelivered")
	}
	if got, _ := s.received(); len(got) != 0 {
		t.Errorf("received %v without a client certificate", got)
	}
}

// A webhook that does not answer fills the buffer, and then Write fails:
// the request would be refused, never answered unaudited.
func TestWebhookFullBufferRefuses(t *testing.T) {
	s := startSink(t)
	s.gate = make(chan struct{})
	cfg := testWebhookConfig(s.kubeconfig)
	cfg.BufferSize, cfg.MaxBatchSize = 3, 1
	w, err := NewWebhook(cfg, discard)
	if err != nil {
		t.Fatal(err)
	}
	accepted := writeUntilFull(t, w, 0)
	// The buffer's 3, and the one or two the loop has taken out of it.
	if accepted < 3 || accepted > 5 {
		t.Fatalf("%d events accepted before the buffer was full, want 3 to 5", accepted)
	}
	close(s.gate)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.received(); len(got) != accepted {
		t.Errorf("received %d events, want the %d accepted", len(got), accepted)
	}
}

// In the blocking modes, Write returns once its event is delivered, and
// fails when it cannot be: the webhook refusing past Timeout, or hanging.
func TestWebhookBlocking(t *testing.T) {
	for _, mode := range []string{ModeBlocking, ModeBlockingStrict} {
		t.Run(mode, func(t *testing.T) {
			s := startSink(t)
			cfg := testWebhookConfig(s.kubeconfig)
			cfg.Mode = mode
			cfg.Timeout = 200 * time.Millisecond
			w, err := NewWebhook(cfg, discard)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close() })
			s.fail = 2 // retried within Timeout
			for i := range 3 {
				if err := w.Write(testEvent(i)); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				// Delivered before Write returned, alone.
				if got, batches := s.received(); len(got) != i+1 || batches != i+1 || got[i] != testEvent(i).ObjectRef.Name {
					t.Fatalf("after Write of event %d the webhook holds %v in %d batches", i, got, batches)
				}
			}
			s.mu.Lock()
			s.fail = 1 << 30
			s.mu.Unlock()
			if err := w.Write(testEvent(3)); err == nil {
				t.Error("Write to a webhook that refuses everything succeeded")
			}
			hung := startSink(t)
			hung.gate = make(chan struct{})
			// After the server's Close, which waits for its handlers.
			t.Cleanup(func() { close(hung.gate) })
			cfg.KubeconfigFile = hung.kubeconfig
			wh, err := NewWebhook(cfg, discard)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { wh.Close() })
			if err := wh.Write(testEvent(4)); err == nil {
				t.Error("Write to a webhook that does not answer succeeded")
			}
		})
	}
}

// Throttled, batches wait for their turn in the buffer, which fills: with
// one batch allowed and the next not before long, the webhook holds one
// batch when Write finds the buffer full. Close sends the rest at once.
func TestWebhookThrottle(t *testing.T) {
	s := startSink(t)
	cfg := testWebhookConfig(s.kubeconfig)
	cfg.BufferSize, cfg.MaxBatchSize = 2, 1
	cfg.ThrottleEnable, cfg.ThrottleQPS, cfg.ThrottleBurst = true, 0.001, 1
	w, err := NewWebhook(cfg, discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(testEvent(0)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for got, _ := s.received(); len(got) == 0; got, _ = s.received() {
		if time.Now().After(deadline) {
			t.Fatal("the first batch was not sent")
		}
		time.Sleep(time.Millisecond)
	}
	accepted := 1 + writeUntilFull(t, w, 1)
	if _, batches := s.received(); batches != 1 || accepted > 4 {
		t.Errorf("%d batches sent and %d events accepted when the buffer was full, want 1 batch, 4 events at most", batches, accepted)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.received(); len(got) != accepted {
		t.Errorf("received %d events, want the %d accepted", len(got), accepted)
	}
}

func TestWebhookConfigRefusesBadModeAndThrottle(t *testing.T) {
	cfg := testWebhookConfig("hook.conf")
	cfg.Mode = "sync"
	cfg.ThrottleQPS = 0
	err := cfg.Validate()
	for _, want := range []string{`mode "sync"`, "throttle of 0 a second"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want one naming %s", err, want)
		}
	}
}

// writeUntilFull writes the test events from `from` to 9 until the
// buffer is full, and returns how many were accepted.
func writeUntilFull(t *testing.T, w *Webhook, from int) int {
	t.Helper()
	accepted := 0
	for i := from; i < 10; i++ {
		err := w.Write(testEvent(i))
		if errors.Is(err, ErrWebhookFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		accepted++
	}
	return accepted
}
