package handlers

import (
	"context"
	"errors"
	"fmt"
	certificatesv1 "k8s.io/api/certificates/v1"
	"net/http"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/apiserver/storage"
)

// mergeFunc makes the object an update would store from the request and
// the stored object, old, which it may change. The resourceVersion of what
// it returns is the update's precondition: "" means unconditional.
type mergeFunc func(w http.ResponseWriter, r *http.Request, in *writeInput, old runtime.Object) (runtime.Object, error)

// updateRoute is PUT of an object, or of its status or (a namespace's)
// finalizers.
func (h *Handler) updateRoute(q *scope) *writeRoute {
	decode := func(w http.ResponseWriter, r *http.Request) (*writeInput, error) {
		opts, err := updateOptions(r)
		if err != nil {
			return nil, err
		}
		obj, err := h.decodeKind(w, r, opts.FieldValidation, q.res.GVK(), q.res.NewObject)
		if err != nil {
			return nil, err
		}
		accessor, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		if accessor.GetName() != q.name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", accessor.GetName(), q.name))
		}
		if err := checkNamespace(accessor, q); err != nil {
			return nil, err
		}
		return &writeInput{obj: obj, audited: obj, opts: opts, dry: isDryRun(opts.DryRun)}, nil
	}
	merge := func(_ http.ResponseWriter, r *http.Request, in *writeInput, old runtime.Object) (runtime.Object, error) {
		if q.res.Defaults != nil {
			q.res.Defaults(in.obj)
		}
		return h.patchers.of(q).Update(old, in.obj, in.opts.(*metav1.UpdateOptions).FieldManager, r.UserAgent())
	}
	switch q.subresource {
	case "finalize":
		// Only a namespace's spec.finalizers change.
		merge = func(_ http.ResponseWriter, _ *http.Request, in *writeInput, old runtime.Object) (runtime.Object, error) {
			next := old.(*corev1.Namespace)
			next.Spec.Finalizers = in.obj.(*corev1.Namespace).Spec.Finalizers
			next.ResourceVersion = in.obj.(*corev1.Namespace).ResourceVersion
			return next, nil
		}
	case "approval":
		// Only a CertificateSigningRequest's conditions change; a
		// condition without times gets now, as kube's strategy gives it.
		merge = func(_ http.ResponseWriter, _ *http.Request, in *writeInput, old runtime.Object) (runtime.Object, error) {
			next := old.(*certificatesv1.CertificateSigningRequest)
			req := in.obj.(*certificatesv1.CertificateSigningRequest)
			now := metav1.Now()
			next.Status.Conditions = req.Status.Conditions
			for i := range next.Status.Conditions {
				c := &next.Status.Conditions[i]
				if c.LastUpdateTime.IsZero() {
					c.LastUpdateTime = now
				}
				if c.LastTransitionTime.IsZero() {
					c.LastTransitionTime = now
				}
			}
			next.ResourceVersion = req.ResourceVersion
			if req.UID != "" {
				next.UID = req.UID
			}
			return next, nil
		}
	case "status":
		// Only the status changes; the write is tracked in the managed
		// fields as one of subresource "status".
		merge = func(_ http.ResponseWriter, r *http.Request, in *writeInput, old runtime.Object) (runtime.Object, error) {
			live := old.DeepCopyObject()
			copyStatus(old, in.obj)
			accessor, _ := meta.Accessor(in.obj)
			oldAccessor, _ := meta.Accessor(old)
			oldAccessor.SetResourceVersion(accessor.GetResourceVersion())
			if uid := accessor.GetUID(); uid != "" {
				oldAccessor.SetUID(uid)
			}
			return h.patchers.of(q).Update(live, old, in.opts.(*metav1.UpdateOptions).FieldManager, r.UserAgent())
		}
	}
	return h.existingRoute(q, decode, merge)
}

// existingRoute is a write of an existing object: PUT, PATCH, status and
// scale. On every attempt it reads the stored object, merges the request
// into it, keeps the system fields, and stores it if the object has not
// changed meanwhile; an unconditional write that loses the race starts
// again from the newer object.
func (h *Handler) existingRoute(q *scope, decode func(http.ResponseWriter, *http.Request) (*writeInput, error), merge mergeFunc) *writeRoute {
	return &writeRoute{
		op:     admission.Update,
		kind:   q.res.GVK(),
		decode: decode,
		load: func(ctx context.Context, a *attempt) error {
			old, err := h.load(ctx, q, a.ref.name)
			if err != nil {
				return q.storageError(err, a.ref.name)
			}
			a.old = old
			return nil
		},
		build: func(_ context.Context, w http.ResponseWriter, r *http.Request, in *writeInput, a *attempt) error {
			next, err := merge(w, r, in, a.old.DeepCopyObject())
			if err != nil {
				return err
			}
			return h.prepareUpdate(q, a, next)
		},
		validate: func(_ context.Context, _ *writeInput, a *attempt) error { return validateUpdate(q, a.obj, a.old) },
		store:    h.storeUpdate(q),
		respond:  h.respondOne(http.StatusOK),
	}
}

