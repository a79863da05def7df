package filters

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trustplane/trustplane/audit"
)

// newAuditor is the Auditor of policy (the default one when ""), writing
// to sink.
func newAuditor(t *testing.T, sink AuditSink, policy string) (*Auditor, *bytes.Buffer) {
	t.Helper()
	if policy == "" {
		policy = audit.DefaultPolicy
	}
	p, err := audit.ParsePolicy([]byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := audit.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	logger, log := newLogger()
	return NewAuditor(p, sink, metrics, logger), log
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

// checkEvents asserts that events are want, in order, all under the
// Audit-Id of the response header h; it returns that Audit-Id.
func checkEvents(t *testing.T, h http.Header, events []*auditv1.Event, want []eventSummary) string {
	t.Helper()
	id := h.Get(AuditIDHeader)
	got := make([]eventSummary, len(events))
	for i, ev := range events {
		got[i] = summarize(ev)
		if string(ev.AuditID) != id {
			t.Errorf("event %d (%s) has AuditID %q, the Audit-Id header %q; want them equal", i, ev.Stage, ev.AuditID, id)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%+v\nwant:\n%+v", got, want)
	}
	return id
}

// TestAudit serves requests through the audit filter to a handler that
// sets a header and writes a body, and checks what the client got against
// what the sink holds: one event per stage the policy records, under the
// ID the response names, all but a watch's ResponseComplete written before
// the first byte; or, when the sink fails, a 500 and nothing of the
// handler's, and the handler not run at all when the RequestReceived event
// failed.
func TestAudit(t *testing.T) {
	const (
		refused = "Internal error occurred: the audit log cannot be written"
		full    = "disk full: /var/log/trustplane/audit.log"
		// everyStage records every stage of every request, at Metadata.
		everyStage = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
		// omitting omits stages by a rule and by the policy.
		omitting = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [ResponseStarted]\nrules:\n" +
			"- level: Metadata\n  verbs: [get]\n  omitStages: [ResponseComplete]\n- level: Metadata\n"
		get      = "/api/v1/namespaces/ns/configmaps/c"
		watch    = "/api/v1/namespaces/ns/pods?watch=true"
		received = auditv1.StageRequestReceived
		started  = auditv1.StageResponseStarted
		complete = auditv1.StageResponseComplete
		meta     = auditv1.LevelMetadata
		cm       = "/v1 configmaps ns/c"
		pods     = "/v1 pods ns/"
	)
	// e is alice's event of stage of a request of verb on what, at level.
	e := func(stage auditv1.Stage, level auditv1.Level, verb, what string, code int32) eventSummary {
		return eventSummary{stage, level, verb, "alice", what, code, ""}
	}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	for _, tt := range []struct {
		name           string
		policy         string
		method, target string
		// failedAuthn serves the request as one whose authentication
		// failed, with no user: through WithFailedAuthenticationAudit.
		failedAuthn bool
		sinkErr     error
		// failStage is the stage whose events the sink fails; "" for all.
		failStage auditv1.Stage
		// wantMessage is the Status the client gets with wantCode, or ""
		// for the handler's body.
		wantCode     int
		wantMessage  string
		wantWriteErr error
		// wantEvents are the events written; wantAtHeader, how many of
		// them were written when the header went out.
		wantEvents   []eventSummary
		wantAtHeader int
		// wantNotServed: the handler must not run.
		wantNotServed bool
	}{
		{
			name: "a get", method: "GET", target: get,
			wantCode:   200,
			wantEvents: []eventSummary{e(complete, meta, "get", cm, 200)}, wantAtHeader: 1,
		},
		{
			name: "a create", method: "POST", target: "/apis/apps/v1/namespaces/ns/deployments",
			wantCode:   200,
			wantEvents: []eventSummary{e(complete, auditv1.LevelRequestResponse, "create", "apps/v1 deployments ns/", 200)}, wantAtHeader: 1,
		},
		{
			name: "a get, the sink failing", method: "GET", target: get, sinkErr: errors.New(full),
			wantCode: 500, wantMessage: refused,
		},
		{
			name: "a watch", method: "GET", target: watch,
			wantCode: 200,
			wantEvents: []eventSummary{
				e(started, auditv1.LevelRequest, "watch", pods, 200),
				e(complete, auditv1.LevelRequest, "watch", pods, 200),
			},
			wantAtHeader: 1,
		},
		{
			name: "a watch, the sink failing", method: "GET", target: watch, sinkErr: errors.New(full),
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
			wantCode:     401,
			wantMessage:  "Unauthorized",
			wantEvents:   []eventSummary{{complete, auditv1.LevelRequest, "list", "", "/v1 namespaces /", 401, metav1.StatusReasonUnauthorized}},
			wantAtHeader: 1,
		},
		{
			name: "a failed authentication, the sink failing", method: "GET", target: "/api/v1/namespaces", failedAuthn: true, sinkErr: errors.New(full),
			wantCode: 500, wantMessage: refused,
		},
		{
			name: "a get, every stage", policy: everyStage, method: "GET", target: get,
			wantCode:     200,
			wantEvents:   []eventSummary{e(received, meta, "get", cm, 0), e(complete, meta, "get", cm, 200)},
			wantAtHeader: 2,
		},
		{
			name: "a watch, every stage", policy: everyStage, method: "GET", target: watch,
			wantCode:     200,
			wantEvents:   []eventSummary{e(received, meta, "watch", pods, 0), e(started, meta, "watch", pods, 200), e(complete, meta, "watch", pods, 200)},
			wantAtHeader: 2,
		},
		{
			// Nothing runs that is not audited.
			name: "a get, RequestReceived failing", policy: everyStage, method: "GET", target: get, sinkErr: errors.New(full), failStage: received,
			wantCode: 500, wantMessage: refused, wantNotServed: true,
		},
		{
			// The Audit-Id of the refusal names the event written.
			name: "a get, ResponseComplete failing", policy: everyStage, method: "GET", target: get, sinkErr: errors.New(full), failStage: complete,
			wantCode: 500, wantMessage: refused,
			wantEvents: []eventSummary{e(received, meta, "get", cm, 0)}, wantAtHeader: 1,
		},
		{
			name: "a watch, ResponseStarted failing", policy: everyStage, method: "GET", target: watch, sinkErr: errors.New(full), failStage: started,
			wantCode: 500, wantMessage: refused, wantWriteErr: errAuditUnavailable,
			wantEvents: []eventSummary{e(received, meta, "watch", pods, 0)}, wantAtHeader: 1,
		},
		{
			// Once the watch has been sent, its end can only be logged.
			name: "a watch, ResponseComplete failing", policy: everyStage, method: "GET", target: watch, sinkErr: errors.New(full), failStage: complete,
			wantCode:     200,
			wantEvents:   []eventSummary{e(received, meta, "watch", pods, 0), e(started, meta, "watch", pods, 200)},
			wantAtHeader: 2,
		},
		{
			name: "a get, ResponseComplete omitted by its rule", policy: omitting, method: "GET", target: get,
			wantCode:   200,
			wantEvents: []eventSummary{e(received, meta, "get", cm, 0)}, wantAtHeader: 1,
		},
		{
			name: "a watch, ResponseStarted omitted by the policy", policy: omitting, method: "GET", target: watch,
			wantCode:   200,
			wantEvents: []eventSummary{e(received, meta, "watch", pods, 0), e(complete, meta, "watch", pods, 200)}, wantAtHeader: 1,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sink := &memSink{err: tt.sinkErr, failStage: tt.failStage}
			a, log := newAuditor(t, sink, tt.policy)
			var writeErr error
			served := false
			h := WithAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				served = true
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
			if tt.wantNotServed && served {
				t.Error("the handler ran though the request's RequestReceived event was not written")
			}
			if strings.Contains(rec.Body.String(), "disk full") {
				t.Errorf("the client got the sink's error: %s", rec.Body)
			}

			events := sink.Events()
			id := checkEvents(t, rec.Header(), events, tt.wantEvents)
			// An event written after the header went out would let a
			// response go unaudited; a watch's ResponseComplete alone
			// comes after.
			if rec.eventsAtHeader != tt.wantAtHeader {
				t.Errorf("%d events written when the header went out, want %d", rec.eventsAtHeader, tt.wantAtHeader)
			}
			if id == "forged" {
				t.Error("the response kept the client's Audit-Id")
			}
			if len(tt.wantEvents) == 0 && tt.wantCode == http.StatusInternalServerError && id != "" {
				t.Errorf("Audit-Id %q names an event that was not written", id)
			}
			if tt.sinkErr != nil && tt.wantCode != 200 || tt.failStage == complete {
				if !strings.Contains(log.String(), full) {
					t.Errorf("the log lacks the sink's error: %s", log)
				}
			}
		})
	}
}

// A handler's panic goes on to the recovery filter, which answers 500.
// The audit filter records that answer with stage Panic, also after a
// watch's response started (as kube-apiserver does), and the handler's
// headers do not go out with a 500.
func TestAuditPanic(t *testing.T) {
	const (
		recovered  = "Internal error occurred: an internal error occurred; see the server log"
		everyStage = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
		get        = "/api/v1/namespaces/ns/configmaps/c"
		watch      = "/api/v1/namespaces/ns/pods?watch=true"
		cm         = "/v1 configmaps ns/c"
		pods       = "/v1 pods ns/"
	)
	e := func(stage auditv1.Stage, level auditv1.Level, verb, what string, code int32) eventSummary {
		return eventSummary{stage, level, verb, "alice", what, code, ""}
	}
	for _, tt := range []struct {
		name, policy, target string
		// started has the handler send its header and a frame before it
		// panics.
		started    bool
		sinkErr    error
		wantCode   int
		wantEvents []eventSummary
	}{
		{
			name: "a get", target: get, wantCode: 500,
			wantEvents: []eventSummary{e(auditv1.StagePanic, auditv1.LevelMetadata, "get", cm, 500)},
		},
		{
			name: "a get, the sink failing", target: get, sinkErr: errors.New("disk full"), wantCode: 500,
		},
		{
			name: "a get, every stage", policy: everyStage, target: get, wantCode: 500,
			wantEvents: []eventSummary{e(auditv1.StageRequestReceived, auditv1.LevelMetadata, "get", cm, 0), e(auditv1.StagePanic, auditv1.LevelMetadata, "get", cm, 500)},
		},
		{
			name: "a watch before its response starts", target: watch, wantCode: 500,
			wantEvents: []eventSummary{e(auditv1.StagePanic, auditv1.LevelRequest, "watch", pods, 500)},
		},
		{
			name: "a watch after its response started", target: watch, started: true, wantCode: 200,
			wantEvents: []eventSummary{e(auditv1.StageResponseStarted, auditv1.LevelRequest, "watch", pods, 200), e(auditv1.StagePanic, auditv1.LevelRequest, "watch", pods, 500)},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sink := &memSink{err: tt.sinkErr}
			a, _ := newAuditor(t, sink, tt.policy)
			logger, log := newLogger()
			h := WithRecovery(WithAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Handler", "yes")
				if tt.started {
					w.Write([]byte("frame"))
				}
				panic("handler bug")
			}), a), logger, nil)
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
			if id := checkEvents(t, rec.Header(), sink.Events(), tt.wantEvents); len(tt.wantEvents) == 0 && id != "" {
				t.Errorf("Audit-Id %q names an event that was not written", id)
			}
			// Passing the panic on must keep where it happened.
			if !strings.Contains(log.String(), "TestAuditPanic") {
				t.Errorf("the logged stack lacks the handler: %s", log)
			}
		})
	}
}
