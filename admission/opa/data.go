package opa

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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

	mu      sync.Mutex // guards staleBy, applied and advanced
	staleBy map[string]bool
	// applied is, by resource, the revision up to which its objects are
	// those of its cache; advanced is closed, and replaced, when one
	// moves on.
	applied  map[string]int64
	advanced chan struct{}
	// written, when set, is the revision of the last write the server
	// answered to a replicated resource: an evaluation waits until the
	// data has it, so that a request that follows a write is decided by
	// it (a namespace created, then a Secret in it).
	written func(resource string) int64
	// resources are the replicated resources.
	resources []string
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
func NewData() *Data {
	return &Data{store: inmem.New(), staleBy: map[string]bool{}, applied: map[string]int64{}, advanced: make(chan struct{})}
}

// Follow says that resources are replicated, and that written tells the
// revision of the server's last answered write to each: an evaluation
// waits, within its own time limit, until the data has caught up with it.
func (d *Data) Follow(resources []string, written func(resource string) int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.resources, d.written = resources, written
}

// Applied says the objects of resource are those of its cache up to rev.
func (d *Data) Applied(resource string, rev int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if rev > d.applied[resource] {
		d.applied[resource] = rev
		close(d.advanced)
		d.advanced = make(chan struct{})
	}
}

// catchUp waits until every replicated resource's data has the server's
// last answered write to it, or ctx is done, or deadline has passed if it
// is not zero.
func (d *Data) catchUp(ctx context.Context, deadline time.Time) error {
	var expired <-chan time.Time
	for {
		d.mu.Lock()
		behind := false
		if d.written != nil {
			for _, r := range d.resources {
				if d.applied[r] < d.written(r) {
					behind = true
					break
				}
			}
		}
		advanced := d.advanced
		d.mu.Unlock()
		if !behind {
			return nil
		}
		if expired == nil && !deadline.IsZero() {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-advanced:
		case <-ctx.Done():
			return errBehind
		case <-expired:
			return errBehind
		}
	}
}

// errBehind refuses an evaluation whose data did not catch up in time.
var errBehind = errors.New("the policies' replicated data did not catch up with the server's writes in time")

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
