package apiserver

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/trustplane/trustplane/admission"
	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/rbac"
)

// storeReader gives the authorizer and the admission plugins live reads of
// the objects they decide by, straight from etcd.
type storeReader struct {
	store *storage.Store
}

var (
	_ rbac.Lister               = storeReader{}
	_ admission.NamespaceGetter = storeReader{}
)

var (
	namespacesGR          = schema.GroupResource{Resource: "namespaces"}
	clusterRolesGR        = rbacv1.SchemeGroupVersion.WithResource("clusterroles").GroupResource()
	clusterRoleBindingsGR = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings").GroupResource()
	rolesGR               = rbacv1.SchemeGroupVersion.WithResource("roles").GroupResource()
	roleBindingsGR        = rbacv1.SchemeGroupVersion.WithResource("rolebindings").GroupResource()
)

func (sr storeReader) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	if err := sr.store.Get(ctx, namespacesGR, storage.Key(namespacesGR, "", name), ns); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, apierrors.NewNotFound(namespacesGR, name)
		}
		return nil, err
	}
	return ns, nil
}

func (sr storeReader) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	var out []*rbacv1.ClusterRoleBinding
	_, err := sr.store.List(ctx, clusterRoleBindingsGR, storage.ListPrefix(clusterRoleBindingsGR, ""),
		func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
		func(obj runtime.Object) error { out = append(out, obj.(*rbacv1.ClusterRoleBinding)); return nil })
	return out, err
}

func (sr storeReader) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	if namespace == "" {
		return nil, errors.New("list role bindings: namespace is empty")
	}
	var out []*rbacv1.RoleBinding
	_, err := sr.store.List(ctx, roleBindingsGR, storage.ListPrefix(roleBindingsGR, namespace),
		func() runtime.Object { return &rbacv1.RoleBinding{} },
		func(obj runtime.Object) error { out = append(out, obj.(*rbacv1.RoleBinding)); return nil })
	return out, err
}

func (sr storeReader) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	role := &rbacv1.ClusterRole{}
	return absentIsNil(role, sr.store.Get(ctx, clusterRolesGR, storage.Key(clusterRolesGR, "", name), role))
}

func (sr storeReader) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	role := &rbacv1.Role{}
	return absentIsNil(role, sr.store.Get(ctx, rolesGR, storage.Key(rolesGR, namespace, name), role))
}

func absentIsNil[T any](obj *T, err error) (*T, error) {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return obj, nil
}
