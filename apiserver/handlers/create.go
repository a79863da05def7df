package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/audit"
)

// createRoute is POST of a new object.
func (h *Handler) createRoute(q *scope) *writeRoute {
	return &writeRoute{
		op:     admission.Create,
		kind:   q.res.GVK(),
		decode: h.decodeCreate(q.res.GVK(), q.res.NewObject),
		build: func(_ context.Context, _ http.ResponseWriter, r *http.Request, in *writeInput, a *attempt) error {
			if q.res.Defaults != nil {
				q.res.Defaults(in.obj)
			}
			opts := in.opts.(*metav1.CreateOptions)
			var err error
			a.obj, err = h.prepareNew(r.Context(), q, in.obj, func(live runtime.Object) (runtime.Object, error) {
				return h.patchers.of(q).Update(nil, live, opts.FieldManager, r.UserAgent())
			})
			return err
		},
		validate: func(_ context.Context, _ *writeInput, a *attempt) error {
			return registry.ValidateObject(q.res, a.obj, nil)
		},
		store:   h.storeNew(q),
		respond: h.respondOne(http.StatusCreated),
	}
}

// prepareNew readies a new object for admission: the server sets its
// system fields and resets what a client may not set; track records the
// write in the object's managedFields.
func (h *Handler) prepareNew(ctx context.Context, q *scope, obj runtime.Object, track func(runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if err := checkNamespace(accessor, q); err != nil {
		return nil, err
	}
	if accessor.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	if accessor.GetName() == "" && accessor.GetGenerateName() != "" {
		accessor.SetName(names.SimpleNameGenerator.GenerateName(accessor.GetGenerateName()))
	}
	audit.LogObjectName(ctx, accessor.GetName())
	// System fields are the server's to set.
	accessor.SetUID(types.UID(uuid.NewString()))
	accessor.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
	accessor.SetDeletionTimestamp(nil)
	accessor.SetDeletionGracePeriodSeconds(nil)
	accessor.SetGeneration(0)
	if q.res.TracksGeneration {
		accessor.SetGeneration(1)
	}
	if q.res.PrepareCreate != nil {
		q.res.PrepareCreate(obj)
	}
	if q.res.SetRequester != nil {
		q.res.SetRequester(obj, userFrom(ctx))
	}
	return track(obj)
}

// storeNew is the storage stage of a create: the object is stored unless
// the request is a dry run.
func (h *Handler) storeNew(q *scope) func(context.Context, *writeInput, *attempt) (runtime.Object, error) {
	return func(ctx context.Context, in *writeInput, a *attempt) (runtime.Object, error) {
		if in.dry {
			return a.obj, nil
		}
		name := a.name()
		if err := h.save(ctx, q, name, 0, nil, a.obj); err != nil {
			return nil, q.storageError(err, name)
		}
		return a.obj, nil
	}
}

// checkNamespace makes the object's namespace agree with the URL's.
func checkNamespace(accessor metav1.Object, q *scope) error {
	if !q.res.Namespaced {
		accessor.SetNamespace("")
		return nil
	}
	switch accessor.GetNamespace() {
	case "":
		accessor.SetNamespace(q.namespace)
	case q.namespace:
	default:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}
