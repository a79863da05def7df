package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/trustplane/trustplane/apiserver/authn/serviceaccount"
	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/apiserver/responses"
	"github.com/trustplane/trustplane/apiserver/storage"
)

// TokenObjects reads what a token request names: its ServiceAccount, and
// the uid of the Pod, Secret or Node it is bound to ("" when missing).
type TokenObjects interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	Bound(ctx context.Context, kind, namespace, name string) (types.UID, error)
}

// Config is what the handlers need of the server.
type Config struct {
	Scheme   *runtime.Scheme
	Codecs   runtime.NegotiatedSerializer
	Registry *registry.Registry
	// Store reads and writes etcd; Caches are the watch caches of the
	// stored resources.
	Store  *storage.Store
	Caches map[schema.GroupResource]*storage.Cacher
	// Allocators store the objects of the resources that hold shares of
	// a range, in place of Store.
	Allocators map[schema.GroupResource]Allocator
	// ScaleTypes is the type converter for the Scale of the scale
	// subresources, which client-go's schema lacks.
	ScaleTypes managedfields.TypeConverter
	// Mutating and Validating are the admission chains.
	Mutating   admission.MutationInterface
	Validating admission.ValidationInterface
	// Reviewer answers the reviews.
	Reviewer registry.Reviewer
	// TokenIssuer signs the tokens of token requests, for APIAudiences
	// unless a request names others, lasting MaxTokenExpiration at most.
	TokenIssuer        *serviceaccount.Issuer
	TokenObjects       TokenObjects
	APIAudiences       []string
	MaxTokenExpiration time.Duration
	// MaxWatchesPerUser bounds the watches one user holds open.
	MaxWatchesPerUser int
	Responses         *responses.Writer
	Logger            *slog.Logger
	// Observe, when set, is told of each stage a write enters; tests use
	// it to check the order.
	Observe func(ctx context.Context, stage string)
}

// Handler serves the resource requests that passed the filters: the
// reads, and every write down the one write path, write.go's.
type Handler struct {
	scheme             *runtime.Scheme
	codecs             runtime.NegotiatedSerializer
	registry           *registry.Registry
	store              *storage.Store
	caches             map[schema.GroupResource]*storage.Cacher
	allocators         map[schema.GroupResource]Allocator
	patchers           *patchers
	mutating           admission.MutationInterface
	validating         admission.ValidationInterface
	objectInterfaces   admission.ObjectInterfaces
	reviewer           registry.Reviewer
	tokenIssuer        *serviceaccount.Issuer
	reader             TokenObjects
	apiAudiences       []string
	maxTokenExpiration time.Duration
	watches            *watchCounter
	encodings          *encodingCache
	respond            *responses.Writer
	logger             *slog.Logger
	observeWrite       func(ctx context.Context, stage string)
}

// New returns the handler of c; every dependency but Observe is required.
func New(c Config) (*Handler, error) {
	var errs []error
	if c.Scheme == nil || c.Codecs == nil || c.Registry == nil {
		errs = append(errs, errors.New("scheme, codecs and registry are required"))
	}
	if c.Store == nil || c.Caches == nil {
		errs = append(errs, errors.New("store and caches are required"))
	}
	if c.Mutating == nil || c.Validating == nil {
		errs = append(errs, errors.New("both admission chains are required"))
	}
	if c.Reviewer == nil || c.TokenIssuer == nil || c.TokenObjects == nil || len(c.APIAudiences) == 0 {
		errs = append(errs, errors.New("reviewer, token issuer, token objects and API audiences are required"))
	}
	if c.ScaleTypes == nil || c.Responses == nil || c.Logger == nil {
		errs = append(errs, errors.New("scale types, responses and logger are required"))
	}
	if c.MaxWatchesPerUser <= 0 || c.MaxTokenExpiration < MinTokenExpiration {
		errs = append(errs, fmt.Errorf("max watches per user %d must be positive and max token expiration %s at least %s", c.MaxWatchesPerUser, c.MaxTokenExpiration, MinTokenExpiration))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("handlers: %w", err)
	}
	p, err := newPatchers(c.Scheme, c.Registry, c.ScaleTypes)
	if err != nil {
		return nil, err
	}
	return &Handler{
		scheme:             c.Scheme,
		codecs:             c.Codecs,
		registry:           c.Registry,
		store:              c.Store,
		caches:             c.Caches,
		allocators:         c.Allocators,
		patchers:           p,
		mutating:           c.Mutating,
		validating:         c.Validating,
		objectInterfaces:   admission.NewObjectInterfacesFromScheme(c.Scheme),
		reviewer:           c.Reviewer,
		tokenIssuer:        c.TokenIssuer,
		reader:             c.TokenObjects,
		apiAudiences:       c.APIAudiences,
		maxTokenExpiration: c.MaxTokenExpiration,
		watches:            &watchCounter{max: c.MaxWatchesPerUser, byUser: map[string]int{}},
		encodings:          newEncodingCache(4096),
		respond:            c.Responses,
		logger:             c.Logger,
		observeWrite:       c.Observe,
	}, nil
}

