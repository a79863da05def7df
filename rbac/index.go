package rbac

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// SubjectLister is what a Lister may also offer: only the bindings that
// may name a user, found through an index of their subjects
// (BindingSubjectKeys) by the user's keys (SubjectKeys). The Authorizer
// then reads only those. It still matches every binding it gets against
// the user, so a SubjectLister may return more bindings than name the
// user, never fewer.
type SubjectLister interface {
	ClusterRoleBindingsFor(ctx context.Context, u user.Info) ([]*rbacv1.ClusterRoleBinding, error)
	RoleBindingsFor(ctx context.Context, namespace string, u user.Info) ([]*rbacv1.RoleBinding, error)
}

// SubjectKeys are the index values of the subjects that name u: its user
// name, each of its groups, and, for a service account, the account.
func SubjectKeys(u user.Info) []string {
	keys := []string{"User:" + u.GetName()}
	for _, g := range u.GetGroups() {
		keys = append(keys, "Group:"+g)
	}
	if ns, name, err := serviceaccount.SplitUsername(u.GetName()); err == nil {
		keys = append(keys, "ServiceAccount:"+ns+":"+name)
	}
	return keys
}

// BindingSubjectKeys are the index values of a binding's subjects; a
// ServiceAccount subject without a namespace is in the binding's.
func BindingSubjectKeys(subjects []rbacv1.Subject, namespace string) []string {
	var keys []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			keys = append(keys, "User:"+s.Name)
		case rbacv1.GroupKind:
			keys = append(keys, "Group:"+s.Name)
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = namespace
			}
			keys = append(keys, "ServiceAccount:"+ns+":"+s.Name)
		}
	}
	return keys
}
