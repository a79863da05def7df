package apiserver

import (
	"context"
	"log/slog"
	"net/http"

	rbacv1 "k8s.io/api/rbac/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/rbac"
)

// reviewRoute answers a review resource: create only, 201 with the
// review and its status.
func (s *Server) reviewRoute(q *restRequest) *writeRoute {
	kind := q.res.GVK()
	return &writeRoute{
		op:     admission.Create,
		kind:   kind,
		decode: s.decodeCreate(kind, q.res.NewObject),
		build:  takeRequestObject,
		validate: func(ctx context.Context, _ *writeInput, a *attempt) error {
			if q.res.Review.Validate == nil {
				return nil
			}
			if errs := q.res.Review.Validate(ctx, q.namespace, a.obj); len(errs) > 0 {
				return apierrors.NewInvalid(kind.GroupKind(), "", errs)
			}
			return nil
		},
		store: func(ctx context.Context, _ *writeInput, a *attempt) (runtime.Object, error) {
			return q.res.Review.Answer(ctx, s.reviewer, q.namespace, a.obj), nil
		},
		respond: s.respondOne(http.StatusCreated),
	}
}

// reviewer answers the reviews with the server's authorizers and token
// authenticator.
type reviewer struct {
	authorizer.Authorizer
	authenticator.Token
	rbac   *rbac.Authorizer
	logger *slog.Logger
}

var _ registry.Reviewer = reviewer{}

func (rv reviewer) RulesFor(ctx context.Context, u user.Info, namespace string) ([]rbacv1.PolicyRule, bool, error) {
	return rv.rbac.RulesFor(ctx, u, namespace)
}

func (rv reviewer) Logger() *slog.Logger { return rv.logger }