// ServeResource dispatches a resource request to its verb handler.
func (h *Handler) ServeResource(w http.ResponseWriter, r *http.Request, info *request.RequestInfo) {
	res, ok := h.registry.Lookup(info.APIGroup, info.APIVersion, info.Resource)
	if !ok {
		h.respond.Error(w, r, responses.NotFound())
		return
	}
	if info.Subresource != "" {
		if _, ok := res.Subresource(info.Subresource); !ok || info.Name == "" {
			h.respond.Error(w, r, responses.NotFound())
			return
		}
	}
	namespace := info.Namespace
	if !res.Namespaced {
		// The request info names a namespace as its own namespace;
		// cluster-scoped objects have none.
		if info.Resource != "namespaces" && namespace != "" {
			h.respond.Error(w, r, responses.NotFound())
			return
		}
		namespace = ""
	} else if namespace == "" && info.Verb != "list" && info.Verb != "watch" {
		h.respond.Error(w, r, responses.NotFound())
		return
	}
	req := &scope{res: res, namespace: namespace, name: info.Name, subresource: info.Subresource}
	if res.Review != nil {
		if info.Verb != "create" {
			h.respond.Error(w, r, apierrors.NewMethodNotSupported(res.GroupResource(), info.Verb))
			return
		}
		h.write(w, r, req, h.reviewRoute(req))
		return
	}
	if info.Subresource != "" {
		h.serveSubresource(w, r, req, info.Verb)
		return
	}
	switch info.Verb {
	case "get":
		h.get(w, r, req)
	case "list":
		h.list(w, r, req)
	case "create":
		if info.Name != "" {
			h.respond.Error(w, r, apierrors.NewMethodNotSupported(res.GroupResource(), "create"))
			return
		}
		h.write(w, r, req, h.createRoute(req))
	case "update":
		h.write(w, r, req, h.updateRoute(req))
	case "patch":
		h.write(w, r, req, h.patchRoute(req))
	case "delete":
		h.write(w, r, req, h.deleteRoute(req))
	case "deletecollection":
		h.write(w, r, req, h.deleteCollectionRoute(req))
	case "watch":
		h.watch(w, r, req)
	default:
		h.respond.Error(w, r, apierrors.NewMethodNotSupported(res.GroupResource(), info.Verb))
	}
}

// serveSubresource dispatches a request for a subresource of an object.
func (h *Handler) serveSubresource(w http.ResponseWriter, r *http.Request, q *scope, verb string) {
	sub, _ := q.res.Subresource(q.subresource)
	if !slices.Contains(sub.Verbs, verb) {
		h.respond.Error(w, r, apierrors.NewMethodNotSupported(q.res.GroupResource(), verb))
		return
	}
	switch {
	case (q.subresource == "status" || q.subresource == "approval") && verb == "get":
		h.get(w, r, q)
	case q.subresource == "status" && verb == "update", q.subresource == "finalize" && verb == "update", q.subresource == "approval" && verb == "update":
		h.write(w, r, q, h.updateRoute(q))
	case q.subresource == "token" && verb == "create":
		h.write(w, r, q, h.tokenRoute(q))
	case q.subresource == "binding" && verb == "create":
		h.write(w, r, q, h.bindingRoute(q))
	case q.subresource == "scale" && verb == "get":
		h.getScale(w, r, q)
	case q.subresource == "scale" && verb == "update":
		h.write(w, r, q, h.updateScaleRoute(q))
	case q.subresource == "status" && verb == "patch":
		h.write(w, r, q, h.patchRoute(q))
	case q.subresource == "scale" && verb == "patch":
		h.write(w, r, q, h.patchScaleRoute(q))
	default:
		h.respond.Error(w, r, apierrors.NewMethodNotSupported(q.res.GroupResource(), verb))
	}
}

func userFrom(ctx context.Context) user.Info {
	u, _ := request.UserFrom(ctx)
	return u
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, q *scope) {
	obj, err := h.load(r.Context(), q, q.name)
	if err != nil {
		h.respond.Error(w, r, q.storageError(err, q.name))
		return
	}
	h.respond.Object(w, r, http.StatusOK, obj)
}
