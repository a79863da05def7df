package rbac

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Lister reads RBAC objects live. A nil object with a nil error means the
// object does not exist. Implementations must be safe for concurrent use; the
// Authorizer does not modify what they return.
type Lister interface {
	ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error)
	// ListRoleBindings returns the RoleBindings of one namespace.
	ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error)
	GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error)
	GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error)
}

// Authorizer decides requests by RBAC, reading the RBAC objects on every call.
// It is safe for concurrent use when its Lister is.
type Authorizer struct {
	lister Lister
}

var _ authorizer.Authorizer = (*Authorizer)(nil)

// New returns an authorizer reading through l; a nil l is an error.
func New(l Lister) (*Authorizer, error) {
	if l == nil {
		return nil, errors.New("rbac: nil lister")
	}
	return &Authorizer{lister: l}, nil
}

// Authorize implements authorizer.Authorizer.
//
// It returns authorizer.DecisionAllow with a reason naming the binding, role
// and subject that matched, or authorizer.DecisionNoOpinion with an empty
// reason. The error, if any, joins the failures to read RBAC objects; it is
// only returned when the request was not allowed, and it is meant for the log,
// not for the client. A binding whose role does not exist grants nothing and is
// not an error.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs == nil {
		return authorizer.DecisionNoOpinion, "", errors.New("rbac: nil request attributes")
	}
	u := attrs.GetUser()
	if u == nil {
		return authorizer.DecisionNoOpinion, "", errors.New("rbac: request has no user")
	}
	if err := ctx.Err(); err != nil {
		return authorizer.DecisionNoOpinion, "", fmt.Errorf("rbac: %w", err)
	}
	req := newRequest(attrs)

	// The first binding whose role allows the request decides it. Failures
	// to read other bindings do not matter then: RBAC only adds grants.
	var allowedBy grant
	allowed := false
	errs := a.visitGrants(ctx, u, req.namespace, func(g grant) bool {
		if req.allowedByAny(g.rules) {
			allowedBy, allowed = g, true
			return false
		}
		return true
	})
	if allowed {
		return authorizer.DecisionAllow, allowedBy.allowReason(), nil
	}
	if len(errs) > 0 {
		return authorizer.DecisionNoOpinion, "", fmt.Errorf("rbac: %w", errors.Join(errs...))
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// ConditionsAwareAuthorize implements authorizer.Authorizer. RBAC has no
// conditions: the decision is exactly the one Authorize returns.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions implements authorizer.Authorizer. RBAC never returns a
// conditional decision, so it has none to evaluate and denies.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
