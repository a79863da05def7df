package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/audit"
)

// notFound is kube-apiserver's answer for a path it does not serve.
func notFound() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotFound,
		Reason:  metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
	}}
}

// serveResource dispatches a resource request to its verb handler.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, info *request.RequestInfo) {
	res, ok := s.registry.Lookup(info.APIGroup, info.APIVersion, info.Resource)
	if !ok {
		s.respond.Error(w, r, notFound())
		return
	}
	if info.Subresource != "" {
		if _, ok := res.Subresource(info.Subresource); !ok || info.Name == "" {
			s.respond.Error(w, r, notFound())
			return
		}
	}
	namespace := info.Namespace
	if !res.Namespaced {
		// The request info names a namespace as its own namespace;
		// cluster-scoped objects have none.
		if info.Resource != "namespaces" && namespace != "" {
			s.respond.Error(w, r, notFound())
			return
		}
		namespace = ""
	} else if namespace == "" && info.Verb != "list" && info.Verb != "watch" {
		s.respond.Error(w, r, notFound())
		return
	}
	req := &restRequest{res: res, namespace: namespace, name: info.Name, subresource: info.Subresource}
	if res.Review != nil {
		if info.Verb != "create" {
			s.respond.Error(w, r, apierrors.NewMethodNotSupported(res.GroupResource(), info.Verb))
			return
		}
		s.write(w, r, req, s.reviewRoute(req))
		return
	}
	if info.Subresource != "" {
		s.serveSubresource(w, r, req, info.Verb)
		return
	}
	switch info.Verb {
	case "get":
		s.get(w, r, req)
	case "list":
		s.list(w, r, req)
	case "create":
		if info.Name != "" {
			s.respond.Error(w, r, apierrors.NewMethodNotSupported(res.GroupResource(), "create"))
			return
		}
		s.write(w, r, req, s.createRoute(req))
	case "update":
		s.write(w, r, req, s.updateRoute(req))
	case "patch":
		s.write(w, r, req, s.patchRoute(req))
	case "delete":
		s.write(w, r, req, s.deleteRoute(req))
	case "deletecollection":
		s.write(w, r, req, s.deleteCollectionRoute(req))
	case "watch":
		s.watch(w, r, req)
	default:
		s.respond.Error(w, r, apierrors.NewMethodNotSupported(res.GroupResource(), info.Verb))
	}
}

// serveSubresource dispatches a request for a subresource of an object.
func (s *Server) serveSubresource(w http.ResponseWriter, r *http.Request, q *restRequest, verb string) {
	sub, _ := q.res.Subresource(q.subresource)
	if !slices.Contains(sub.Verbs, verb) {
		s.respond.Error(w, r, apierrors.NewMethodNotSupported(q.res.GroupResource(), verb))
		return
	}
	switch {
	case q.subresource == "status" && verb == "get":
		s.get(w, r, q)
	case q.subresource == "status" && verb == "update", q.subresource == "finalize" && verb == "update":
		s.write(w, r, q, s.updateRoute(q))
	case q.subresource == "token" && verb == "create":
		s.write(w, r, q, s.tokenRoute(q))
	case q.subresource == "binding" && verb == "create":
		s.write(w, r, q, s.bindingRoute(q))
	case q.subresource == "scale" && verb == "get":
		s.getScale(w, r, q)
	case q.subresource == "scale" && verb == "update":
		s.write(w, r, q, s.updateScaleRoute(q))
	case q.subresource == "status" && verb == "patch":
		s.write(w, r, q, s.patchRoute(q))
	case q.subresource == "scale" && verb == "patch":
		s.write(w, r, q, s.patchScaleRoute(q))
	default:
		s.respond.Error(w, r, apierrors.NewMethodNotSupported(q.res.GroupResource(), verb))
	}
}

// restRequest is what the verb handlers need of a resource request.
type restRequest struct {
	res         *registry.Resource
	namespace   string
	name        string
	subresource string
}

// in is q for an object of another namespace: a deletecollection across
// namespaces deletes each object in its own.
func (q *restRequest) in(namespace string) *restRequest {
	if namespace == q.namespace {
		return q
	}
	one := *q
	one.namespace = namespace
	return &one
}

func (q *restRequest) key(name string) string {
	return storage.Key(q.res.GroupResource(), q.namespace, name)
}

// storageError turns a storage error into the API error naming the object.
func (q *restRequest) storageError(err error, name string) error {
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

func userFrom(ctx context.Context) user.Info {
	u, _ := request.UserFrom(ctx)
	return u
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, q *restRequest) {
	obj, err := s.load(r.Context(), q, q.name)
	if err != nil {
		s.respond.Error(w, r, q.storageError(err, q.name))
		return
	}
	s.respond.Object(w, r, http.StatusOK, obj)
}

// createRoute is POST of a new object.
func (s *Server) createRoute(q *restRequest) *writeRoute {
	return &writeRoute{
		op:     admission.Create,
		kind:   q.res.GVK(),
		decode: s.decodeCreate(q.res.GVK(), q.res.NewObject),
		build: func(_ context.Context, _ http.ResponseWriter, r *http.Request, in *writeInput, a *attempt) error {
			if q.res.Defaults != nil {
				q.res.Defaults(in.obj)
			}
			opts := in.opts.(*metav1.CreateOptions)
			var err error
			a.obj, err = s.prepareNew(r.Context(), q, in.obj, func(live runtime.Object) (runtime.Object, error) {
				return s.patchers.of(q).Update(nil, live, opts.FieldManager, r.UserAgent())
			})
			return err
		},
		validate: func(_ context.Context, _ *writeInput, a *attempt) error {
			return registry.ValidateObject(q.res, a.obj, nil)
		},
		store:   s.storeNew(q),
		respond: s.respondOne(http.StatusCreated),
	}
}

// prepareNew readies a new object for admission: the server sets its
// system fields and resets what a client may not set; track records the
// write in the object's managedFields.
func (s *Server) prepareNew(ctx context.Context, q *restRequest, obj runtime.Object, track func(runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
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
	return track(obj)
}

// storeNew is the storage stage of a create: the object is stored unless
// the request is a dry run.
func (s *Server) storeNew(q *restRequest) func(context.Context, *writeInput, *attempt) (runtime.Object, error) {
	return func(ctx context.Context, in *writeInput, a *attempt) (runtime.Object, error) {
		if in.dry {
			return a.obj, nil
		}
		name := a.name()
		if err := s.save(ctx, q, name, 0, a.obj); err != nil {
			return nil, q.storageError(err, name)
		}
		return a.obj, nil
	}
}

// checkNamespace makes the object's namespace agree with the URL's.
func checkNamespace(accessor metav1.Object, q *restRequest) error {
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
