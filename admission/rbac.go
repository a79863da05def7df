package admission

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// EscalationChecker answers what RBAC grants a user.
type EscalationChecker interface {
	// ConfirmNoEscalation is nil if u holds every permission in rules
	// within namespace ("" cluster-wide).
	ConfirmNoEscalation(ctx context.Context, u user.Info, namespace string, rules []rbacv1.PolicyRule) error
	// ResolveRoleRef is the rules of a binding's role; nil without error
	// when the role does not exist.
	ResolveRoleRef(ctx context.Context, namespace string, ref rbacv1.RoleRef) ([]rbacv1.PolicyRule, error)
}

// RBACEscalation refuses RBAC writes that would grant more than the writer
// holds, as kube-apiserver does: a Role or ClusterRole only with every
// permission it grants or the escalate verb on it; a binding only with
// every permission of its role or the bind verb on that role; an
// aggregationRule only by a full cluster admin or with escalate.
type RBACEscalation struct {
	*admission.Handler
	authz   authorizer.Authorizer
	checker EscalationChecker
}

var _ admission.ValidationInterface = (*RBACEscalation)(nil)

// NewRBACEscalation returns the plugin; neither argument may be nil.
func NewRBACEscalation(authz authorizer.Authorizer, checker EscalationChecker) (*RBACEscalation, error) {
	if authz == nil || checker == nil {
		return nil, errors.New("rbac escalation admission: authorizer and checker are required")
	}
	return &RBACEscalation{Handler: admission.NewHandler(admission.Create, admission.Update), authz: authz, checker: checker}, nil
}

// everything is what a cluster admin holds.
var everything = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// Validate implements admission.ValidationInterface.
func (p *RBACEscalation) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().Group != rbacv1.GroupName || a.GetSubresource() != "" {
		return nil
	}
	u := a.GetUserInfo()
	ns := a.GetNamespace()
	switch obj := a.GetObject().(type) {
	case *rbacv1.Role:
		if p.allowed(ctx, u, "escalate", "roles", ns, obj.Name) {
			return nil
		}
		return p.deny(a, p.checker.ConfirmNoEscalation(ctx, u, ns, obj.Rules))
	case *rbacv1.ClusterRole:
		if p.allowed(ctx, u, "escalate", "clusterroles", "", obj.Name) {
			return nil
		}
		rules := obj.Rules
		if obj.AggregationRule != nil {
			var old *rbacv1.AggregationRule
			if o, ok := a.GetOldObject().(*rbacv1.ClusterRole); ok {
				old = o.AggregationRule
			}
			if old == nil || fmt.Sprint(old) != fmt.Sprint(obj.AggregationRule) {
				// Its selectors reach roles labelled later: only who
				// holds everything may set them.
				rules = everything
			}
		}
		return p.deny(a, p.checker.ConfirmNoEscalation(ctx, u, "", rules))
	case *rbacv1.RoleBinding:
		return p.checkBinding(ctx, a, u, ns, obj.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return p.checkBinding(ctx, a, u, "", obj.RoleRef)
	}
	return nil
}

func (p *RBACEscalation) checkBinding(ctx context.Context, a admission.Attributes, u user.Info, ns string, ref rbacv1.RoleRef) error {
	resource := "clusterroles"
	if ref.Kind == "Role" {
		resource = "roles"
	}
	// As kube-apiserver: the bind verb is asked in the binding's
	// namespace, so a namespaced grant of bind works for bindings there.
	if p.allowed(ctx, u, "bind", resource, ns, ref.Name) {
		return nil
	}
	rules, err := p.checker.ResolveRoleRef(ctx, ns, ref)
	if err != nil {
		// Not an API error: the server logs the cause and answers a
		// generic 500.
		return fmt.Errorf("rbac escalation admission: %w", err)
	}
	if rules == nil {
		// A binding to a role that does not exist would grant whatever
		// that role later holds.
		return admission.NewForbidden(a, fmt.Errorf("%s %q not found; binding it needs the bind verb on it", ref.Kind, ref.Name))
	}
	return p.deny(a, p.checker.ConfirmNoEscalation(ctx, u, ns, rules))
}

func (p *RBACEscalation) allowed(ctx context.Context, u user.Info, verb, resource, ns, name string) bool {
	d, _, _ := p.authz.Authorize(ctx, authorizer.AttributesRecord{
		User: u, Verb: verb, APIGroup: rbacv1.GroupName, Resource: resource, Namespace: ns, Name: name, ResourceRequest: true,
	})
	return d == authorizer.DecisionAllow
}

func (p *RBACEscalation) deny(a admission.Attributes, err error) error {
	if err == nil {
		return nil
	}
	return admission.NewForbidden(a, err)
}
