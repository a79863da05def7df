package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/trustplane/trustplane/apiserver/storage"
)

// maxUpdateAttempts bounds retries of a server-side reconciliation that
// races with other writers.
const maxUpdateAttempts = 5

// buildFunc makes the object an update would store from the stored one.
// The resourceVersion of what it returns is the update's precondition: ""
// means unconditional.
type buildFunc func(old runtime.Object) (runtime.Object, error)

// update replaces an object with the request body (PUT), or with only the
// body's status for the status subresource.
func (s *Server) update(w http.ResponseWriter, r *http.Request, q *restRequest) {
	ctx := r.Context()
	opts, err := updateOptions(r)
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	obj, err := s.decodeObject(w, r, opts.FieldValidation, q.res)
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	auditRequestObject(ctx, obj)
	accessor, err := meta.Accessor(obj)
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	if accessor.GetName() != q.name {
		s.respond.error(w, r, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", accessor.GetName(), q.name)))
		return
	}
	if err := checkNamespace(accessor, q); err != nil {
		s.respond.error(w, r, err)
		return
	}
	build := func(old runtime.Object) (runtime.Object, error) {
		return s.patchers[q.res.gvr].Update(old, obj, opts.FieldManager, r.UserAgent())
	}
	switch q.subresource {
	case "finalize":
		// Only a namespace's spec.finalizers change.
		build = func(old runtime.Object) (runtime.Object, error) {
			next := old.(*corev1.Namespace).DeepCopy()
			next.Spec.Finalizers = obj.(*corev1.Namespace).Spec.Finalizers
			next.ResourceVersion = accessor.GetResourceVersion()
			return next, nil
		}
	case "status":
		build = func(old runtime.Object) (runtime.Object, error) {
			next := old.DeepCopyObject()
			copyStatus(next, obj)
			nextAccessor, _ := meta.Accessor(next)
			nextAccessor.SetResourceVersion(accessor.GetResourceVersion())
			if uid := accessor.GetUID(); uid != "" {
				nextAccessor.SetUID(uid)
			}
			return next, nil
		}
	}
	s.writeUpdate(w, r, q, build, opts, isDryRun(opts.DryRun))
}

// writeUpdate is every write of an existing object: PUT, PATCH, status and
// scale. In a compare-and-swap loop it reads the stored object, builds the
// new one, keeps the system fields, runs admission and validation and
// stores it if the object has not changed meanwhile. opts are the
// request's validated options, which admission sees; dry, whether they
// ask for a dry run.
func (s *Server) writeUpdate(w http.ResponseWriter, r *http.Request, q *restRequest, build buildFunc, opts runtime.Object, dry bool) {
	s.writeUpdateThen(w, r, q, build, opts, dry, func(obj runtime.Object) { s.respond.object(w, r, http.StatusOK, obj) })
}

// writeUpdateThen is writeUpdate with done answering the client with the
// written object.
func (s *Server) writeUpdateThen(w http.ResponseWriter, r *http.Request, q *restRequest, build buildFunc, opts runtime.Object, dry bool, done func(runtime.Object)) {
	ctx := r.Context()
	gr := q.res.groupResource()
	for {
		old, err := s.load(ctx, q, q.name)
		if err != nil {
			s.respond.error(w, r, q.storageError(err, q.name))
			return
		}
		oldAccessor, err := meta.Accessor(old)
		if err != nil {
			s.respond.error(w, r, err)
			return
		}
		next, err := build(old.DeepCopyObject())
		if err != nil {
			s.respond.error(w, r, err)
			return
		}
		nextAccessor, err := meta.Accessor(next)
		if err != nil {
			s.respond.error(w, r, err)
			return
		}
		wantRV := nextAccessor.GetResourceVersion()
		if wantRV != "" && wantRV != oldAccessor.GetResourceVersion() {
			s.respond.error(w, r, q.storageError(storage.ErrConflict, q.name))
			return
		}
		if uid := nextAccessor.GetUID(); uid != "" && uid != oldAccessor.GetUID() {
			s.respond.error(w, r, apierrors.NewConflict(gr, q.name, fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, oldAccessor.GetUID())))
			return
		}
		if nextAccessor.GetName() != q.name {
			s.respond.error(w, r, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", nextAccessor.GetName(), q.name)))
			return
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
			if q.res.hasStatus() {
				// The status is written through its subresource only.
				copyStatus(next, old)
			}
			if q.res.defaults != nil {
				q.res.defaults(next)
			}
			if q.res.prepareUpdate != nil {
				q.res.prepareUpdate(next, old)
			}
		}
		if q.subresource != "status" && q.res.tracksGeneration && specChanged(next, old) {
			nextAccessor.SetGeneration(oldAccessor.GetGeneration() + 1)
		}
		attrs := admission.NewAttributesRecord(next, old, q.res.gvk(), q.namespace, q.name, q.res.gvr, q.subresource, admission.Update, opts, dry, userFrom(ctx))
		if err := s.admit(ctx, attrs); err != nil {
			s.respond.error(w, r, err)
			return
		}
		if err := s.validateUpdate(ctx, q, next, old, attrs); err != nil {
			s.respond.error(w, r, err)
			return
		}
		if dry {
			done(next)
			return
		}
		rev, _ := storage.ParseResourceVersion(oldAccessor.GetResourceVersion())
		if nextAccessor.GetDeletionTimestamp() != nil && len(nextAccessor.GetFinalizers()) == 0 && gracePeriodOver(nextAccessor) {
			// The last finalizer is gone: the deletion completes.
			err = s.deleteStored(ctx, q, q.name, rev)
		} else {
			err = s.save(ctx, q, q.name, rev, next)
		}
		if errors.Is(err, storage.ErrConflict) && wantRV == "" && ctx.Err() == nil {
			// Unconditional: read the newer object and try again, as
			// kube-apiserver's GuaranteedUpdate, until the request's
			// deadline.
			continue
		}
		if err != nil {
			s.respond.error(w, r, q.storageError(err, q.name))
			return
		}
		done(next)
		return
	}
}

// validateUpdate checks an update, of the object or of its status.
func (s *Server) validateUpdate(ctx context.Context, q *restRequest, next, old runtime.Object, attrs admission.Attributes) error {
	if q.subresource == "binding" {
		// Binding sets spec.nodeName, which the pod's own update rules
		// forbid; the Binding itself was validated.
		return s.validateAdmission(ctx, attrs)
	}
	if q.subresource == "status" && q.res.validateStatus != nil {
		if errs := q.res.validateStatus(next, old); len(errs) > 0 {
			return apierrors.NewInvalid(q.res.gvk().GroupKind(), q.name, errs)
		}
		return s.validateAdmission(ctx, attrs)
	}
	return s.validate(ctx, q.res, next, old, attrs)
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
