package apiserver

import (
	"context"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/trustplane/trustplane/audit"
)

// auditRecord collects what the handlers contribute to a request's audit
// event. It is created by the audit filter and carried in the context.
type auditRecord struct {
	level auditv1.Level
	// id is the event's auditID, sent to the client as the Audit-Id
	// header.
	id types.UID

	mu          sync.Mutex // guards the fields below
	annotations map[string]string
	request     *runtime.Unknown
	response    *runtime.Unknown
	// name is the object's name when the URL does not carry it (create).
	name string
	// impersonated is who the request acts as, if anyone.
	impersonated user.Info
}

type auditKey struct{}

func withAuditRecord(ctx context.Context, rec *auditRecord) context.Context {
	return context.WithValue(ctx, auditKey{}, rec)
}

func auditRecordFrom(ctx context.Context) *auditRecord {
	rec, _ := ctx.Value(auditKey{}).(*auditRecord)
	return rec
}

// auditAnnotate adds an annotation to the request's audit event.
func auditAnnotate(ctx context.Context, key, value string) {
	rec := auditRecordFrom(ctx)
	if rec == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.annotations == nil {
		rec.annotations = map[string]string{}
	}
	rec.annotations[key] = value
}

// auditRequestObject records the decoded request body when the level asks
// for it.
func auditRequestObject(ctx context.Context, obj runtime.Object) {
	rec := auditRecordFrom(ctx)
	if rec == nil || obj == nil || !audit.AtLeast(rec.level, auditv1.LevelRequest) {
		return
	}
	u := encodeForAudit(obj)
	rec.mu.Lock()
	rec.request = u
	rec.mu.Unlock()
}

// auditResponseObject records the response body when the level asks for
// it.
func auditResponseObject(ctx context.Context, obj runtime.Object) {
	rec := auditRecordFrom(ctx)
	if rec == nil || !audit.AtLeast(rec.level, auditv1.LevelRequestResponse) {
		return
	}
	u := encodeForAudit(obj)
	rec.mu.Lock()
	rec.response = u
	rec.mu.Unlock()
}

func encodeForAudit(obj runtime.Object) *runtime.Unknown {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	return &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
}

// auditObjectName names the object of a create, whose URL has no name.
func auditObjectName(ctx context.Context, name string) {
	rec := auditRecordFrom(ctx)
	if rec == nil {
		return
	}
	rec.mu.Lock()
	rec.name = name
	rec.mu.Unlock()
}

// auditImpersonated records whom the request impersonates.
func auditImpersonated(ctx context.Context, u user.Info) {
	rec := auditRecordFrom(ctx)
	if rec == nil {
		return
	}
	rec.mu.Lock()
	rec.impersonated = u
	rec.mu.Unlock()
}
