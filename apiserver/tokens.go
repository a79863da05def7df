package apiserver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/trustplane/trustplane/apiserver/authn"
	"github.com/trustplane/trustplane/apiserver/authn/serviceaccount"
	"github.com/trustplane/trustplane/apiserver/storage"
)

// Token lifetimes, as kube-apiserver's: a requested expiration below the
// minimum is refused; without one, a token lasts an hour.
const (
	MinTokenExpiration     = 10 * time.Minute
	DefaultTokenExpiration = time.Hour
)

var _ authn.ObjectGetter = cacheReader{}

// ServiceAccount reads a service account from its cache and, when the cache
// does not have it yet, from etcd.
func (cr cacheReader) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	obj, err := cr.object(ctx, serviceAccountsGR, namespace, name, func() runtime.Object { return &corev1.ServiceAccount{} })
	if err != nil || obj == nil {
		return nil, err
	}
	return obj.(*corev1.ServiceAccount), nil
}

// Bound returns the uid of the Pod, Secret or Node a token is bound to.
func (cr cacheReader) Bound(ctx context.Context, kind, namespace, name string) (types.UID, error) {
	var gr schema.GroupResource
	var newObj func() runtime.Object
	switch kind {
	case serviceaccount.KindPod:
		gr, newObj = schema.GroupResource{Resource: "pods"}, func() runtime.Object { return &corev1.Pod{} }
	case serviceaccount.KindSecret:
		gr, newObj = schema.GroupResource{Resource: "secrets"}, func() runtime.Object { return &corev1.Secret{} }
	case serviceaccount.KindNode:
		gr, newObj = schema.GroupResource{Resource: "nodes"}, func() runtime.Object { return &corev1.Node{} }
	default:
		return "", fmt.Errorf("tokens cannot be bound to a %s", kind)
	}
	obj, err := cr.object(ctx, gr, namespace, name, newObj)
	if err != nil || obj == nil {
		return "", err
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	return accessor.GetUID(), nil
}

// object reads an object from its cache, falling back to etcd for one the
// cache does not have yet; (nil, nil) when it does not exist.
func (cr cacheReader) object(ctx context.Context, gr schema.GroupResource, namespace, name string, newObj func() runtime.Object) (runtime.Object, error) {
	key := storage.Key(gr, namespace, name)
	// A cache that is slow to catch up with this server's writes leaves
	// the read to etcd.
	if cache := cr.caches[gr]; cache.Ready() && cache.CatchUp(ctx) == nil {
		if obj, err := cache.Get(ctx, key, -1); err == nil && obj != nil {
			return obj, nil
		}
	}
	obj := newObj()
	err := cr.store.Get(ctx, gr, key, obj)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	return obj, err
}

var serviceAccountsGR = schema.GroupResource{Resource: "serviceaccounts"}

var tokenRequestKind = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// tokenRoute issues a ServiceAccount token (serviceaccounts/token): for an
// existing service account, with audiences (the API server's by default),
// an expiration within the bounds, and optionally bound to a Pod, Secret
// or Node that exists.
func (s *Server) tokenRoute(q *restRequest) *writeRoute {
	decode := s.decodeCreate(tokenRequestKind, func() runtime.Object { return &authenticationv1.TokenRequest{} })
	return &writeRoute{
		op:   admission.Create,
		kind: tokenRequestKind,
		decode: func(w http.ResponseWriter, r *http.Request) (*writeInput, error) {
			in, err := decode(w, r)
			if err != nil {
				return nil, err
			}
			// The token is issued whatever dryRun says, as kube's
			// TokenREST does; so admission, which kube would tell it is
			// a dry run, is told it is not, lest a policy go easy on a
			// request that is not one.
			admitted := in.opts.(*metav1.CreateOptions).DeepCopy()
			admitted.DryRun = nil
			in.opts, in.dry = admitted, false
			return in, nil
		},
		build: takeRequestObject,
		validate: func(_ context.Context, _ *writeInput, a *attempt) error {
			return s.validateTokenRequest(q, a.obj.(*authenticationv1.TokenRequest))
		},
		store: func(ctx context.Context, _ *writeInput, a *attempt) (runtime.Object, error) {
			return s.issueToken(ctx, q, a.obj.(*authenticationv1.TokenRequest))
		},
		respond: s.respondOne(http.StatusCreated),
	}
}

// validateTokenRequest checks what a token request asks for: an
// expiration within the bounds, audiences that are not empty, and a bound
// object of a kind tokens can be bound to.
func (s *Server) validateTokenRequest(q *restRequest, tr *authenticationv1.TokenRequest) error {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	expiration := DefaultTokenExpiration
	if secs := tr.Spec.ExpirationSeconds; secs != nil {
		if *secs < 0 || *secs > math.MaxUint32 {
			return apierrors.NewInvalid(tokenRequestKind.GroupKind(), q.name, field.ErrorList{field.Invalid(spec.Child("expirationSeconds"), *secs, "out of range")})
		}
		expiration = time.Duration(*secs) * time.Second
	}
	if expiration < MinTokenExpiration {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), int64(expiration/time.Second), "may not specify a duration less than 10 minutes"))
	}
	if expiration > s.maxTokenExpiration {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), int64(expiration/time.Second), fmt.Sprintf("may not specify a duration longer than %d seconds", int64(s.maxTokenExpiration/time.Second))))
	}
	for i, a := range tr.Spec.Audiences {
		if a == "" {
			errs = append(errs, field.Invalid(spec.Child("audiences").Index(i), a, "may not be empty"))
		}
	}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		switch {
		case ref.Kind == "Pod" && ref.APIVersion == "v1", ref.Kind == "Secret" && ref.APIVersion == "v1", ref.Kind == "Node" && ref.APIVersion == "v1":
		default:
			errs = append(errs, field.NotSupported(spec.Child("boundObjectRef", "kind"), ref.APIVersion+"/"+ref.Kind, []string{"v1/Pod", "v1/Secret", "v1/Node"}))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(tokenRequestKind.GroupKind(), q.name, errs)
	}
	return nil
}

