package rbac

import (
	"cmp"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Grant is one way a subject may do something: the subject of a binding
// whose role allows the request.
type Grant struct {
	// Subject is as the binding names it, made explicit: the apiGroup of a
	// User or Group is always rbac.authorization.k8s.io, and a ServiceAccount
	// always has its namespace (a RoleBinding's own when it names none).
	Subject          rbacv1.Subject `json:"subject"`
	BindingKind      string         `json:"bindingKind"` // "ClusterRoleBinding" or "RoleBinding"
	BindingName      string         `json:"bindingName"`
	BindingNamespace string         `json:"bindingNamespace,omitempty"` // "" for a ClusterRoleBinding
	RoleKind         string         `json:"roleKind"`                   // "ClusterRole" or "Role"
	RoleName         string         `json:"roleName"`                   // a Role is in BindingNamespace
}

// WhoCan returns every subject granted attrs (verb, group, resource,
// subresource, name and namespace, or verb and non-resource path) by the
// given objects, with the binding that grants it, sorted by subject kind,
// namespace and name, then binding kind, namespace and name. attrs's user is
// ignored. A subject granted by several bindings appears once for each.
//
// It is the converse of [Authorizer.Authorize] over the same objects, and
// agrees with it: Authorize allows a user exactly when the user is one of
// the subjects returned. So it walks bindings as visitGrants does: every
// ClusterRoleBinding; when the request has a namespace, the RoleBindings of
// that namespace and no other, so a request with namespace "" (cluster-scoped,
// or across all namespaces) is granted only by ClusterRoleBindings. Rules are
// matched by the authorizer's own code, and only stored rules count (an
// aggregated ClusterRole grants what it holds, as for Authorize).
//
// What grants nothing is left out without error, as Authorize ignores it: a
// malformed roleRef, a binding whose role is not among the objects, a
// subject that no user can be (a ServiceAccount without a namespace in a
// ClusterRoleBinding, a wrong apiGroup, an unknown kind, an empty name), and
// nil objects. Names are unique within a kind and namespace, as in the API;
// should one repeat, the first object counts. WhoCan reads the objects and
// modifies none; the Subjects returned are copies.
func WhoCan(attrs authorizer.Attributes, clusterRoles []*rbacv1.ClusterRole, roles []*rbacv1.Role,
	clusterRoleBindings []*rbacv1.ClusterRoleBinding, roleBindings []*rbacv1.RoleBinding) []Grant {
	if attrs == nil {
		return nil
	}
	req := newRequest(attrs)

	// Whether each role allows the request, decided once per role.
	clusterRoleAllows := map[string]bool{}
	for _, r := range clusterRoles {
		if r == nil {
			continue
		}
		if _, seen := clusterRoleAllows[r.Name]; !seen {
			clusterRoleAllows[r.Name] = req.allowedByAny(r.Rules)
		}
	}
	type roleKey struct{ namespace, name string }
	roleAllows := map[roleKey]bool{}
	for _, r := range roles {
		if r == nil || r.Namespace != req.namespace {
			continue
		}
		k := roleKey{r.Namespace, r.Name}
		if _, seen := roleAllows[k]; !seen {
			roleAllows[k] = req.allowedByAny(r.Rules)
		}
	}

	var grants []Grant
	add := func(subjects []rbacv1.Subject, bindingKind, bindingName, bindingNamespace string, ref rbacv1.RoleRef) {
		for i := range subjects {
			s, ok := grantedSubject(&subjects[i], bindingNamespace)
			if !ok {
				continue
			}
			grants = append(grants, Grant{
				Subject:          s,
				BindingKind:      bindingKind,
				BindingName:      bindingName,
				BindingNamespace: bindingNamespace,
				RoleKind:         ref.Kind,
				RoleName:         ref.Name,
			})
		}
	}

	for _, b := range clusterRoleBindings {
		if b == nil || b.RoleRef.APIGroup != rbacv1.GroupName || b.RoleRef.Kind != "ClusterRole" {
			continue
		}
		if clusterRoleAllows[b.RoleRef.Name] {
			add(b.Subjects, "ClusterRoleBinding", b.Name, "", b.RoleRef)
		}
	}
	// RoleBindings grant only in their own namespace; a cluster-scoped
	// request is never granted by one, even one bound to a ClusterRole.
	if req.namespace != "" {
		for _, b := range roleBindings {
			if b == nil || b.Namespace != req.namespace || b.RoleRef.APIGroup != rbacv1.GroupName {
				continue
			}
			var allows bool
			switch b.RoleRef.Kind {
			case "ClusterRole":
				allows = clusterRoleAllows[b.RoleRef.Name]
			case "Role":
				allows = roleAllows[roleKey{b.Namespace, b.RoleRef.Name}]
			}
			if allows {
				add(b.Subjects, "RoleBinding", b.Name, b.Namespace, b.RoleRef)
			}
		}
	}

	slices.SortFunc(grants, compareGrants)
	// A binding that lists a subject twice (or once with apiGroup "" and
	// once with it spelled out) grants it once.
	return slices.Compact(grants)
}

// grantedSubject returns s made explicit (see [Grant]) and whether any user
// can be s in a binding in bindingNamespace. It asks the authorizer's own
// subjectMatches about the one identity that s describes, so that a subject
// is reported exactly when Authorize would match some user to it.
func grantedSubject(s *rbacv1.Subject, bindingNamespace string) (rbacv1.Subject, bool) {
	out := rbacv1.Subject{Kind: s.Kind, Name: s.Name}
	var u user.DefaultInfo
	switch s.Kind {
	case rbacv1.UserKind:
		out.APIGroup = rbacv1.GroupName
		u.Name = s.Name
	case rbacv1.GroupKind:
		out.APIGroup = rbacv1.GroupName
		u.Groups = []string{s.Name}
	case rbacv1.ServiceAccountKind:
		out.Namespace = s.Namespace
		if out.Namespace == "" {
			out.Namespace = bindingNamespace
		}
		u.Name = serviceAccountPrefix + out.Namespace + ":" + s.Name
	default:
		return rbacv1.Subject{}, false
	}
	return out, subjectMatches(&u, s, bindingNamespace)
}

func compareGrants(a, b Grant) int {
	return cmp.Or(
		cmp.Compare(a.Subject.Kind, b.Subject.Kind),
		cmp.Compare(a.Subject.Namespace, b.Subject.Namespace),
		cmp.Compare(a.Subject.Name, b.Subject.Name),
		cmp.Compare(a.BindingKind, b.BindingKind),
		cmp.Compare(a.BindingNamespace, b.BindingNamespace),
		cmp.Compare(a.BindingName, b.BindingName),
		cmp.Compare(a.RoleKind, b.RoleKind),
		cmp.Compare(a.RoleName, b.RoleName),
	)
}
