package apiserver

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/apiserver/storage"
)

// storedResource is the resource whose objects hold q's.
func (q *restRequest) storedResource() *registry.Resource {
	if q.res.View != nil {
		return q.res.View.Stored
	}
	return q.res
}

// served converts a stored object to the served kind.
func (q *restRequest) served(obj runtime.Object) runtime.Object {
	if q.res.View == nil || obj == nil {
		return obj
	}
	return q.res.View.FromStored(obj)
}

// load reads the object name of q's resource.
func (s *Server) load(ctx context.Context, q *restRequest, name string) (runtime.Object, error) {
	stored := q.storedResource()
	obj := stored.NewObject()
	if err := s.store.Get(ctx, stored.GroupResource(), q.key(name), obj); err != nil {
		return nil, err
	}
	return q.served(obj), nil
}

// exists reports whether the object name of q's resource is stored.
func (s *Server) exists(ctx context.Context, q *restRequest, name string) (bool, error) {
	_, err := s.load(ctx, q, name)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// save stores obj as name: created when rev is 0, else updated if still at
// revision rev. obj gets the resourceVersion written.
func (s *Server) save(ctx context.Context, q *restRequest, name string, rev int64, obj runtime.Object) error {
	stored := q.storedResource()
	out := obj
	if q.res.View != nil {
		out = q.res.View.ToStored(obj)
	}
	var err error
	if rev == 0 {
		err = s.store.Create(ctx, stored.GroupResource(), q.key(name), out)
	} else {
		err = s.store.Update(ctx, stored.GroupResource(), q.key(name), rev, out)
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

// cache is the watch cache holding q's objects.
func (s *Server) cache(q *restRequest) *storage.Cacher {
	return s.caches[q.storedResource().GroupResource()]
}