// issueToken signs the token a validated request asks for, once its
// service account and bound object are found.
func (s *Server) issueToken(ctx context.Context, q *restRequest, tr *authenticationv1.TokenRequest) (runtime.Object, error) {
	sa, err := s.reader.ServiceAccount(ctx, q.namespace, q.name)
	if err != nil {
		return nil, err
	}
	if sa == nil {
		return nil, apierrors.NewNotFound(serviceAccountsGR, q.name)
	}
	expiration := DefaultTokenExpiration
	if tr.Spec.ExpirationSeconds != nil {
		expiration = time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	}
	claims := serviceaccount.Claims{Namespace: q.namespace, Name: q.name, UID: sa.UID, Audiences: tr.Spec.Audiences}
	if len(claims.Audiences) == 0 {
		claims.Audiences = s.apiAudiences
	}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		ns := q.namespace
		if ref.Kind == "Node" {
			ns = ""
		}
		uid, err := s.reader.Bound(ctx, ref.Kind, ns, ref.Name)
		if err != nil {
			return nil, err
		}
		if uid == "" || (ref.UID != "" && ref.UID != uid) {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: lowerPlural(ref.Kind)}, ref.Name)
		}
		claims.Bound = &serviceaccount.BoundObject{Kind: ref.Kind, Name: ref.Name, UID: uid}
	}
	now := time.Now()
	claims.Expiry = now.Add(expiration)
	token, err := s.tokenIssuer.Issue(claims, now)
	if err != nil {
		return nil, err
	}
	tr.Namespace = q.namespace
	tr.Name = q.name
	tr.Spec.Audiences = claims.Audiences
	secs := int64(expiration / time.Second)
	tr.Spec.ExpirationSeconds = &secs
	tr.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(claims.Expiry)}
	return tr, nil
}

func lowerPlural(kind string) string {
	switch kind {
	case "Pod":
		return "pods"
	case "Secret":
		return "secrets"
	case "Node":
		return "nodes"
	}
	return kind
}
