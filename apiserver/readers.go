package apiserver

import (
	"context"
	"errors"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/trustplane/trustplane/admission"
	"github.com/trustplane/trustplane/apiserver/authn"
	"github.com/trustplane/trustplane/apiserver/authn/serviceaccount"
	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/rbac"
	"github.com/trustplane/trustplane/rbac/bootstrapper"
	"github.com/trustplane/trustplane/rbac/node"
)

// cacheReader gives the authorizer and the admission plugins reads of the
// objects they decide by from the watch caches, which follow etcd. A cache
// that is not following etcd answers with an error, so decisions that
// depend on it fail closed.
type cacheReader struct {
	store  *storage.Store
	caches map[schema.GroupResource]*storage.Cacher
}

var (
	_ rbac.Lister               = cacheReader{}
	_ rbac.SubjectLister        = cacheReader{}
	_ admission.NamespaceGetter = cacheReader{}
)

// subjectIndex indexes bindings by the subjects they name; nodeIndex
// indexes pods by the node they are bound to.
const (
	subjectIndex = "subjects"
	nodeIndex    = "node"
)

// indexPods adds the index the node authorizer reads through.
func indexPods(caches map[schema.GroupResource]*storage.Cacher) {
	caches[podsGR].AddIndex(nodeIndex, func(obj runtime.Object) []string {
		if n := obj.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	})
}

var podsGR = schema.GroupResource{Resource: "pods"}

var (
	_ node.PodLister      = cacheReader{}
	_ admission.PodGetter = cacheReader{}
)

// PodsOnNode reads the pods bound to a node, by index.
func (cr cacheReader) PodsOnNode(ctx context.Context, nodeName string) ([]*corev1.Pod, error) {
	if nodeName == "" {
		return nil, errors.New("pods on node: node name is empty")
	}
	return byIndex[*corev1.Pod](ctx, cr.caches[podsGR], nodeIndex, []string{nodeName})
}

// Pod reads a pod from its cache or, when the cache does not have it yet,
// from etcd; a missing pod is an API NotFound.
func (cr cacheReader) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	obj, err := cr.object(ctx, podsGR, namespace, name, func() runtime.Object { return &corev1.Pod{} })
	if err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, apierrors.NewNotFound(podsGR, name)
	}
	return obj.(*corev1.Pod), nil
}

// indexBindings adds the subject indexes the authorizer reads through.
func indexBindings(caches map[schema.GroupResource]*storage.Cacher) {
	caches[clusterRoleBindingsGR].AddIndex(subjectIndex, func(obj runtime.Object) []string {
		return rbac.BindingSubjectKeys(obj.(*rbacv1.ClusterRoleBinding).Subjects, "")
	})
	caches[roleBindingsGR].AddIndex(subjectIndex, func(obj runtime.Object) []string {
		b := obj.(*rbacv1.RoleBinding)
		keys := rbac.BindingSubjectKeys(b.Subjects, b.Namespace)
		for i := range keys {
			keys[i] = b.Namespace + "/" + keys[i]
		}
		return keys
	})
}

// ClusterRoleBindingsFor reads the cluster role bindings that name u, by
// index.
func (cr cacheReader) ClusterRoleBindingsFor(ctx context.Context, u user.Info) ([]*rbacv1.ClusterRoleBinding, error) {
	return byIndex[*rbacv1.ClusterRoleBinding](ctx, cr.caches[clusterRoleBindingsGR], subjectIndex, rbac.SubjectKeys(u))
}

// RoleBindingsFor reads the role bindings of namespace that name u, by
// index.
func (cr cacheReader) RoleBindingsFor(ctx context.Context, namespace string, u user.Info) ([]*rbacv1.RoleBinding, error) {
	if namespace == "" {
		return nil, errors.New("list role bindings: namespace is empty")
	}
	keys := rbac.SubjectKeys(u)
	for i := range keys {
		keys[i] = namespace + "/" + keys[i]
	}
	return byIndex[*rbacv1.RoleBinding](ctx, cr.caches[roleBindingsGR], subjectIndex, keys)
}

var (
	namespacesGR          = schema.GroupResource{Resource: "namespaces"}
	clusterRolesGR        = rbacv1.SchemeGroupVersion.WithResource("clusterroles").GroupResource()
	clusterRoleBindingsGR = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings").GroupResource()
	rolesGR               = rbacv1.SchemeGroupVersion.WithResource("roles").GroupResource()
	roleBindingsGR        = rbacv1.SchemeGroupVersion.WithResource("rolebindings").GroupResource()
)

// GetNamespace reads the namespace from the cache and, when the cache does
// not have it, from etcd: a namespace created a moment ago may not have
// reached the cache yet.
func (cr cacheReader) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	obj, err := cr.object(ctx, namespacesGR, "", name, func() runtime.Object { return &corev1.Namespace{} })
	if err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, apierrors.NewNotFound(namespacesGR, name)
	}
	return obj.(*corev1.Namespace), nil
}

func (cr cacheReader) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return visit[*rbacv1.ClusterRoleBinding](ctx, cr.caches[clusterRoleBindingsGR], storage.ListPrefix(clusterRoleBindingsGR, ""))
}

func (cr cacheReader) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	if namespace == "" {
		return nil, errors.New("list role bindings: namespace is empty")
	}
	return visit[*rbacv1.RoleBinding](ctx, cr.caches[roleBindingsGR], storage.ListPrefix(roleBindingsGR, namespace))
}

