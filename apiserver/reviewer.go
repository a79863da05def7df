package apiserver

import (
	"context"
	"log/slog"

	rbacv1 "k8s.io/api/rbac/v1"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/rbac"
)

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
