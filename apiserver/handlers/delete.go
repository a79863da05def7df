package handlers

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/trustplane/trustplane/apiserver/storage"
)

// deleteRoute is DELETE of one object.
func (h *Handler) deleteRoute(q *scope) *writeRoute {
	return &writeRoute{
		op:   admission.Delete,
		kind: q.res.GVK(),
		decode: func(_ http.ResponseWriter, r *http.Request) (*writeInput, error) {
			opts, err := h.decodeDeleteOptions(r)
			if err != nil {
				return nil, err
			}
			return &writeInput{audited: opts, opts: opts, dry: isDryRun(opts.DryRun)}, nil
		},
		load: func(ctx context.Context, a *attempt) error {
			one := q.in(a.ref.namespace)
			old, err := h.load(ctx, one, a.ref.name)
			if err != nil {
				return one.storageError(err, a.ref.name)
			}
			a.old = old
			return nil
		},
		// A delete writes no object of its own.
		build: func(context.Context, http.ResponseWriter, *http.Request, *writeInput, *attempt) error { return nil },
		validate: func(_ context.Context, in *writeInput, a *attempt) error {
			return checkPreconditions(q, a, in.opts.(*metav1.DeleteOptions).Preconditions)
		},
		store: func(ctx context.Context, in *writeInput, a *attempt) (runtime.Object, error) {
			opts := in.opts.(*metav1.DeleteOptions)
			out, err := h.deleteOne(ctx, q.in(a.ref.namespace), a, opts, in.dry)
			// A delete that raced with another write starts again from
			// the object as stored, its preconditions checked again
			// there, as kube-apiserver's; one held to a resourceVersion
			// is the client's to resolve.
			if apierrors.IsConflict(err) && (opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil) {
				return nil, &retryError{err: err}
			}
			return out, err
		},
		respond: h.respondOne(http.StatusOK),
	}
}

// checkPreconditions holds a delete to the uid and resourceVersion its
// options name.
func checkPreconditions(q *scope, a *attempt, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	accessor, err := meta.Accessor(a.old)
	if err != nil {
		return err
	}
	gr, name := q.res.GroupResource(), a.ref.name
	if p.UID != nil && *p.UID != accessor.GetUID() {
		return apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", *p.UID, accessor.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != accessor.GetResourceVersion() {
		return apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s", *p.ResourceVersion, accessor.GetResourceVersion()))
	}
	return nil
}

