package handlers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/trustplane/trustplane/apiserver/storage"
)

// load reads the object name of q's resource.
func (h *Handler) load(ctx context.Context, q *scope, name string) (runtime.Object, error) {
	stored := q.storedResource()
	obj := stored.NewObject()
	if err := h.store.Get(ctx, stored.GroupResource(), q.key(name), obj); err != nil {
		return nil, err
	}
	return q.served(obj), nil
}

// save stores obj as name in place of old: created when rev is 0 (old
// nil), else updated if still at revision rev. obj gets the
// resourceVersion written.
func (h *Handler) save(ctx context.Context, q *scope, name string, rev int64, old, obj runtime.Object) error {
	stored := q.storedResource()
	out := obj
	if q.res.View != nil {
		out = q.res.View.ToStored(obj)
	}
	var err error
	if a, ok := h.allocators[stored.GroupResource()]; ok && q.res.View == nil {
		return a.Save(ctx, q.key(name), rev, old, obj)
	}
	if rev == 0 {
		err = h.store.Create(ctx, stored.GroupResource(), q.key(name), out)
	} else {
		err = h.store.Update(ctx, stored.GroupResource(), q.key(name), rev, out)
	}
	if err != nil || out == obj {
		return err
	}
	from, _ := meta.Accessor(out)
	to, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	to.SetResourceVersion(from.GetResourceVersion())
	return nil
}

// Allocator stores the objects of a resource that hold shares of a range
// (Services: cluster IPs and node ports), each with the record of what is
// taken, in one transaction.
type Allocator interface {
	// Save stores obj at key in place of old: created when rev is 0 (old
	// nil), else updated if old is still at revision rev. It takes what
	// obj holds that old did not, filling in obj, and frees what old held
	// that obj does not.
	Save(ctx context.Context, key string, rev int64, old, obj runtime.Object) error
	// Delete removes old, at key, if still at revision rev, and frees
	// what it held.
	Delete(ctx context.Context, key string, rev int64, old runtime.Object) error
}

// cache is the watch cache holding q's objects.
func (h *Handler) cache(q *scope) *storage.Cacher {
	return h.caches[q.storedResource().GroupResource()]
}
