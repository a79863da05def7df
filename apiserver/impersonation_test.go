package apiserver

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestImpersonation(t *testing.T) {
	ts := startServer(t)
	adminCS := ts.clientset(t, admin)
	ctx := testContext(t)
	as := func(id *identity, imp rest.ImpersonationConfig) *kubernetes.Clientset {
		cfg := ts.restConfig(t, id)
		cfg.Impersonate = imp
		return kubernetes.NewForConfigOrDie(cfg)
	}
	// carol may impersonate the user bob, and nothing else.
	if _, err := adminCS.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "impersonate-bob"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{"bob"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := adminCS.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "carol-bob"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "impersonate-bob"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "carol"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	carol := &identity{user: "carol"}
	tests := []struct {
		name  string
		id    *identity
		imp   rest.ImpersonationConfig
		allow bool
	}{
		{"admin as alice, who may list nothing", admin, rest.ImpersonationConfig{UserName: "alice"}, false},
		{"admin as a cluster admin", admin, rest.ImpersonationConfig{UserName: "x", Groups: []string{"trustplane:cluster-admins"}}, true},
		{"alice as admin", &identity{user: "alice"}, rest.ImpersonationConfig{UserName: "admin", Groups: []string{"trustplane:cluster-admins"}}, false},
		{"carol as bob in the admin group", carol, rest.ImpersonationConfig{UserName: "bob", Groups: []string{"trustplane:cluster-admins"}}, false},
		{"carol as bob with a uid", carol, rest.ImpersonationConfig{UserName: "bob", UID: "1"}, false},
		{"carol as bob with an extra", carol, rest.ImpersonationConfig{UserName: "bob", Extra: map[string][]string{"scopes": {"all"}}}, false},
		{"carol as a service account", carol, rest.ImpersonationConfig{UserName: "system:serviceaccount:default:builder"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := as(tt.id, tt.imp).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			if tt.allow && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tt.allow && !apierrors.IsForbidden(err) {
				t.Errorf("got %v, want Forbidden", err)
			}
		})
	}
	// carol as bob is allowed to impersonate, and then has bob's rights:
	// none.
	if _, err := as(carol, rest.ImpersonationConfig{UserName: "bob"}).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "bob"`) {
		t.Errorf("carol as bob: %v, want bob forbidden", err)
	}

	var found bool
	for _, ev := range readAuditLog(t, ts.auditLog) {
		if ev.User.Username == "carol" && ev.ImpersonatedUser != nil && ev.ImpersonatedUser.Username == "bob" {
			found = true
		}
	}
	if !found {
		t.Error("no audit event records carol impersonating bob")
	}
}
