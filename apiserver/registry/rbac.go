package registry

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// rbacResources are the kinds of rbac.authorization.k8s.io/v1.
func rbacResources() []*Resource {
	rbacGV := rbacv1.SchemeGroupVersion
	return []*Resource{
		{
			GVR: rbacGV.WithResource("clusterroles"), Kind: "ClusterRole", Singular: "clusterrole",
			NewObject:     func() runtime.Object { return &rbacv1.ClusterRole{} },
			NewList:       func() runtime.Object { return &rbacv1.ClusterRoleList{} },
			NameValidator: path.ValidatePathSegmentName,
			Validate: func(obj, _ runtime.Object) field.ErrorList {
				return validateRules(obj.(*rbacv1.ClusterRole).Rules, false, field.NewPath("rules"))
			},
		},
		{
			GVR: rbacGV.WithResource("clusterrolebindings"), Kind: "ClusterRoleBinding", Singular: "clusterrolebinding",
			NewObject:     func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
			NewList:       func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
			NameValidator: path.ValidatePathSegmentName,
			Validate: typed(func(b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
				var oldRef *rbacv1.RoleRef
				if old != nil {
					oldRef = &old.RoleRef
				}
				return validateBinding(b.RoleRef, oldRef, b.Subjects, false)
			}),
		},
		{
			GVR: rbacGV.WithResource("roles"), Kind: "Role", Singular: "role",
			Namespaced:    true,
			NewObject:     func() runtime.Object { return &rbacv1.Role{} },
			NewList:       func() runtime.Object { return &rbacv1.RoleList{} },
			NameValidator: path.ValidatePathSegmentName,
			Validate: func(obj, _ runtime.Object) field.ErrorList {
				return validateRules(obj.(*rbacv1.Role).Rules, true, field.NewPath("rules"))
			},
		},
		{
			GVR: rbacGV.WithResource("rolebindings"), Kind: "RoleBinding", Singular: "rolebinding",
			Namespaced:    true,
			NewObject:     func() runtime.Object { return &rbacv1.RoleBinding{} },
			NewList:       func() runtime.Object { return &rbacv1.RoleBindingList{} },
			NameValidator: path.ValidatePathSegmentName,
			Validate: typed(func(b, old *rbacv1.RoleBinding) field.ErrorList {
				var oldRef *rbacv1.RoleRef
				if old != nil {
					oldRef = &old.RoleRef
				}
				return validateBinding(b.RoleRef, oldRef, b.Subjects, true)
			}),
		},
	}
}
