package rbac

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// serviceAccountPrefix starts the username of every ServiceAccount:
// "system:serviceaccount:<namespace>:<name>".
const serviceAccountPrefix = "system:serviceaccount:"

// matchingSubject returns the first of subjects that u is, or nil.
// bindingNamespace is the namespace of a RoleBinding, "" for a
// ClusterRoleBinding; it is the default namespace of ServiceAccount subjects.
func matchingSubject(u user.Info, subjects []rbacv1.Subject, bindingNamespace string) *rbacv1.Subject {
	for i := range subjects {
		if subjectMatches(u, &subjects[i], bindingNamespace) {
			return &subjects[i]
		}
	}
	return nil
}

func subjectMatches(u user.Info, s *rbacv1.Subject, bindingNamespace string) bool {
	if s.Name == "" {
		return false
	}
	switch s.Kind {
	case rbacv1.UserKind:
		return rbacSubjectGroup(s.APIGroup) && u.GetName() == s.Name
	case rbacv1.GroupKind:
		if !rbacSubjectGroup(s.APIGroup) {
			return false
		}
		for _, g := range u.GetGroups() {
			if g == s.Name {
				return true
			}
		}
		return false
	case rbacv1.ServiceAccountKind:
		if s.APIGroup != "" {
			return false
		}
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		return isServiceAccount(u.GetName(), ns, s.Name)
	default:
		return false
	}
}

// rbacSubjectGroup reports whether g is a valid apiGroup for a User or Group
// subject. "" is accepted as kube does for objects written before the field
// was required.
func rbacSubjectGroup(g string) bool {
	return g == rbacv1.GroupName || g == ""
}

// isServiceAccount reports whether username is the ServiceAccount ns/name. A
// namespace or name holding ':' is refused rather than compared, since
// "system:serviceaccount:a:b:c" could then be either a/b:c or a:b/c; valid
// names never hold one.
func isServiceAccount(username, ns, name string) bool {
	if ns == "" || strings.Contains(ns, ":") || strings.Contains(name, ":") {
		return false
	}
	rest, ok := strings.CutPrefix(username, serviceAccountPrefix)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, ns)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, ":")
	return ok && rest == name
}

// describeSubject names s as kube's RBAC authorizer does in its reasons;
// a ServiceAccount is "name/namespace".
func describeSubject(s *rbacv1.Subject, bindingNamespace string) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}
