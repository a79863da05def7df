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

	var errs []error

	// Cluster-wide grants first: they apply to every namespace and to
	// cluster-scoped requests.
	crbs, err := a.lister.ListClusterRoleBindings(ctx)
	if err != nil {
		errs = append(errs, fmt.Errorf("list cluster role bindings: %w", err))
	}
	for _, b := range crbs {
		if b == nil || b.RoleRef.APIGroup != rbacv1.GroupName || b.RoleRef.Kind != "ClusterRole" {
			continue
		}
		subject := matchingSubject(u, b.Subjects, "")
		if subject == nil {
			continue
		}
		role, err := a.lister.GetClusterRole(ctx, b.RoleRef.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("get cluster role %q of cluster role binding %q: %w", b.RoleRef.Name, b.Name, err))
			continue
		}
		if role != nil && req.allowedByAny(role.Rules) {
			return authorizer.DecisionAllow, fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of ClusterRole %q to %s",
				b.Name, b.RoleRef.Name, describeSubject(subject, "")), nil
		}
	}

	// RoleBindings grant only inside their own namespace, so a cluster-scoped
	// request (namespace "") never reaches them, even one bound to a
	// ClusterRole.
	if ns := req.namespace; ns != "" {
		rbs, err := a.lister.ListRoleBindings(ctx, ns)
		if err != nil {
			errs = append(errs, fmt.Errorf("list role bindings in namespace %q: %w", ns, err))
		}
		for _, b := range rbs {
			// A binding from another namespace would be a Lister bug; it must
			// not grant across namespaces.
			if b == nil || b.Namespace != ns || b.RoleRef.APIGroup != rbacv1.GroupName {
				continue
			}
			if b.RoleRef.Kind != "Role" && b.RoleRef.Kind != "ClusterRole" {
				continue
			}
			subject := matchingSubject(u, b.Subjects, ns)
			if subject == nil {
				continue
			}
			rules, err := a.roleBindingRules(ctx, b)
			if err != nil {
				errs = append(errs, fmt.Errorf("get %s %q of role binding %q in namespace %q: %w", b.RoleRef.Kind, b.RoleRef.Name, b.Name, ns, err))
				continue
			}
			if req.allowedByAny(rules) {
				return authorizer.DecisionAllow, fmt.Sprintf("RBAC: allowed by RoleBinding %q of %s %q to %s",
					b.Name+"/"+ns, b.RoleRef.Kind, b.RoleRef.Name, describeSubject(subject, ns)), nil
			}
		}
	}

	if len(errs) > 0 {
		return authorizer.DecisionNoOpinion, "", fmt.Errorf("rbac: %w", errors.Join(errs...))
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// roleBindingRules returns the rules of the Role or ClusterRole that b refers
// to, or none when that role does not exist. The caller has checked the kind.
func (a *Authorizer) roleBindingRules(ctx context.Context, b *rbacv1.RoleBinding) ([]rbacv1.PolicyRule, error) {
	if b.RoleRef.Kind == "Role" {
		role, err := a.lister.GetRole(ctx, b.Namespace, b.RoleRef.Name)
		if err != nil || role == nil {
			return nil, err
		}
		return role.Rules, nil
	}
	role, err := a.lister.GetClusterRole(ctx, b.RoleRef.Name)
	if err != nil || role == nil {
		return nil, err
	}
	return role.Rules, nil
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