func (cr cacheReader) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	return cached[*rbacv1.ClusterRole](ctx, cr.caches[clusterRolesGR], storage.Key(clusterRolesGR, "", name))
}

func (cr cacheReader) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	return cached[*rbacv1.Role](ctx, cr.caches[rolesGR], storage.Key(rolesGR, namespace, name))
}

var _ authn.ObjectGetter = cacheReader{}

// ServiceAccount reads a service account from its cache and, when the cache
// does not have it yet, from etcd.
func (cr cacheReader) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	obj, err := cr.object(ctx, serviceAccountsGR, namespace, name, func() runtime.Object { return &corev1.ServiceAccount{} })
	if err != nil || obj == nil {
		return nil, err
	}
	return obj.(*corev1.ServiceAccount), nil
}

// Bound returns the uid of the Pod, Secret or Node a token is bound to.
func (cr cacheReader) Bound(ctx context.Context, kind, namespace, name string) (types.UID, error) {
	var gr schema.GroupResource
	var newObj func() runtime.Object
	switch kind {
	case serviceaccount.KindPod:
		gr, newObj = schema.GroupResource{Resource: "pods"}, func() runtime.Object { return &corev1.Pod{} }
	case serviceaccount.KindSecret:
		gr, newObj = schema.GroupResource{Resource: "secrets"}, func() runtime.Object { return &corev1.Secret{} }
	case serviceaccount.KindNode:
		gr, newObj = schema.GroupResource{Resource: "nodes"}, func() runtime.Object { return &corev1.Node{} }
	default:
		return "", fmt.Errorf("tokens cannot be bound to a %s", kind)
	}
	obj, err := cr.object(ctx, gr, namespace, name, newObj)
	if err != nil || obj == nil {
		return "", err
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	return accessor.GetUID(), nil
}

// object reads an object from its cache, falling back to etcd for one the
// cache does not have yet; (nil, nil) when it does not exist.
func (cr cacheReader) object(ctx context.Context, gr schema.GroupResource, namespace, name string, newObj func() runtime.Object) (runtime.Object, error) {
	key := storage.Key(gr, namespace, name)
	// A cache that is slow to catch up with this server's writes leaves
	// the read to etcd.
	if cache := cr.caches[gr]; cache.Ready() && cache.CatchUp(ctx) == nil {
		if obj, err := cache.Get(ctx, key, -1); err == nil && obj != nil {
			return obj, nil
		}
	}
	obj := newObj()
	err := cr.store.Get(ctx, gr, key, obj)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	return obj, err
}

var serviceAccountsGR = schema.GroupResource{Resource: "serviceaccounts"}

var _ authn.SecretGetter = cacheReader{}

// Secret reads a Secret from its cache and, when the cache does not have it
// yet, from etcd: a bootstrap token works as soon as its Secret is written.
func (cr cacheReader) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	obj, err := cr.object(ctx, secretsGR, namespace, name, func() runtime.Object { return &corev1.Secret{} })
	if err != nil || obj == nil {
		return nil, err
	}
	return obj.(*corev1.Secret), nil
}

var secretsGR = schema.GroupResource{Resource: "secrets"}

var _ bootstrapper.CSRGetter = cacheReader{}

// CertificateSigningRequest reads a CSR from its cache and, when the cache
// does not have it yet, from etcd: a bootstrap token reads the CSR it has
// just created.
func (cr cacheReader) CertificateSigningRequest(ctx context.Context, name string) (*certificatesv1.CertificateSigningRequest, error) {
	obj, err := cr.object(ctx, csrsGR, "", name, func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} })
	if err != nil || obj == nil {
		return nil, err
	}
	return obj.(*certificatesv1.CertificateSigningRequest), nil
}

var csrsGR = certificatesv1.Resource("certificatesigningrequests")

// The reads of the authorizers: each first catches the cache up with this
// server's own writes, so that a decision sees them, and fails with the
// cache when it is not following etcd.

// byIndex reads the objects of cache under any of keys of index, each
// once.
func byIndex[T runtime.Object](ctx context.Context, cache *storage.Cacher, index string, keys []string) ([]T, error) {
	if err := cache.CatchUp(ctx); err != nil {
		return nil, err
	}
	seen := map[runtime.Object]bool{}
	var out []T
	for _, key := range keys {
		err := cache.ByIndex(ctx, index, key, -1, func(obj runtime.Object) error {
			if !seen[obj] {
				seen[obj] = true
				out = append(out, obj.(T))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// visit reads every object of cache under prefix.
func visit[T runtime.Object](ctx context.Context, cache *storage.Cacher, prefix string) ([]T, error) {
	if err := cache.CatchUp(ctx); err != nil {
		return nil, err
	}
	var out []T
	_, err := cache.Visit(ctx, prefix, -1, func(obj runtime.Object) error {
		out = append(out, obj.(T))
		return nil
	})
	return out, err
}

// cached reads the object of cache at key; the zero T, a nil pointer,
// when there is none.
func cached[T runtime.Object](ctx context.Context, cache *storage.Cacher, key string) (T, error) {
	var zero T
	if err := cache.CatchUp(ctx); err != nil {
		return zero, err
	}
	obj, err := cache.Get(ctx, key, -1)
	if err != nil || obj == nil {
		return zero, err
	}
	return obj.(T), nil
}
