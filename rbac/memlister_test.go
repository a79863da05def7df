package rbac

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// memLister is a test-only Lister that holds RBAC objects in memory: a real
// implementation (lookup by name and namespace, nil for a missing object),
// not a script of answers. Lists keep insertion order.
type memLister struct {
	clusterRoles        map[string]*rbacv1.ClusterRole
	roles               map[string]*rbacv1.Role // key: namespace + "/" + name
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	roleBindings        []*rbacv1.RoleBinding
}

var _ Lister = (*memLister)(nil)

// newMemLister returns a memLister holding objs, each a *rbacv1.ClusterRole,
// Role, ClusterRoleBinding or RoleBinding. A nil binding is kept, to test
// that the authorizer skips it.
func newMemLister(t testing.TB, objs ...any) *memLister {
	t.Helper()
	l := &memLister{
		clusterRoles: map[string]*rbacv1.ClusterRole{},
		roles:        map[string]*rbacv1.Role{},
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			l.clusterRoles[o.Name] = o
		case *rbacv1.Role:
			l.roles[o.Namespace+"/"+o.Name] = o
		case *rbacv1.ClusterRoleBinding:
			l.clusterRoleBindings = append(l.clusterRoleBindings, o)
		case *rbacv1.RoleBinding:
			l.roleBindings = append(l.roleBindings, o)
		default:
			t.Fatalf("newMemLister: unsupported object %T", o)
		}
	}
	return l
}

// bootstrapLister holds BootstrapPolicy(), with aggregation applied as the
// API server applies it, and objs.
func bootstrapLister(t testing.TB, objs ...any) *memLister {
	t.Helper()
	roles, bindings := BootstrapPolicy()
	for _, agg := range AggregateClusterRoles(roles) {
		for i := range roles {
			if roles[i].Name == agg.Name {
				roles[i] = agg
			}
		}
	}
	all := make([]any, 0, len(roles)+len(bindings)+len(objs))
	for _, r := range roles {
		all = append(all, r)
	}
	for _, b := range bindings {
		all = append(all, b)
	}
	nsRoles, nsBindings := BootstrapNamespacedPolicy()
	for _, r := range nsRoles {
		all = append(all, r)
	}
	for _, b := range nsBindings {
		all = append(all, b)
	}
	return newMemLister(t, append(all, objs...)...)
}

func (l *memLister) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return append([]*rbacv1.ClusterRoleBinding(nil), l.clusterRoleBindings...), nil
}

func (l *memLister) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []*rbacv1.RoleBinding
	for _, b := range l.roleBindings {
		// As with client-go listers, "" lists every namespace.
		if b == nil || namespace == "" || b.Namespace == namespace {
			out = append(out, b)
		}
	}
	return out, nil
}

func (l *memLister) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.clusterRoles[name], nil
}

func (l *memLister) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.roles[namespace+"/"+name], nil
}

// leakyLister is a test-only Lister with a bug: ListRoleBindings returns the
// RoleBindings of every namespace. The authorizer must not let such a bug
// grant across namespaces.
type leakyLister struct{ *memLister }

var _ Lister = leakyLister{}

func (l leakyLister) ListRoleBindings(ctx context.Context, _ string) ([]*rbacv1.RoleBinding, error) {
	return l.memLister.ListRoleBindings(ctx, "")
}

// errStorage is what failLister returns for the calls it is told to fail.
var errStorage = errors.New("storage unavailable")

// failLister is a test-only Lister that fails the chosen calls with
// errStorage and passes the others to a memLister.
type failLister struct {
	next                    *memLister
	failClusterRoleBindings bool
	failRoleBindings        bool
	failAllClusterRoles     bool
	failClusterRoles        map[string]bool // by name, when not failAllClusterRoles
	failRoles               bool
}

var _ Lister = (*failLister)(nil)

// failAll fails every call.
func failAll(t testing.TB) *failLister {
	return &failLister{
		next:                    newMemLister(t),
		failClusterRoleBindings: true,
		failRoleBindings:        true,
		failAllClusterRoles:     true,
		failRoles:               true,
	}
}

func (l *failLister) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	if l.failClusterRoleBindings {
		return nil, errStorage
	}
	return l.next.ListClusterRoleBindings(ctx)
}

func (l *failLister) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	if l.failRoleBindings {
		return nil, errStorage
	}
	return l.next.ListRoleBindings(ctx, namespace)
}

func (l *failLister) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	if l.failAllClusterRoles || l.failClusterRoles[name] {
		return nil, fmt.Errorf("get %s: %w", name, errStorage)
	}
	return l.next.GetClusterRole(ctx, name)
}

func (l *failLister) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	if l.failRoles {
		return nil, errStorage
	}
	return l.next.GetRole(ctx, namespace, name)
}

// Builders for test objects and requests.

func testClusterRole(name string, rules ...ruleBuilder) *rbacv1.ClusterRole {
	cr := clusterRole(name, rules...)
	cr.Labels, cr.Annotations = nil, nil
	return cr
}

func testRole(namespace, name string, rules ...ruleBuilder) *rbacv1.Role {
	r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	for _, b := range rules {
		r.Rules = append(r.Rules, b.r)
	}
	return r
}

func testClusterRoleBinding(name, role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	b := clusterRoleBinding(name, role, subjects...)
	b.Labels, b.Annotations = nil, nil
	return b
}

// testRoleBinding binds kind ("Role" or "ClusterRole") role in namespace.
func testRoleBinding(namespace, name, kind, role string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
		Subjects:   subjects,
	}
}

func testUser(name string, groups ...string) *user.DefaultInfo {
	return &user.DefaultInfo{Name: name, Groups: groups}
}

// resourceRequest is a request for resource ("res" or "res/sub") in group.
// An empty namespace makes it cluster-scoped; an empty name makes it a
// collection request (list, watch, create, deletecollection).
func resourceRequest(u user.Info, verb, group, resource, namespace, name string) authorizer.AttributesRecord {
	res, sub, _ := strings.Cut(resource, "/")
	return authorizer.AttributesRecord{
		User:            u,
		Verb:            verb,
		APIGroup:        group,
		APIVersion:      "v1",
		Resource:        res,
		Subresource:     sub,
		Namespace:       namespace,
		Name:            name,
		ResourceRequest: true,
	}
}

// pathRequest is a non-resource request; verb is the lowercased HTTP method.
func pathRequest(u user.Info, verb, path string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, Path: path}
}
