package filters

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/trustplane/trustplane/apiserver/responses"
	"github.com/trustplane/trustplane/audit"
)

// AuditSink stores audit events. An error means the event was not stored,
// and the request it describes is refused.
type AuditSink interface {
	Write(*auditv1.Event) error
}

// Auditor writes the events of each request, one per stage that its
// policy records: RequestReceived before the request is handled,
// ResponseStarted when a long-running response (a watch) starts,
// ResponseComplete when the response is complete, Panic when the handler
// panics. The events of one request share its audit ID.
type Auditor struct {
	policy  *audit.Policy
	sink    AuditSink
	metrics *audit.Metrics
	logger  *slog.Logger
}

// NewAuditor returns the Auditor of policy, writing to sink, the log
// backend, and counting in metrics.
func NewAuditor(policy *audit.Policy, sink AuditSink, metrics *audit.Metrics, logger *slog.Logger) *Auditor {
	return &Auditor{policy: policy, sink: sink, metrics: metrics, logger: logger}
}

// write sends ev to the sink, counting it, and its failure.
func (a *Auditor) write(ev *auditv1.Event) error {
	a.metrics.Event()
	err := a.sink.Write(ev)
	if err != nil {
		a.metrics.Error(err)
	}
	return err
}

// WithAudit records the request in the audit log, at each stage its
// policy records. Nothing is answered that is not audited: the request is
// refused with a 500 if its RequestReceived event cannot be written (before
// it is handled), and the response is held until its ResponseComplete
// event is written, a 500 going out instead if it cannot be; a watch's
// response starts only once its ResponseStarted event is written. A panic
// in next is audited as the 500 that WithRecovery answers for it.
func WithAudit(next http.Handler, a *Auditor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.serve(w, r, next)
	})
}

// WithFailedAuthenticationAudit answers 401 for requests whose
// authentication failed, auditing them first.
func WithFailedAuthenticationAudit(a *Auditor) http.Handler {
	unauthorized := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := apierrors.NewUnauthorized("Unauthorized").Status()
		responses.WriteStatus(w, &st)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.serve(w, r, unauthorized)
	})
}

// auditedRequest is what the stages of one request's audit share.
type auditedRequest struct {
	a        *Auditor
	id       types.UID
	r        *http.Request
	attrs    authorizer.Attributes
	decision audit.Decision
	rec      *audit.Record
	received metav1.MicroTime
	// written is set once an event of the request is written: its
	// Audit-Id names an event.
	written bool
}

// stage writes the request's event of stage, if its policy records it,
// with the response's status when resp is not nil.
func (q *auditedRequest) stage(stage auditv1.Stage, resp *bufferedResponse) error {
	if !q.decision.Logs(stage) {
		return nil
	}
	ev := q.a.event(q.r, q.attrs, q.rec, q.received, resp)
	ev.Stage = stage
	err := q.a.write(ev)
	if audit.Tolerated(err) {
		// The log holds it; a backend that may miss it did.
		q.a.logger.WarnContext(q.r.Context(), "audit event kept by the log alone", "audit_id", q.id, "stage", stage, "err", err)
		err = nil
	}
	if err != nil {
		return err
	}
	q.written = true
	return nil
}

func (a *Auditor) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	received := metav1.NewMicroTime(time.Now())
	ctx := r.Context()
	attrs := attributesFrom(ctx, r)
	// kube-apiserver's header, on every response: the client can quote it
	// to find the events. A client's own Audit-Id is not taken, so that
	// one ID never names two requests.
	id := types.UID(uuid.NewString())
	w.Header().Set(AuditIDHeader, string(id))
	decision := a.policy.Decide(attrs)
	if decision.Level == auditv1.LevelNone {
		next.ServeHTTP(w, r)
		return
	}
	q := &auditedRequest{a: a, id: id, r: r, attrs: attrs, decision: decision, rec: decision.Record(id), received: received}
	if err := q.stage(auditv1.StageRequestReceived, nil); err != nil {
		a.refuse(w, q, err)
		return
	}
	r = r.WithContext(audit.WithRecord(ctx, q.rec))
	if isLongRunning(ctx) {
		a.serveStreaming(w, r, next, q)
		return
	}
	defer a.auditPanic(w, q, nil)
	buf := &bufferedResponse{header: w.Header()}
	next.ServeHTTP(buf, r)

	if err := q.stage(auditv1.StageResponseComplete, buf); err != nil {
		a.refuse(w, q, err)
		return
	}
	buf.flushTo(w)
}

// refuse answers 500 in place of a request or response whose event could
// not be written: nothing the handler set goes out, and the Audit-Id only
// if it names an event that was written (the request's RequestReceived).
func (a *Auditor) refuse(w http.ResponseWriter, q *auditedRequest, err error) {
	a.metrics.Rejected()
	a.logger.ErrorContext(q.r.Context(), "audit write failed; refusing request", "audit_id", q.id, "err", err)
	clear(w.Header())
	if q.written {
		w.Header().Set(AuditIDHeader, string(q.id))
	}
	st := apierrors.NewInternalError(errAuditUnavailable).Status()
	responses.WriteStatus(w, &st)
}

