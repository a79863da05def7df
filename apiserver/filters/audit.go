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

// Auditor writes one event per request: ResponseComplete, or
// ResponseStarted for a watch.
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

// WithAudit records the request in the audit log once it is complete. The
// response is held until its event is written: if the event cannot be
// written, the client gets a 500 instead, so nothing is answered that is
// not audited. A panic in next is audited as the 500 that WithRecovery
// answers for it.
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

func (a *Auditor) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	received := metav1.NewMicroTime(time.Now())
	ctx := r.Context()
	attrs := attributesFrom(ctx, r)
	// kube-apiserver's header, on every response: the client can quote it
	// to find the event. A client's own Audit-Id is not taken, so that one
	// ID never names two events.
	id := types.UID(uuid.NewString())
	w.Header().Set(AuditIDHeader, string(id))
	level := a.policy.Level(attrs)
	if level == auditv1.LevelNone {
		next.ServeHTTP(w, r)
		return
	}
	rec := audit.NewRecord(level, id)
	if isLongRunning(ctx) {
		a.serveStreaming(w, r.WithContext(audit.WithRecord(ctx, rec)), next, attrs, rec, received)
		return
	}
	defer a.auditPanic(w, r, attrs, rec, received, nil)
	buf := &bufferedResponse{header: w.Header()}
	next.ServeHTTP(buf, r.WithContext(audit.WithRecord(ctx, rec)))

	ev := a.event(r, attrs, rec, received, buf)
	if err := a.write(ev); err != nil {
		a.refuse(w, r, ev, err)
		return
	}
	buf.flushTo(w)
}

// refuse answers 500 in place of a response whose event could not be
// written: nothing the handler set goes out, not even the Audit-Id, which
// names no event.
func (a *Auditor) refuse(w http.ResponseWriter, r *http.Request, ev *auditv1.Event, err error) {
	a.metrics.Rejected()
	a.logger.ErrorContext(r.Context(), "audit write failed; refusing request", "audit_id", ev.AuditID, "err", err)
	clear(w.Header())
	st := apierrors.NewInternalError(errAuditUnavailable).Status()
	responses.WriteStatus(w, &st)
}

// auditPanic, deferred, audits a panic in the handler as the 500 that the
// recovery filter will answer, as kube-apiserver does, and passes the
// panic on. The handler's headers are dropped so that they do not go out
// with that 500. A response that has started (started set) was audited
// when it started, and is left alone.
func (a *Auditor) auditPanic(w http.ResponseWriter, r *http.Request, attrs authorizer.Attributes, rec *audit.Record, received metav1.MicroTime, started *bool) {
	p := recover()
	if p == nil {
		return
	}
	if started == nil || !*started {
		clear(w.Header())
		ev := a.event(r, attrs, rec, received, &bufferedResponse{code: http.StatusInternalServerError})
		ev.Stage = auditv1.StagePanic
		if err := a.write(ev); err != nil {
			a.logger.ErrorContext(r.Context(), "audit write failed", "audit_id", ev.AuditID, "err", err)
		} else {
			w.Header().Set(AuditIDHeader, string(ev.AuditID))
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
// refuses the request.
func (a *Auditor) serveStreaming(w http.ResponseWriter, r *http.Request, next http.Handler, attrs authorizer.Attributes, rec *audit.Record, received metav1.MicroTime) {
	sw := &streamingResponse{ResponseWriter: w, start: func(code int) bool {
		ev := a.event(r, attrs, rec, received, &bufferedResponse{code: code})
		ev.Stage = auditv1.StageResponseStarted
		if err := a.write(ev); err != nil {
			a.refuse(w, r, ev, err)
			return false
		}
		return true
	}}
	defer a.auditPanic(w, r, attrs, rec, received, &sw.started)
	next.ServeHTTP(sw, r)
	if !sw.started {
		sw.WriteHeader(http.StatusOK)
	}
}

// streamingResponse calls start before the response header goes out; if
// start refuses, nothing the handler writes is sent.
type streamingResponse struct {
	http.ResponseWriter
	start   func(code int) bool
	started bool
	refused bool
}

func (s *streamingResponse) WriteHeader(code int) {
	if s.started {
		return
	}
	s.started = true
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
	status := &metav1.Status{Code: int32(resp.statusCode())}
	if status.Code >= 400 {
		// A failure's Status is the client's own error text, safe to keep.
		if st, ok := decodeStatus(resp); ok {
			status = &metav1.Status{Status: st.Status, Message: st.Message, Reason: st.Reason, Code: st.Code}
		}
	}
	ev.ResponseStatus = status
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
