package filters

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trustplane/trustplane/audit"
)

// newAuditor is the Auditor of the default policy, writing to sink.
func newAuditor(t *testing.T, sink AuditSink) (*Auditor, *bytes.Buffer) {
	t.Helper()
	policy, err := audit.ParsePolicy([]byte(audit.DefaultPolicy))
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := audit.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	logger, log := newLogger()
	return NewAuditor(policy, sink, metrics, logger), log
}

// orderRecorder is a ResponseRecorder that notes how many events the sink
// held when the response's header went out.
type orderRecorder struct {
	*httptest.ResponseRecorder
	sink           *memSink
	eventsAtHeader int // -1 until the header goes out
}

func (o *orderRecorder) noteHeader() {
	if o.eventsAtHeader < 0 {
		o.eventsAtHeader = len(o.sink.Events())
	}
}

func (o *orderRecorder) WriteHeader(code int) {
	o.noteHeader()
	o.ResponseRecorder.WriteHeader(code)
}

func (o *orderRecorder) Write(p []byte) (int, error) {
	o.noteHeader()
	return o.ResponseRecorder.Write(p)
}

func (o *orderRecorder) Flush() {
	o.noteHeader()
	o.ResponseRecorder.Flush()
}

// eventSummary is what an audit event says of a request.
type eventSummary struct {
	stage            auditv1.Stage
	level            auditv1.Level
	verb, user, what string
	code             int32
	reason           metav1.StatusReason
}

func summarize(ev *auditv1.Event) eventSummary {
	s := eventSummary{stage: ev.Stage, level: ev.Level, verb: ev.Verb, user: ev.User.Username}
	if ref := ev.ObjectRef; ref != nil {
		s.what = ref.APIGroup + "/" + ref.APIVersion + " " + ref.Resource + " " + ref.Namespace + "/" + ref.Name
	}
	if st := ev.ResponseStatus; st != nil {
		s.code, s.reason = st.Code, st.Reason
	}
	return s
}

// checkEvent asserts that events is the one event want, under the Audit-Id
// of the response header h, or none when want is nil; it returns that
// Audit-Id.
func checkEvent(t *testing.T, h http.Header, events []*auditv1.Event, want *eventSummary) string {
	t.Helper()
	id := h.Get(AuditIDHeader)
	switch {
	case want == nil:
		if len(events) > 0 {
			t.Errorf("%d events, want none: %+v", len(events), summarize(events[0]))
		}
	case len(events) != 1:
		t.Errorf("%d events, want one: %+v", len(events), *want)
	case summarize(events[0]) != *want:
		t.Errorf("event %+v, want %+v", summarize(events[0]), *want)
	case id == "" || string(events[0].AuditID) != id:
		t.Errorf("Audit-Id header %q, event's AuditID %q; want them equal", id, events[0].AuditID)
	}
	return id
}

