package audit

import (
	"context"
	"encoding/json"
	"maps"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Record collects what the stages of a request contribute to its audit
// event. The audit filter makes one per audited request and carries it in
// the request's context; the functions below add to the record in a
// context, and do nothing where there is none.
type Record struct {
	level auditv1.Level
	id    types.UID
	// omitManagedFields leaves metadata.managedFields out of the objects
	// recorded.
	omitManagedFields bool

	mu          sync.Mutex // guards the fields below
	annotations map[string]string
	// annotationsShared: an event holds annotations, which must not
	// change; the next Annotate writes to a copy.
	annotationsShared bool
	request           *runtime.Unknown
	response          *runtime.Unknown
	// name is the object's name when the URL does not carry it (create).
	name string
	// impersonated is who the request acts as, if anyone.
	impersonated user.Info
}

// NewRecord starts the record of a request audited at level, whose event
// has the given auditID.
func NewRecord(level auditv1.Level, id types.UID) *Record {
	return &Record{level: level, id: id}
}

// Record starts the record of a request that d decided, whose events have
// the given auditID.
func (d Decision) Record(id types.UID) *Record {
	return &Record{level: d.Level, id: id, omitManagedFields: d.OmitManagedFields}
}

type recordKey struct{}

// WithRecord returns ctx carrying rec.
func WithRecord(ctx context.Context, rec *Record) context.Context {
	return context.WithValue(ctx, recordKey{}, rec)
}

func recordFrom(ctx context.Context) *Record {
	rec, _ := ctx.Value(recordKey{}).(*Record)
	return rec
}

// Annotate adds an annotation to the request's audit event.
func Annotate(ctx context.Context, key, value string) {
	rec := recordFrom(ctx)
	if rec == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.annotations == nil {
		rec.annotations = map[string]string{}
	} else if rec.annotationsShared {
		rec.annotations = maps.Clone(rec.annotations)
	}
	rec.annotationsShared = false
	rec.annotations[key] = value
}

// LogRequestObject records the decoded request body (an object, a patch,
// DeleteOptions) when the level asks for it.
func LogRequestObject(ctx context.Context, obj runtime.Object) {
	rec := recordFrom(ctx)
	if rec == nil || obj == nil || !AtLeast(rec.level, auditv1.LevelRequest) {
		return
	}
	u := encode(obj, rec.omitManagedFields)
	rec.mu.Lock()
	rec.request = u
	rec.mu.Unlock()
}

// LogResponseObject records the response body when the level asks for it.
func LogResponseObject(ctx context.Context, obj runtime.Object) {
	rec := recordFrom(ctx)
	if rec == nil || !AtLeast(rec.level, auditv1.LevelRequestResponse) {
		return
	}
	u := encode(obj, rec.omitManagedFields)
	rec.mu.Lock()
	rec.response = u
	rec.mu.Unlock()
}

// encode is obj as JSON, without its managedFields (or its items') when
// omitManagedFields is set, as kube-apiserver records them.
func encode(obj runtime.Object, omitManagedFields bool) *runtime.Unknown {
	if omitManagedFields && obj != nil {
		obj = withoutManagedFields(obj)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	return &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
}

// withoutManagedFields is obj, or a copy of it without the managedFields
// of the object or of a list's items.
func withoutManagedFields(obj runtime.Object) runtime.Object {
	has := false
	visit := func(o runtime.Object) error {
		if m, err := meta.Accessor(o); err == nil && len(m.GetManagedFields()) > 0 {
			has = true
		}
		return nil
	}
	strip := func(o runtime.Object) error {
		if m, err := meta.Accessor(o); err == nil {
			m.SetManagedFields(nil)
		}
		return nil
	}
	each := func(o runtime.Object, fn func(runtime.Object) error) {
		if meta.IsListType(o) {
			meta.EachListItem(o, fn)
			return
		}
		fn(o)
	}
	each(obj, visit)
	if !has {
		return obj
	}
	obj = obj.DeepCopyObject()
	each(obj, strip)
	return obj
}

// LogObjectName names the object of a create, whose URL has no name.
func LogObjectName(ctx context.Context, name string) {
	rec := recordFrom(ctx)
	if rec == nil {
		return
	}
	rec.mu.Lock()
	rec.name = name
	rec.mu.Unlock()
}

// LogImpersonated records whom the request impersonates.
func LogImpersonated(ctx context.Context, u user.Info) {
	rec := recordFrom(ctx)
	if rec == nil {
		return
	}
	rec.mu.Lock()
	rec.impersonated = u
	rec.mu.Unlock()
}

// Fill sets on ev what the record holds: its level and ID, the
// annotations, the request and response objects as far as the level
// allows, the object's name where the event's reference lacks one, and the
// impersonated user.
func (rec *Record) Fill(ev *auditv1.Event) {
	ev.Level, ev.AuditID = rec.level, rec.id
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if ev.ObjectRef != nil && ev.ObjectRef.Name == "" {
		ev.ObjectRef.Name = rec.name
	}
	if rec.impersonated != nil {
		u := UserInfo(rec.impersonated)
		ev.ImpersonatedUser = &u
	}
	if len(rec.annotations) > 0 {
		// Shared until the next Annotate, which copies them: a request
		// has more than one event, and a backend may read an event after
		// the request annotated the next.
		ev.Annotations = rec.annotations
		rec.annotationsShared = true
	}
	if AtLeast(rec.level, auditv1.LevelRequest) {
		ev.RequestObject = rec.request
	}
	if AtLeast(rec.level, auditv1.LevelRequestResponse) {
		ev.ResponseObject = rec.response
	}
}

// UserInfo is u as an event, or a review, records a user.
func UserInfo(u user.Info) authenticationv1.UserInfo {
	info := authenticationv1.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
	if extra := u.GetExtra(); len(extra) > 0 {
		info.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range extra {
			info.Extra[k] = v
		}
	}
	return info
}
