package filters

// Test-only fakes of the interfaces the filters take, and the few helpers
// their tests share.

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/trustplane/trustplane/audit"
)

// The filters call one method each of authenticator.Request and
// authorizer.Authorizer: the tests fake them with the packages' own
// function adapters, authenticator.RequestFunc and
// authorizer.AuthorizerFunc.

// memSink is an AuditSink in memory. With err set it fails the writes of
// events of failStage, or every write when failStage is "", and stores
// nothing of them, as a full disk would.
type memSink struct {
	err       error
	failStage auditv1.Stage

	mu     sync.Mutex // guards events
	events []*auditv1.Event
}

var _ AuditSink = (*memSink)(nil)

func (s *memSink) Write(ev *auditv1.Event) error {
	if s.err != nil && (s.failStage == "" || s.failStage == ev.Stage) {
		return s.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
	return nil
}

func (s *memSink) Events() []*auditv1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*auditv1.Event(nil), s.events...)
}

// newLogger returns a logger that writes to the returned buffer. Read the
// buffer only once the request is served.
func newLogger() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

// newRequest is a request as the filters after WithRequestInfo and
// WithAuthentication see it: its request info parsed by the server's
// resolver and, when u is not nil, u as its user.
func newRequest(t *testing.T, method, target string, u user.Info) *http.Request {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	info, err := NewRequestInfoResolver().NewRequestInfo(r)
	if err != nil {
		t.Fatalf("request info of %s %s: %v", method, target, err)
	}
	ctx := request.WithRequestInfo(r.Context(), info)
	if u != nil {
		ctx = request.WithUser(ctx, u)
	}
	return r.WithContext(ctx)
}

// withAuditRecord gives r a record to collect its audit annotations; fill
// the event from it once r is served.
func withAuditRecord(r *http.Request) (*http.Request, *audit.Record) {
	rec := audit.NewRecord(auditv1.LevelMetadata, "test-audit-id")
	return r.WithContext(audit.WithRecord(r.Context(), rec)), rec
}

// filled is the event rec fills.
func filled(rec *audit.Record) *auditv1.Event {
	var ev auditv1.Event
	rec.Fill(&ev)
	return &ev
}

// statusOf decodes the metav1.Status a refusal answers with.
func statusOf(t *testing.T, rec *httptest.ResponseRecorder) metav1.Status {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var st metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Kind != "Status" {
		t.Fatalf("response is not a Status: %v: %q", err, rec.Body)
	}
	return st
}

// userOf is u as an audit event records it: comparable with
// reflect.DeepEqual and readable with %+v.
func userOf(u user.Info) *authenticationv1.UserInfo {
	if u == nil {
		return nil
	}
	info := audit.UserInfo(u)
	return &info
}

// reasons are the Status reasons of the codes the filters answer with.
var reasons = map[int]metav1.StatusReason{
	http.StatusBadRequest:          metav1.StatusReasonBadRequest,
	http.StatusUnauthorized:        metav1.StatusReasonUnauthorized,
	http.StatusForbidden:           metav1.StatusReasonForbidden,
	http.StatusTooManyRequests:     metav1.StatusReasonTooManyRequests,
	http.StatusInternalServerError: metav1.StatusReasonInternalError,
}

// checkRefusal asserts that rec holds a refusal with code, that code's
// reason, and message, exactly.
func checkRefusal(t *testing.T, rec *httptest.ResponseRecorder, code int, message string) {
	t.Helper()
	st := statusOf(t, rec)
	if rec.Code != code || st.Code != int32(code) || st.Status != metav1.StatusFailure || st.Reason != reasons[code] || st.Message != message {
		t.Errorf("answered %d: %s %d %s %q, want %d: Failure %d %s %q", rec.Code, st.Status, st.Code, st.Reason, st.Message, code, code, reasons[code], message)
	}
}