// TestAudit serves requests through the audit filter to a handler that
// sets a header and writes a body, and checks what the client got against
// what the sink holds: one event, written before the first byte, under the
// ID the response names; or, when the sink fails, a 500 and nothing of the
// handler's.
func TestAudit(t *testing.T) {
	const (
		refused = "Internal error occurred: the audit log cannot be written"
		full    = "disk full: /var/log/trustplane/audit.log"
	)
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	for _, tt := range []struct {
		name           string
		method, target string
		// failedAuthn serves the request as one whose authentication
		// failed, with no user: through WithFailedAuthenticationAudit.
		failedAuthn bool
		sinkErr     error
		// wantMessage is the Status the client gets with wantCode, or ""
		// for the handler's body.
		wantCode     int
		wantMessage  string
		wantWriteErr error
		// wantEvent is the one event written, or nil for none.
		wantEvent *eventSummary
	}{
		{
			name: "a get", method: "GET", target: "/api/v1/namespaces/ns/configmaps/c",
			wantCode:  200,
			wantEvent: &eventSummary{auditv1.StageResponseComplete, auditv1.LevelMetadata, "get", "alice", "/v1 configmaps ns/c", 200, ""},
		},
		{
			name: "a create", method: "POST", target: "/apis/apps/v1/namespaces/ns/deployments",
			wantCode:  200,
			wantEvent: &eventSummary{auditv1.StageResponseComplete, auditv1.LevelRequestResponse, "create", "alice", "apps/v1 deployments ns/", 200, ""},
		},
		{
			name: "a get, the sink failing", method: "GET", target: "/api/v1/namespaces/ns/configmaps/c", sinkErr: errors.New(full),
			wantCode: 500, wantMessage: refused,
		},
		{
			name: "a watch", method: "GET", target: "/api/v1/namespaces/ns/pods?watch=true",
			wantCode:  200,
			wantEvent: &eventSummary{auditv1.StageResponseStarted, auditv1.LevelRequest, "watch", "alice", "/v1 pods ns/", 200, ""},
		},
		{
			name: "a watch, the sink failing", method: "GET", target: "/api/v1/namespaces/ns/pods?watch=true", sinkErr: errors.New(full),
			wantCode: 500, wantMessage: refused, wantWriteErr: errAuditUnavailable,
		},
		{
			name: "a health probe", method: "GET", target: "/livez",
			wantCode: 200,
		},
		{
			// A request the policy does not audit needs no sink.
			name: "a health probe, the sink failing", method: "GET", target: "/livez", sinkErr: errors.New(full),
			wantCode: 200,
		},
		{
			name: "a failed authentication", method: "GET", target: "/api/v1/namespaces", failedAuthn: true,
			wantCode: 401, wantMessage: "Unauthorized",
			wantEvent: &eventSummary{auditv1.StageResponseComplete, auditv1.LevelRequest, "list", "", "/v1 namespaces /", 401, metav1.StatusReasonUnauthorized},
		},
		{
			name: "a failed authentication, the sink failing", method: "GET", target: "/api/v1/namespaces", failedAuthn: true, sinkErr: errors.New(full),
			wantCode: 500, wantMessage: refused,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sink := &memSink{err: tt.sinkErr}
			a, log := newAuditor(t, sink)
			var writeErr error
			h := WithAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Handler", "yes")
				w.WriteHeader(http.StatusOK)
				_, writeErr = w.Write([]byte("handler-body"))
			}), a)
			var u user.Info = alice
			if tt.failedAuthn {
				h, u = WithFailedAuthenticationAudit(a), nil
			}
			r := newRequest(t, tt.method, tt.target, u)
			// A client's own Audit-Id would let it name another event.
			r.Header.Set(AuditIDHeader, "forged")
			rec := &orderRecorder{ResponseRecorder: httptest.NewRecorder(), sink: sink, eventsAtHeader: -1}
			h.ServeHTTP(rec, r)

			// The client gets all of the handler's answer, or none of it.
			wantHeader := ""
			if tt.wantMessage == "" {
				wantHeader = "yes"
				if rec.Code != tt.wantCode || rec.Body.String() != "handler-body" {
					t.Errorf("answered %d %q, want %d %q", rec.Code, rec.Body, tt.wantCode, "handler-body")
				}
			} else {
				checkRefusal(t, rec.ResponseRecorder, tt.wantCode, tt.wantMessage)
			}
			if got := rec.Header().Get("X-Handler"); got != wantHeader {
				t.Errorf("X-Handler header %q, want %q", got, wantHeader)
			}
			if !errors.Is(writeErr, tt.wantWriteErr) {
				t.Errorf("the handler's write: %v, want %v", writeErr, tt.wantWriteErr)
			}
			if strings.Contains(rec.Body.String(), "disk full") {
				t.Errorf("the client got the sink's error: %s", rec.Body)
			}

			events := sink.Events()
			id := checkEvent(t, rec.Header(), events, tt.wantEvent)
			// An event written after the header went out would let a
			// response go unaudited.
			if rec.eventsAtHeader != len(events) {
				t.Errorf("%d events written when the header went out, want %d", rec.eventsAtHeader, len(events))
			}
			if id == "forged" {
				t.Error("the response kept the client's Audit-Id")
			}
			if tt.wantCode == http.StatusInternalServerError {
				if id != "" {
					t.Errorf("Audit-Id %q names an event that was not written", id)
				}
				if !strings.Contains(log.String(), full) {
					t.Errorf("the log lacks the sink's error: %s", log)
				}
			}
		})
	}
}

// A handler's panic goes on to the recovery filter, which answers 500.
// The audit filter records that answer, unless the response had started
// and so was audited already, and the handler's headers do not go out
// with it.
func TestAuditPanic(t *testing.T) {
	const recovered = "Internal error occurred: an internal error occurred; see the server log"
	for _, tt := range []struct {
		name, target string
		// started has the handler send its header and a frame before it
		// panics.
		started   bool
		sinkErr   error
		wantCode  int
		wantEvent *eventSummary
	}{
		{
			name: "a get", target: "/api/v1/namespaces/ns/configmaps/c", wantCode: 500,
			wantEvent: &eventSummary{auditv1.StagePanic, auditv1.LevelMetadata, "get", "alice", "/v1 configmaps ns/c", 500, ""},
		},
		{
			name: "a get, the sink failing", target: "/api/v1/namespaces/ns/configmaps/c", sinkErr: errors.New("disk full"), wantCode: 500,
		},
		{
			name: "a watch before its response starts", target: "/api/v1/namespaces/ns/pods?watch=true", wantCode: 500,
			wantEvent: &eventSummary{auditv1.StagePanic, auditv1.LevelRequest, "watch", "alice", "/v1 pods ns/", 500, ""},
		},
		{
			name: "a watch after its response started", target: "/api/v1/namespaces/ns/pods?watch=true", started: true, wantCode: 200,
			wantEvent: &eventSummary{auditv1.StageResponseStarted, auditv1.LevelRequest, "watch", "alice", "/v1 pods ns/", 200, ""},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sink := &memSink{err: tt.sinkErr}
			a, _ := newAuditor(t, sink)
			logger, log := newLogger()
			h := WithRecovery(WithAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Handler", "yes")
				if tt.started {
					w.Write([]byte("frame"))
				}
				panic("handler bug")
			}), a), logger)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, newRequest(t, "GET", tt.target, &user.DefaultInfo{Name: "alice"}))

			if tt.wantCode == http.StatusInternalServerError {
				checkRefusal(t, rec, tt.wantCode, recovered)
				if got := rec.Header().Get("X-Handler"); got != "" {
					t.Errorf("X-Handler header %q went out with the 500", got)
				}
			} else if rec.Code != tt.wantCode {
				t.Errorf("code %d, want %d", rec.Code, tt.wantCode)
			}
			if id := checkEvent(t, rec.Header(), sink.Events(), tt.wantEvent); tt.wantEvent == nil && id != "" {
				t.Errorf("Audit-Id %q names an event that was not written", id)
			}
			// Passing the panic on must keep where it happened.
			if !strings.Contains(log.String(), "TestAuditPanic") {
				t.Errorf("the logged stack lacks the handler: %s", log)
			}
		})
	}
}
