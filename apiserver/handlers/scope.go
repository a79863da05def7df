package handlers

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/apiserver/storage"
)

// scope is what the verb handlers need of a resource request.
type scope struct {
	res         *registry.Resource
	namespace   string
	name        string
	subresource string
}

// storedResource is the resource whose objects hold q's.
func (q *scope) storedResource() *registry.Resource {
	if q.res.View != nil {
		return q.res.View.Stored
	}
	return q.res
}

// served converts a stored object to the served kind.
func (q *scope) served(obj runtime.Object) runtime.Object {
	if q.res.View == nil || obj == nil {
		return obj
	}
	return q.res.View.FromStored(obj)
}

// in is q for an object of another namespace: a deletecollection across
// namespaces deletes each object in its own.
func (q *scope) in(namespace string) *scope {
	if namespace == q.namespace {
		return q
	}
	one := *q
	one.namespace = namespace
	return &one
}

func (q *scope) key(name string) string {
	return storage.Key(q.res.GroupResource(), q.namespace, name)
}

// storageError turns a storage error into the API error naming the object.
func (q *scope) storageError(err error, name string) error {
	gr := q.res.GroupResource()
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrAlreadyExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New(optimisticLockMsg))
	case errors.Is(err, storage.ErrTooLarge):
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the stored object would exceed the limit of %d bytes", storage.MaxObjectBytes))
	}
	return err
}

const optimisticLockMsg = "the object has been modified; please apply your changes to the latest version and try again"
