package rbac

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// grant is one binding that applies to a user, with the rules of its role.
// Authorize, RulesFor and so ConfirmNoEscalation all see a user's
// permissions through visitGrants, so what the authorizer allows and what a
// user is said to hold cannot drift apart.
type grant struct {
	binding   string // name of the ClusterRoleBinding or RoleBinding
	namespace string // the RoleBinding's namespace; "" for a ClusterRoleBinding
	roleRef   rbacv1.RoleRef
	subject   *rbacv1.Subject // the subject of the binding that the user is
	// rules are the Lister's own: read them, never modify or return them.
	rules []rbacv1.PolicyRule
}

// allowReason is Authorize's reason for a request g allows, worded as kube's
// RBAC authorizer words it.
func (g *grant) allowReason() string {
	if g.namespace == "" {
		return fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of ClusterRole %q to %s",
			g.binding, g.roleRef.Name, describeSubject(g.subject, ""))
	}
	return fmt.Sprintf("RBAC: allowed by RoleBinding %q of %s %q to %s",
		g.binding+"/"+g.namespace, g.roleRef.Kind, g.roleRef.Name, describeSubject(g.subject, g.namespace))
}

// visitGrants calls visit with each binding that applies to u in namespace,
// in kube's order: every ClusterRoleBinding, then, when namespace is not "",
// the RoleBindings of that namespace. It stops as soon as visit returns
// false.
//
// A binding that is malformed (a roleRef outside rbac.authorization.k8s.io,
// a ClusterRoleBinding to a Role, a RoleBinding listed for another
// namespace) or whose role does not exist grants nothing and is skipped
// without error. A failure to read a binding list or a role is returned,
// wrapped with what was being read, and the walk goes on with what could be
// read; the caller decides what a partial view may mean.
func (a *Authorizer) visitGrants(ctx context.Context, u user.Info, namespace string, visit func(grant) bool) []error {
	var errs []error

	// Cluster-wide grants first: they apply to every namespace and to
	// cluster-scoped requests.
	subjects, indexed := a.lister.(SubjectLister)
	var crbs []*rbacv1.ClusterRoleBinding
	var err error
	if indexed {
		crbs, err = subjects.ClusterRoleBindingsFor(ctx, u)
	} else {
		crbs, err = a.lister.ListClusterRoleBindings(ctx)
	}
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
		rules, found, err := a.roleRules(ctx, "", b.RoleRef)
		if err != nil {
			errs = append(errs, fmt.Errorf("get cluster role %q of cluster role binding %q: %w", b.RoleRef.Name, b.Name, err))
			continue
		}
		if found && !visit(grant{binding: b.Name, roleRef: b.RoleRef, subject: subject, rules: rules}) {
			return errs
		}
	}

	// RoleBindings grant only inside their own namespace, so a cluster-scoped
	// request (namespace "") never reaches them, even one bound to a
	// ClusterRole.
	if namespace == "" {
		return errs
	}
	var rbs []*rbacv1.RoleBinding
	if indexed {
		rbs, err = subjects.RoleBindingsFor(ctx, namespace, u)
	} else {
		rbs, err = a.lister.ListRoleBindings(ctx, namespace)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("list role bindings in namespace %q: %w", namespace, err))
	}
	for _, b := range rbs {
		// A binding from another namespace would be a Lister bug; it must
		// not grant across namespaces.
		if b == nil || b.Namespace != namespace || b.RoleRef.APIGroup != rbacv1.GroupName {
			continue
		}
		if b.RoleRef.Kind != "Role" && b.RoleRef.Kind != "ClusterRole" {
			continue
		}
		subject := matchingSubject(u, b.Subjects, namespace)
		if subject == nil {
			continue
		}
		rules, found, err := a.roleRules(ctx, namespace, b.RoleRef)
		if err != nil {
			errs = append(errs, fmt.Errorf("get %s %q of role binding %q in namespace %q: %w", b.RoleRef.Kind, b.RoleRef.Name, b.Name, namespace, err))
			continue
		}
		if found && !visit(grant{binding: b.Name, namespace: namespace, roleRef: b.RoleRef, subject: subject, rules: rules}) {
			return errs
		}
	}
	return errs
}