// deleteOne deletes a.old: at once, or by marking it when finalizers or a
// grace period hold it. It returns what the client is answered: a Status
// when the object is gone, the marked object otherwise.
//
// The propagation policy becomes a finalizer on the object, as in
// kube-apiserver: "foregroundDeletion" (the garbage collector deletes the
// dependents first) or "orphan" (it releases them first); Background adds
// none, and the collector deletes the dependents once the owner is gone.
func (h *Handler) deleteOne(ctx context.Context, q *scope, a *attempt, opts *metav1.DeleteOptions, dry bool) (runtime.Object, error) {
	name, old := a.ref.name, a.old
	oldAccessor, err := meta.Accessor(old)
	if err != nil {
		return nil, err
	}
	rev, _ := storage.ParseResourceVersion(oldAccessor.GetResourceVersion())
	var grace int64
	if q.res.GracePeriod != nil {
		grace = q.res.GracePeriod(old, opts)
	}
	if oldAccessor.GetDeletionTimestamp() != nil {
		// Being deleted already. A shorter grace period shortens the
		// wait (kubectl delete --grace-period=0, a node agent done with
		// the pod); otherwise it goes when its finalizers are done.
		current := oldAccessor.GetDeletionGracePeriodSeconds()
		if current != nil && *current > 0 {
			// While a grace period runs, as in kube, the delete changes
			// nothing but its length: not the propagation policy.
			if grace >= *current {
				return old, nil
			}
			if grace == 0 && !finalizing(old) {
				if !dry {
					if err := h.deleteStored(ctx, q, name, rev, old); err != nil {
						return nil, q.storageError(err, name)
					}
				}
				return deletedStatus(q, name, oldAccessor), nil
			}
			at := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second).Truncate(time.Second))
			oldAccessor.SetDeletionTimestamp(&at)
			oldAccessor.SetDeletionGracePeriodSeconds(&grace)
			if !dry {
				if err := h.save(ctx, q, name, rev, old, old); err != nil {
					return nil, q.storageError(err, name)
				}
			}
			return old, nil
		}
		// Held by finalizers only: a second delete may change the policy
		// (a foreground delete turned into an orphaning one), which may
		// leave none.
		if !setPropagationFinalizers(oldAccessor, opts) {
			return old, nil
		}
		if !finalizing(old) {
			if !dry {
				if err := h.deleteStored(ctx, q, name, rev, old); err != nil {
					return nil, q.storageError(err, name)
				}
			}
			return deletedStatus(q, name, oldAccessor), nil
		}
		if !dry {
			if err := h.save(ctx, q, name, rev, old, old); err != nil {
				return nil, q.storageError(err, name)
			}
		}
		return old, nil
	}
	setPropagationFinalizers(oldAccessor, opts)
	if finalizing(old) || grace > 0 {
		// Graceful deletion: mark the object; its finalizers (or the node
		// agent, for a pod) finish it.
		at := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second).Truncate(time.Second))
		oldAccessor.SetDeletionTimestamp(&at)
		oldAccessor.SetDeletionGracePeriodSeconds(&grace)
		if ns, ok := old.(*corev1.Namespace); ok {
			ns.Status.Phase = corev1.NamespaceTerminating
		}
		if !dry {
			if err := h.save(ctx, q, name, rev, old, old); err != nil {
				return nil, q.storageError(err, name)
			}
		}
		return old, nil
	}
	if !dry {
		if err := h.deleteStored(ctx, q, name, rev, old); err != nil {
			return nil, q.storageError(err, name)
		}
	}
	return deletedStatus(q, name, oldAccessor), nil
}

// setPropagationFinalizers gives the object being deleted the garbage
// collector's finalizer its propagation policy asks for, and reports
// whether that changed its finalizers. The policy is, in kube's order: the
// options' orphanDependents, then their propagationPolicy, then the one a
// finalizer already on the object names (set by its creator, or by an
// earlier delete), then the default, Background, which every resource
// served here has (kube's Orphan default is only its pre-apps/v1
// workloads'). The options are validated: they never name both.
func setPropagationFinalizers(accessor metav1.Object, opts *metav1.DeleteOptions) bool {
	var policy metav1.DeletionPropagation
	switch {
	case opts.OrphanDependents != nil && *opts.OrphanDependents:
		policy = metav1.DeletePropagationOrphan
	case opts.OrphanDependents != nil:
		policy = metav1.DeletePropagationBackground
	case opts.PropagationPolicy != nil:
		policy = *opts.PropagationPolicy
	default:
		return false
	}
	finalizers := accessor.GetFinalizers()
	var next []string
	for _, f := range finalizers {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			next = append(next, f)
		}
	}
	switch policy {
	case metav1.DeletePropagationOrphan:
		next = append(next, metav1.FinalizerOrphanDependents)
	case metav1.DeletePropagationForeground:
		next = append(next, metav1.FinalizerDeleteDependents)
	}
	// Only a change of the set counts: kept in place, the same
	// finalizers in another order are not worth a write.
	if slices.Equal(slices.Sorted(slices.Values(next)), slices.Sorted(slices.Values(finalizers))) {
		return false
	}
	accessor.SetFinalizers(next)
	return true
}