// auditPanic, deferred, audits a panic in the handler, with stage Panic
// and the 500 that the recovery filter will answer, as kube-apiserver
// does, and passes the panic on. Unless the response has started
// (started set), the handler's headers are dropped so that they do not go
// out with that 500.
func (a *Auditor) auditPanic(w http.ResponseWriter, q *auditedRequest, started *bool) {
	p := recover()
	if p == nil {
		return
	}
	err := q.stage(auditv1.StagePanic, &bufferedResponse{code: http.StatusInternalServerError})
	if err != nil {
		a.logger.ErrorContext(q.r.Context(), "audit write failed", "audit_id", q.id, "err", err)
	}
	if started == nil || !*started {
		clear(w.Header())
		if q.written {
			w.Header().Set(AuditIDHeader, string(q.id))
		}
	}
	panic(p)
}

// AuditIDHeader carries the request's audit ID in every audited response.
const AuditIDHeader = "Audit-Id"

var errAuditUnavailable = auditUnavailable{}

type auditUnavailable struct{}

func (auditUnavailable) Error() string { return "the audit log cannot be written" }

// serveStreaming audits a long-running request (a watch) when its response
// starts, with stage ResponseStarted: its body is not held, so the event is
// written before the first byte goes out, and a failure to write it
// refuses the request. Its ResponseComplete event is written when it ends;
// by then the response is sent, and a failure is only logged and counted.
func (a *Auditor) serveStreaming(w http.ResponseWriter, r *http.Request, next http.Handler, q *auditedRequest) {
	sw := &streamingResponse{ResponseWriter: w, start: func(code int) bool {
		if err := q.stage(auditv1.StageResponseStarted, &bufferedResponse{code: code}); err != nil {
			a.refuse(w, q, err)
			return false
		}
		return true
	}}
	defer a.auditPanic(w, q, &sw.started)
	next.ServeHTTP(sw, r)
	if !sw.started {
		sw.WriteHeader(http.StatusOK)
	}
	if sw.refused {
		return
	}
	if err := q.stage(auditv1.StageResponseComplete, &bufferedResponse{code: sw.code}); err != nil {
		a.logger.ErrorContext(r.Context(), "audit write failed after the response", "audit_id", q.id, "err", err)
	}
}

// streamingResponse calls start before the response header goes out; if
// start refuses, nothing the handler writes is sent.
type streamingResponse struct {
	http.ResponseWriter
	start   func(code int) bool
	started bool
	refused bool
	code    int // the status sent, once started
}

func (s *streamingResponse) WriteHeader(code int) {
	if s.started {
		return
	}
	s.started, s.code = true, code
	if !s.start(code) {
		s.refused = true
		return
	}
	s.ResponseWriter.WriteHeader(code)
}
func (s *streamingResponse) Write(p []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	if s.refused {
		return 0, errAuditUnavailable
	}
	return s.ResponseWriter.Write(p)
}

// FlushError sends what was written; http.ResponseController uses it.
func (s *streamingResponse) FlushError() error {
	s.WriteHeader(http.StatusOK)
	if s.refused {
		return errAuditUnavailable
	}
	return http.NewResponseController(s.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (s *streamingResponse) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// event is the request's event as it stands, of stage ResponseComplete,
// with the status of resp; without one when resp is nil (RequestReceived).
func (a *Auditor) event(r *http.Request, attrs authorizer.Attributes, rec *audit.Record, received metav1.MicroTime, resp *bufferedResponse) *auditv1.Event {
	ev := &auditv1.Event{
		TypeMeta:                 metav1.TypeMeta{Kind: "Event", APIVersion: auditv1.SchemeGroupVersion.String()},
		Stage:                    auditv1.StageResponseComplete,
		RequestURI:               r.URL.RequestURI(),
		Verb:                     attrs.GetVerb(),
		UserAgent:                r.UserAgent(),
		SourceIPs:                sourceIPs(r),
		RequestReceivedTimestamp: received,
		StageTimestamp:           metav1.NewMicroTime(time.Now()),
	}
	if u := attrs.GetUser(); u != nil {
		ev.User = audit.UserInfo(u)
	}
	if attrs.IsResourceRequest() {
		ev.ObjectRef = &auditv1.ObjectReference{
			Resource:    attrs.GetResource(),
			Namespace:   attrs.GetNamespace(),
			Name:        attrs.GetName(),
			APIGroup:    attrs.GetAPIGroup(),
			APIVersion:  attrs.GetAPIVersion(),
			Subresource: attrs.GetSubresource(),
		}
	}
	if resp != nil {
		status := &metav1.Status{Code: int32(resp.statusCode())}
		if status.Code >= 400 {
			// A failure's Status is the client's own error text, safe to
			// keep.
			if st, ok := decodeStatus(resp); ok {
				status = &metav1.Status{Status: st.Status, Message: st.Message, Reason: st.Reason, Code: st.Code}
			}
		}
		ev.ResponseStatus = status
	}
	rec.Fill(ev)
	return ev
}

func sourceIPs(r *http.Request) []string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return []string{r.RemoteAddr}
	}
	return []string{host}
}

// bufferedResponse holds a response until it may be sent.
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.body.Write(p)
}

func (b *bufferedResponse) statusCode() int {
	if b.code == 0 {
		return http.StatusOK
	}
	return b.code
}

func (b *bufferedResponse) flushTo(w http.ResponseWriter) {
	w.WriteHeader(b.statusCode())
	w.Write(b.body.Bytes())
}

// decodeStatus reads the metav1.Status of an error response; every error
// response is written by responses.WriteStatus, as JSON.
func decodeStatus(b *bufferedResponse) (*metav1.Status, bool) {
	var st metav1.Status
	if err := json.Unmarshal(b.body.Bytes(), &st); err != nil || st.Kind != "Status" {
		return nil, false
	}
	return &st, true
}
