package handlers

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/trustplane/trustplane/apiserver/authn/serviceaccount"
)

// Token lifetimes, as kube-apiserver's: a requested expiration below the
// minimum is refused; without one, a token lasts an hour.
const (
	MinTokenExpiration     = 10 * time.Minute
	DefaultTokenExpiration = time.Hour
)

var tokenRequestKind = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// tokenRoute issues a ServiceAccount token (serviceaccounts/token): for an
// existing service account, with audiences (the API server's by default),
// an expiration within the bounds, and optionally bound to a Pod, Secret
// or Node that exists.
func (h *Handler) tokenRoute(q *scope) *writeRoute {
	decode := h.decodeCreate(tokenRequestKind, func() runtime.Object { return &authenticationv1.TokenRequest{} })
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
		build: func(_ context.Context, _ http.ResponseWriter, _ *http.Request, in *writeInput, a *attempt) error {
			// Admission sees the request as it will be answered: for
			// the URL's service account, the API server's audiences and
			// an hour unless it asks for others, and no status.
			tr := in.obj.(*authenticationv1.TokenRequest)
			tr.Namespace, tr.Name = q.namespace, q.name
			if len(tr.Spec.Audiences) == 0 {
				tr.Spec.Audiences = h.apiAudiences
			}
			if tr.Spec.ExpirationSeconds == nil {
				secs := int64(DefaultTokenExpiration / time.Second)
				tr.Spec.ExpirationSeconds = &secs
			}
			tr.Status = authenticationv1.TokenRequestStatus{}
			a.obj = tr
			return nil
		},
		validate: func(_ context.Context, _ *writeInput, a *attempt) error {
			return h.validateTokenRequest(q, a.obj.(*authenticationv1.TokenRequest))
		},
		store: func(ctx context.Context, _ *writeInput, a *attempt) (runtime.Object, error) {
			return h.issueToken(ctx, q, a.obj.(*authenticationv1.TokenRequest))
		},
		respond: h.respondOne(http.StatusCreated),
	}
}

// validateTokenRequest checks what a token request asks for: an
// expiration within the bounds, audiences that are not empty, and a bound
// object of a kind tokens can be bound to.
func (h *Handler) validateTokenRequest(q *scope, tr *authenticationv1.TokenRequest) error {
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
	if expiration > h.maxTokenExpiration {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), int64(expiration/time.Second), fmt.Sprintf("may not specify a duration longer than %d seconds", int64(h.maxTokenExpiration/time.Second))))
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
func (h *Handler) issueToken(ctx context.Context, q *scope, tr *authenticationv1.TokenRequest) (runtime.Object, error) {
	sa, err := h.reader.ServiceAccount(ctx, q.namespace, q.name)
	if err != nil {
		return nil, err
	}
	if sa == nil {
		return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), q.name)
	}
	// The defaults stage set the expiration and the audiences.
	expiration := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	claims := serviceaccount.Claims{Namespace: q.namespace, Name: q.name, UID: sa.UID, Audiences: tr.Spec.Audiences}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		ns := q.namespace
		if ref.Kind == "Node" {
			ns = ""
		}
		uid, err := h.reader.Bound(ctx, ref.Kind, ns, ref.Name)
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
	token, err := h.tokenIssuer.Issue(claims, now)
	if err != nil {
		return nil, err
	}
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