// prepareUpdate readies next, the object an update makes of a.old, for
// admission: it holds to the resourceVersion and uid it names, and keeps
// what only the server changes.
func (h *Handler) prepareUpdate(q *scope, a *attempt, next runtime.Object) error {
	oldAccessor, err := meta.Accessor(a.old)
	if err != nil {
		return err
	}
	nextAccessor, err := meta.Accessor(next)
	if err != nil {
		return err
	}
	wantRV := nextAccessor.GetResourceVersion()
	if wantRV != "" && wantRV != oldAccessor.GetResourceVersion() {
		return q.storageError(storage.ErrConflict, q.name)
	}
	a.conditional = wantRV != ""
	if uid := nextAccessor.GetUID(); uid != "" && uid != oldAccessor.GetUID() {
		return apierrors.NewConflict(q.res.GroupResource(), q.name, fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, oldAccessor.GetUID()))
	}
	if nextAccessor.GetName() != q.name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", nextAccessor.GetName(), q.name))
	}
	// System fields stay as stored.
	nextAccessor.SetNamespace(oldAccessor.GetNamespace())
	nextAccessor.SetUID(oldAccessor.GetUID())
	nextAccessor.SetCreationTimestamp(oldAccessor.GetCreationTimestamp())
	nextAccessor.SetGeneration(oldAccessor.GetGeneration())
	nextAccessor.SetDeletionTimestamp(oldAccessor.GetDeletionTimestamp())
	nextAccessor.SetDeletionGracePeriodSeconds(oldAccessor.GetDeletionGracePeriodSeconds())
	nextAccessor.SetResourceVersion(oldAccessor.GetResourceVersion())
	if q.subresource == "" {
		if q.res.HasStatus() {
			// The status is written through its subresource only.
			copyStatus(next, a.old)
		}
		if q.res.Defaults != nil {
			q.res.Defaults(next)
		}
		if q.res.PrepareUpdate != nil {
			q.res.PrepareUpdate(next, a.old)
		}
	}
	if q.subresource != "status" && q.res.TracksGeneration && specChanged(next, a.old) {
		nextAccessor.SetGeneration(oldAccessor.GetGeneration() + 1)
	}
	a.obj = next
	return nil
}

// storeUpdate is the storage stage of an update: the object is stored if
// it is still at the revision read, or removed if that was its last
// finalizer; an unconditional update that lost a race is retried.
func (h *Handler) storeUpdate(q *scope) func(context.Context, *writeInput, *attempt) (runtime.Object, error) {
	return func(ctx context.Context, in *writeInput, a *attempt) (runtime.Object, error) {
		if in.dry {
			return a.obj, nil
		}
		accessor, err := meta.Accessor(a.obj)
		if err != nil {
			return nil, err
		}
		// The revision read, whatever admission made of the object's.
		oldAccessor, err := meta.Accessor(a.old)
		if err != nil {
			return nil, err
		}
		rev, _ := storage.ParseResourceVersion(oldAccessor.GetResourceVersion())
		if accessor.GetDeletionTimestamp() != nil && !finalizing(a.obj) && gracePeriodOver(accessor) {
			// The last finalizer is gone: the deletion completes.
			err = h.deleteStored(ctx, q, q.name, rev, a.old)
		} else {
			err = h.save(ctx, q, q.name, rev, a.old, a.obj)
		}
		if errors.Is(err, storage.ErrConflict) && !a.conditional {
			return nil, &retryError{err: q.storageError(err, q.name)}
		}
		if err != nil {
			return nil, q.storageError(err, q.name)
		}
		return a.obj, nil
	}
}

// validateUpdate checks an update, of the object or of its status.
func validateUpdate(q *scope, next, old runtime.Object) error {
	if q.subresource == "status" && q.res.ValidateStatus != nil {
		if errs := q.res.ValidateStatus(next, old); len(errs) > 0 {
			return apierrors.NewInvalid(q.res.GVK().GroupKind(), q.name, errs)
		}
		return nil
	}
	if q.subresource == "approval" {
		if q.res.ValidateApproval == nil {
			return apierrors.NewMethodNotSupported(q.res.GroupResource(), "update")
		}
		if errs := q.res.ValidateApproval(next, old); len(errs) > 0 {
			return apierrors.NewInvalid(q.res.GVK().GroupKind(), q.name, errs)
		}
		return nil
	}
	return registry.ValidateObject(q.res, next, old)
}

// gracePeriodOver reports whether nothing more waits on a deleted object:
// no grace period, or one of zero.
func gracePeriodOver(accessor metav1.Object) bool {
	g := accessor.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}

// copyStatus sets dst's Status field to src's. Objects without one are
// left alone.
func copyStatus(dst, src runtime.Object) {
	d := reflect.ValueOf(dst).Elem().FieldByName("Status")
	sv := reflect.ValueOf(src).Elem().FieldByName("Status")
	if d.IsValid() && sv.IsValid() && d.CanSet() && d.Type() == sv.Type() {
		d.Set(sv)
	}
}

// specChanged reports whether an object with a Spec had it changed, which
// is what increments metadata.generation.
func specChanged(obj, old runtime.Object) bool {
	a := reflect.ValueOf(obj).Elem().FieldByName("Spec")
	b := reflect.ValueOf(old).Elem().FieldByName("Spec")
	return a.IsValid() && b.IsValid() && !reflect.DeepEqual(a.Interface(), b.Interface())
}
