package opa

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"k8s.io/apimachinery/pkg/runtime"
)

// Data is what policies read besides their input: the replicated
// objects, at data.kubernetes.<resource>.<namespace>.<name>, or
// data.kubernetes.<resource>.<name> for a cluster-scoped kind, as
// kube-mgmt replicates them. It is safe for concurrent use. It follows
// the watch caches: a change is in it shortly after the cache has it.
// While a resource is being replicated afresh, or after a write to it
// failed, its follower marks it stale, and evaluations refuse.
type Data struct {
	store storage.Store
	// stale counts the resources whose objects may not be those of
	// their cache (being replicated afresh, or a write that failed):
	// while it is not zero, evaluations refuse rather than decide by
	// them.
	stale atomic.Int32

	mu      sync.Mutex // guards staleBy
	staleBy map[string]bool
}

// errStale refuses an evaluation while replicated data is stale.
var errStale = errors.New("the policies' replicated data is stale")

// MarkStale says the objects of resource may not be those of its cache:
// evaluations refuse until MarkFresh.
func (d *Data) MarkStale(resource string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.staleBy[resource] {
		d.staleBy[resource] = true
		d.stale.Add(1)
	}
}

// MarkFresh says the objects of resource are again those of its cache.
func (d *Data) MarkFresh(resource string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.staleBy[resource] {
		delete(d.staleBy, resource)
		d.stale.Add(-1)
	}
}

// NewData returns an empty Data.
func NewData() *Data { return &Data{store: inmem.New(), staleBy: map[string]bool{}} }

// Put stores obj, the object of a replicated resource.
func (d *Data) Put(ctx context.Context, resource, namespace, name string, obj runtime.Object) error {
	value, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("replicate %s %s/%s: %w", resource, namespace, name, err)
	}
	path := objectPath(resource, namespace, name)
	return storage.Txn(ctx, d.store, storage.WriteParams, func(txn storage.Transaction) error {
		if err := storage.MakeDir(ctx, d.store, txn, path[:len(path)-1]); err != nil {
			return err
		}
		return d.store.Write(ctx, txn, storage.AddOp, path, value)
	})
}

// Delete removes an object that is gone.
func (d *Data) Delete(ctx context.Context, resource, namespace, name string) error {
	err := storage.Txn(ctx, d.store, storage.WriteParams, func(txn storage.Transaction) error {
		return d.store.Write(ctx, txn, storage.RemoveOp, objectPath(resource, namespace, name), nil)
	})
	if storage.IsNotFound(err) {
		return nil
	}
	return err
}

// Reset removes every object of a resource, before it is replicated
// afresh.
func (d *Data) Reset(ctx context.Context, resource string) error {
	err := storage.Txn(ctx, d.store, storage.WriteParams, func(txn storage.Transaction) error {
		return d.store.Write(ctx, txn, storage.RemoveOp, storage.Path{"kubernetes", resource}, nil)
	})
	if storage.IsNotFound(err) {
		return nil
	}
	return err
}

func objectPath(resource, namespace, name string) storage.Path {
	if namespace == "" {
		return storage.Path{"kubernetes", resource, name}
	}
	return storage.Path{"kubernetes", resource, namespace, name}
}

// Clear removes every replicated object.
func (d *Data) Clear(ctx context.Context) error {
	err := storage.Txn(ctx, d.store, storage.WriteParams, func(txn storage.Transaction) error {
		return d.store.Write(ctx, txn, storage.RemoveOp, storage.Path{"kubernetes"}, nil)
	})
	if storage.IsNotFound(err) {
		return nil
	}
	return err
}
