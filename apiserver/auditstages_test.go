package apiserver

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/etcd/etcdtest"
)

// everyStagePolicy records every stage of every request but the health
// probes, RequestReceived included, which the default policy omits.
const everyStagePolicy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n" +
	"- level: None\n  nonResourceURLs: [/readyz, /readyz/*, /livez, /livez/*, /healthz]\n" +
	"- level: Metadata\n"

func withPolicy(t *testing.T, policy string) serverOption {
	t.Helper()
	p, err := audit.ParsePolicy([]byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) { c.AuditPolicy = p }
}

// stagesByID reads the events of log: the stages of each audit ID, in
// order, and the ResponseComplete event's code.
func stagesByID(t *testing.T, files ...string) (stages map[string][]string, codes map[string]int32) {
	t.Helper()
	stages, codes = map[string][]string{}, map[string]int32{}
	err := audit.Query(files, &audit.Filter{}, func(_ []byte, e *audit.Event) error {
		stages[e.AuditID] = append(stages[e.AuditID], e.Stage)
		if e.Stage == string(auditv1.StageResponseComplete) {
			codes[e.AuditID] = e.Code()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return stages, codes
}

// With a policy that omits no stage, a create has its RequestReceived and
// ResponseComplete events and a watch its RequestReceived,
// ResponseStarted and ResponseComplete, each request's under the Audit-Id
// it was answered with; the hash chain and the checkpoints cover them all.
func TestAuditStagesChained(t *testing.T) {
	e := etcdtest.Start(t)
	signer, verifiers := auditSigner(t, e)
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := audit.OpenWriter(path, signer, 3)
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerOn(t, e, withPolicy(t, everyStagePolicy), func(c *Config) { c.AuditSink = w })

	code, createID := postConfigMap(t, ts, "staged")
	if code != http.StatusCreated || createID == "" {
		t.Fatalf("create: %d, Audit-Id %q", code, createID)
	}
	// A watch the server ends after a second: its end comes once its
	// ResponseComplete event is written.
	timeout := int64(1)
	watch, err := ts.clientset(t, admin).CoreV1().ConfigMaps("default").Watch(testContext(t), metav1.ListOptions{TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	for range watch.ResultChan() {
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	stages, codes := stagesByID(t, path)
	if got, want := stages[createID], []string{"RequestReceived", "ResponseComplete"}; !slices.Equal(got, want) || codes[createID] != http.StatusCreated {
		t.Errorf("the create's stages %v, code %d; want %v, 201", got, codes[createID], want)
	}
	watches := 0
	for id, got := range stages {
		if got[0] != "RequestReceived" {
			t.Errorf("request %s: stages %v, want RequestReceived first", id, got)
		}
		if slices.Contains(got, "ResponseStarted") {
			watches++
			if want := []string{"RequestReceived", "ResponseStarted", "ResponseComplete"}; !slices.Equal(got, want) {
				t.Errorf("the watch %s: stages %v, want %v", id, got, want)
			}
		}
	}
	if watches != 1 {
		t.Errorf("%d watches audited, want 1", watches)
	}
	v, err := audit.Verify([]string{path}, verifiers)
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	for _, s := range stages {
		events += len(s)
	}
	if v.Finding != nil || v.Events != int64(events) || v.Signed != v.Events {
		t.Errorf("verify: %v, %d events, %d signed; want no finding, all %d events signed", v.Finding, v.Events, v.Signed, events)
	}
}

// postConfigMap creates the ConfigMap name as admin, and returns the
// response's code and Audit-Id.
func postConfigMap(t *testing.T, ts *testServer, name string) (int, string) {
	t.Helper()
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q}}`, name)
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, ts.url+"/api/v1/namespaces/default/configmaps", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := ts.httpClient(t, admin).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Audit-Id")
}

// hookRecord is what an audit webhook of the tests received: the stages of
// each audit ID.
type hookRecord struct {
	mu     sync.Mutex
	stages map[string][]string
}

func (h *hookRecord) serve(w http.ResponseWriter, r *http.Request) {
	var list auditv1.EventList
	if err := json.NewDecoder(r.Body).Decode(&list); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range list.Items {
		h.stages[string(ev.AuditID)] = append(h.stages[string(ev.AuditID)], string(ev.Stage))
	}
}

func (h *hookRecord) of(id string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.stages[id])
}

// In every --audit-webhook-mode, a webhook that refuses every event (503)
// or hangs past the timeout gets requests refused: no request is answered
// that its events did not reach the webhook (blocking modes) or its buffer
// (batch), and the log; one refused before it was handled (its
// RequestReceived event not kept) was not carried out. In the blocking
// modes, a webhook that answers has a request's events before the client
// has its answer.
func TestAuditWebhookModesFailClosed(t *testing.T) {
	e := etcdtest.Start(t)
	signer, _ := auditSigner(t, e)
	for _, mode := range audit.WebhookModes {
		for _, behaviour := range []string{"refuses", "hangs", "answers"} {
			if mode == audit.ModeBatch && behaviour == "answers" {
				continue // delivered later: TestAuditWebhookFullBufferRefusesRequests
			}
			t.Run(mode+", the webhook "+behaviour, func(t *testing.T) {
				release := make(chan struct{})
				hook := &hookRecord{stages: map[string][]string{}}
				kubeconfig := startAuditWebhook(t, e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					switch behaviour {
					case "refuses":
						http.Error(w, "not now", http.StatusServiceUnavailable)
					case "hangs":
						<-release
					default:
						hook.serve(w, r)
					}
				}))
				// After the webhook's Close, which waits for its handlers.
				t.Cleanup(func() { close(release) })

				o := DefaultAuditOptions()
				o.Webhook.KubeconfigFile = kubeconfig
				o.Webhook.Mode = mode
				o.Webhook.BufferSize, o.Webhook.MaxBatchSize = 2, 1
				o.Webhook.InitialBackoff, o.Webhook.MaxBackoff = time.Millisecond, 10*time.Millisecond
				o.Webhook.Timeout = 300 * time.Millisecond
				logPath := filepath.Join(t.TempDir(), "audit.log")
				sink, closeAudit, err := o.open(logPath, signer, slog.New(slog.NewTextHandler(io.Discard, nil)))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { closeAudit() })
				ts := startServerOn(t, e, withPolicy(t, everyStagePolicy), func(c *Config) { c.AuditSink = sink })
				etcdClient := e.Client(t)

				var acked []string // the Audit-Ids of the creates answered 201
				refused := false
				for i := range 10 {
					name := fmt.Sprintf("%s-%s-%d", mode, behaviour, i)
					code, id := postConfigMap(t, ts, name)
					if code == http.StatusCreated {
						acked = append(acked, id)
						if behaviour == "answers" && mode != audit.ModeBatch {
							if got, want := hook.of(id), []string{"RequestReceived", "ResponseComplete"}; !slices.Equal(got, want) {
								t.Errorf("%s answered 201 with the webhook holding %v of it, want %v", name, got, want)
							}
						}
						continue
					}
					if code != http.StatusInternalServerError {
						t.Fatalf("create %s: %d, want 201 or 500", name, code)
					}
					refused = true
					logged, _ := stagesByID(t, logPath)
					switch {
					case id == "":
						// Refused before it was handled: not carried out.
						// Read from etcd: a request would be refused too.
						resp, err := etcdClient.Get(testContext(t), "/registry/configmaps/default/"+name)
						if err != nil {
							t.Fatal(err)
						}
						if len(resp.Kvs) > 0 {
							t.Errorf("%s, refused with no event kept, was created", name)
						}
						if mode == audit.ModeBlocking {
							t.Errorf("%s refused before it was handled in blocking mode, whose RequestReceived goes to the log alone", name)
						}
					case !slices.Equal(logged[id], []string{"RequestReceived"}):
						t.Errorf("%s refused under Audit-Id %s, whose events in the log are %v; want its RequestReceived", name, id, logged[id])
					case mode == audit.ModeBlockingStrict:
						t.Errorf("%s handled though its RequestReceived was not delivered, in blocking-strict mode", name)
					}
					break
				}
				if behaviour == "answers" {
					if refused || len(acked) != 10 {
						t.Errorf("%d of 10 creates answered with a webhook that answers, want all", len(acked))
					}
				} else {
					if !refused {
						t.Fatal("no create refused")
					}
					if mode != audit.ModeBatch && len(acked) > 0 {
						t.Errorf("%d creates answered 201, though their events could not be delivered", len(acked))
					}
					if got := counter(t, ts.server.metrics, "apiserver_audit_requests_rejected_total"); got < 1 {
						t.Errorf("apiserver_audit_requests_rejected_total = %v, want 1 or more", got)
					}
				}
				// Nothing answered that the log does not hold.
				logged, codes := stagesByID(t, logPath)
				for _, id := range acked {
					if codes[id] != http.StatusCreated || len(logged[id]) == 0 || logged[id][0] != "RequestReceived" {
						t.Errorf("a create answered 201 under Audit-Id %s has the events %v in the log", id, logged[id])
					}
				}
			})
		}
	}
}
