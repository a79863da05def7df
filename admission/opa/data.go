package opa

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"k8s.io/apimachinery/pkg/runtime"
)

// Data is what policies read besides their input: the replicated
// objects, at data.kubernetes.<resource>.<namespace>.<name>, or
// data.kubernetes.<resource>.<name> for a cluster-scoped kind, as
// kube-mgmt replicates them. It is safe for concurrent use. It follows
// the watch caches: a change is in it shortly after the cache has it, and
// while a resource is replicated afresh (a watch that restarted) it is
// partly there.
type Data struct {
	store storage.Store
}

// NewData returns an empty Data.
func NewData() *Data { return &Data{store: inmem.New()} }

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