// roleRules returns the rules of the role that ref names, seen from a
// binding in namespace, and whether that role exists. The caller has checked
// that ref.Kind is "Role" or "ClusterRole". The rules are the Lister's.
func (a *Authorizer) roleRules(ctx context.Context, namespace string, ref rbacv1.RoleRef) ([]rbacv1.PolicyRule, bool, error) {
	if ref.Kind == "Role" {
		role, err := a.lister.GetRole(ctx, namespace, ref.Name)
		if err != nil || role == nil {
			return nil, false, err
		}
		return role.Rules, true, nil
	}
	role, err := a.lister.GetClusterRole(ctx, ref.Name)
	if err != nil || role == nil {
		return nil, false, err
	}
	return role.Rules, true, nil
}

// RulesFor returns the rules that apply to u in namespace: those of the
// ClusterRoles bound by every ClusterRoleBinding u is a subject of, and, when
// namespace is not "", those of the roles bound by the RoleBindings of
// namespace that u is a subject of. It is kube's VisitRulesFor, and it sees
// exactly the bindings Authorize does: a request is allowed if and only if
// one of these rules matches it. The rules are copies, in the order Authorize
// visits them, not deduplicated.
//
// incomplete is true when some binding list or role could not be read; err
// then joins those failures (it is for the log, not the client) and rules
// holds what could be read. RBAC only adds grants, so a partial answer never
// overstates what u holds. A binding whose role does not exist contributes
// nothing and is not an error.
//
// It answers SelfSubjectRulesReview (with namespace the review's) and is what
// ConfirmNoEscalation measures a user against.
func (a *Authorizer) RulesFor(ctx context.Context, u user.Info, namespace string) (rules []rbacv1.PolicyRule, incomplete bool, err error) {
	if u == nil {
		return nil, true, errors.New("rbac: no user")
	}
	if err := ctx.Err(); err != nil {
		return nil, true, fmt.Errorf("rbac: %w", err)
	}
	errs := a.visitGrants(ctx, u, namespace, func(g grant) bool {
		for i := range g.rules {
			rules = append(rules, *g.rules[i].DeepCopy())
		}
		return true
	})
	if len(errs) > 0 {
		return rules, true, fmt.Errorf("rbac: %w", errors.Join(errs...))
	}
	return rules, false, nil
}

// ResolveRoleRef returns the rules of the role that a binding in namespace
// refers to: the Role namespace/ref.Name when ref.Kind is "Role", the
// ClusterRole ref.Name when it is "ClusterRole" (namespace is then only the
// binding's, "" for a ClusterRoleBinding). The rules are copies.
//
// When the role does not exist it returns nil, nil; when it exists the slice
// is non-nil, even for a role without rules, so that callers can tell the
// two apart. They must: kube refuses a binding to a role that does not exist
// unless the user may "bind" it, because whoever later creates a role of that
// name would otherwise hand its rules to the binding's subjects unchecked.
//
// A roleRef outside rbac.authorization.k8s.io, of another kind, or to a Role
// without a namespace refers to nothing Authorize would honour, and is an
// error rather than an empty answer.
func (a *Authorizer) ResolveRoleRef(ctx context.Context, namespace string, ref rbacv1.RoleRef) ([]rbacv1.PolicyRule, error) {
	if ref.APIGroup != rbacv1.GroupName {
		return nil, fmt.Errorf("rbac: roleRef apiGroup %q, want %q", ref.APIGroup, rbacv1.GroupName)
	}
	switch ref.Kind {
	case "ClusterRole":
	case "Role":
		if namespace == "" {
			return nil, fmt.Errorf("rbac: roleRef to Role %q outside a namespace", ref.Name)
		}
	default:
		return nil, fmt.Errorf("rbac: roleRef kind %q, want Role or ClusterRole", ref.Kind)
	}
	rules, found, err := a.roleRules(ctx, namespace, ref)
	if err != nil {
		if ref.Kind == "Role" {
			return nil, fmt.Errorf("rbac: get Role %q in namespace %q: %w", ref.Name, namespace, err)
		}
		return nil, fmt.Errorf("rbac: get ClusterRole %q: %w", ref.Name, err)
	}
	if !found {
		return nil, nil
	}
	out := make([]rbacv1.PolicyRule, len(rules))
	for i := range rules {
		rules[i].DeepCopyInto(&out[i])
	}
	return out, nil
}