// finalizing reports whether a finalizer holds obj once deleted: one of
// its own, or for a namespace one of spec.finalizers ("kubernetes", which
// the namespace controller removes once the namespace is empty).
func finalizing(obj runtime.Object) bool {
	if ns, ok := obj.(*corev1.Namespace); ok && len(ns.Spec.Finalizers) > 0 {
		return true
	}
	accessor, err := meta.Accessor(obj)
	return err == nil && len(accessor.GetFinalizers()) > 0
}

// deletedStatus is the answer to a delete that removed the object.
func deletedStatus(q *scope, name string, accessor metav1.Object) *metav1.Status {
	return &metav1.Status{
		Status: metav1.StatusSuccess,
		Details: &metav1.StatusDetails{
			Name:  name,
			Group: q.res.GVR.Group,
			Kind:  q.res.GVR.Resource,
			UID:   accessor.GetUID(),
		},
	}
}

// deleteCollectionRoute is DELETE of every object the selectors match,
// one by one, each down the write path, answered with the list of what it
// deleted.
func (h *Handler) deleteCollectionRoute(q *scope) *writeRoute {
	route := h.deleteRoute(q)
	decodeOptions := route.decode
	var sel *selector
	route.decode = func(w http.ResponseWriter, r *http.Request) (in *writeInput, err error) {
		if sel, err = parseSelector(q, r); err != nil {
			return nil, err
		}
		return decodeOptions(w, r)
	}
	route.targets = func(ctx context.Context, _ *http.Request) ([]objectRef, error) {
		cache := h.cache(q)
		rev, err := cache.CurrentRevision(ctx)
		if err != nil {
			return nil, err
		}
		var refs []objectRef
		_, err = cache.List(ctx, storage.ListPrefix(q.res.GroupResource(), q.namespace), rev, func(obj runtime.Object) error {
			if obj = q.served(obj); sel.matches(obj) {
				accessor, err := meta.Accessor(obj)
				if err != nil {
					return err
				}
				refs = append(refs, objectRef{namespace: accessor.GetNamespace(), name: accessor.GetName()})
			}
			return nil
		})
		return refs, err
	}
	// What went meanwhile is not an error.
	route.skipMissing = true
	deleteOne := route.store
	route.store = func(ctx context.Context, in *writeInput, a *attempt) (runtime.Object, error) {
		out, err := deleteOne(ctx, in, a)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if _, gone := out.(*metav1.Status); gone {
			out = a.old
		}
		return out, err
	}
	route.respond = func(w http.ResponseWriter, r *http.Request, results []runtime.Object) {
		var deleted []runtime.Object
		for _, obj := range results {
			if obj != nil {
				deleted = append(deleted, obj)
			}
		}
		list := q.res.NewList()
		if err := meta.SetList(list, deleted); err != nil {
			h.respond.Error(w, r, err)
			return
		}
		h.respond.Object(w, r, http.StatusOK, list)
	}
	return route
}

// deleteStored removes a stored object at revision rev. A namespace's
// content is deleted, object by object, through the API by the namespace
// controller before its "kubernetes" finalizer lets it go; what is left
// then (an administrator finalized it by hand) goes in the same
// transaction as the namespace, so that no old object, a Secret least of
// all, comes back in a namespace created later under the same name.
//
// An object that holds shares of a range (a Service) frees them in the
// same transaction. Services a namespace's transaction removes keep
// theirs, as in kube-apiserver until its repair loop runs: the namespace
// controller deletes them one by one first.
func (h *Handler) deleteStored(ctx context.Context, q *scope, name string, rev int64, old runtime.Object) error {
	if a, ok := h.allocators[q.storedResource().GroupResource()]; ok && q.res.View == nil {
		return a.Delete(ctx, q.key(name), rev, old)
	}
	var prefixes []string
	if q.res.GVR.Resource == "namespaces" && q.res.GVR.Group == "" {
		for _, nsRes := range h.registry.Namespaced() {
			prefixes = append(prefixes, storage.ListPrefix(nsRes.GroupResource(), name))
		}
	}
	_, err := h.store.Delete(ctx, q.key(name), rev, prefixes...)
	return err
}
