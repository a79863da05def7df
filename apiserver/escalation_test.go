package apiserver

import (
	"fmt"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRBACEscalationIsRefused(t *testing.T) {
	ts := startServer(t)
	adminCS := ts.clientset(t, admin)
	ctx := testContext(t)
	if _, err := adminCS.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := func(ns, name, role, user string) error {
		_, err := adminCS.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}, metav1.CreateOptions{})
		return err
	}
	// dana administers the namespace team, and nothing else.
	if err := bind("team", "dana-admin", "admin", "dana"); err != nil {
		t.Fatal(err)
	}
	dana := ts.clientset(t, &identity{user: "dana"})
	eventually(t, "dana is admin of team", func() error {
		_, err := dana.CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{})
		return err
	})
	role := func(name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
		return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	}
	if _, err := dana.RbacV1().Roles("team").Create(ctx, role("readers", rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}), metav1.CreateOptions{}); err != nil {
		t.Errorf("a role within dana's rights: %v", err)
	}
	if _, err := dana.RbacV1().Roles("team").Create(ctx, role("everything", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a wildcard role beyond dana's rights: %v, want Forbidden", err)
	}
	rb := func(name, kind, roleName string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: roleName}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "eve"}}}
	}
	if _, err := dana.RbacV1().RoleBindings("team").Create(ctx, rb("eve-view", "ClusterRole", "view"), metav1.CreateOptions{}); err != nil {
		t.Errorf("binding view, within dana's rights: %v", err)
	}
	for name, b := range map[string]*rbacv1.RoleBinding{
		"cluster-admin":   rb("eve-root", "ClusterRole", "cluster-admin"),
		"a missing role":  rb("eve-ghost", "ClusterRole", "not-yet"),
		"the scheduler's": rb("eve-sched", "ClusterRole", "system:kube-scheduler"),
	} {
		if _, err := dana.RbacV1().RoleBindings("team").Create(ctx, b, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("binding %s: %v, want Forbidden", name, err)
		}
	}
	if _, err := dana.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dana-everywhere"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "dana"}}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("dana binding herself cluster-wide: %v, want Forbidden", err)
	}
	// The admin's namespaced rights do not reach other namespaces.
	if _, err := dana.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("dana outside team: %v, want Forbidden", err)
	}

	// With bind on cluster-admin, binding it is allowed without holding it.
	if _, err := adminCS.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bind-root"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"cluster-admin"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := bind("team", "dana-bind", "bind-root", "dana"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "dana binds cluster-admin with the bind verb", func() error {
		_, err := dana.RbacV1().RoleBindings("team").Create(ctx, rb("eve-root", "ClusterRole", "cluster-admin"), metav1.CreateOptions{})
		return err
	})

	rules, err := dana.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "team"}}, metav1.CreateOptions{})
	if err != nil || len(rules.Status.ResourceRules) == 0 || rules.Status.Incomplete {
		t.Errorf("dana's rules review: %+v %v", rules, err)
	}
}

// A role that spells out millions of permissions is refused before any
// escalation check expands it.
func TestHugeRolesAreRefused(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	many := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%d", prefix, i)
		}
		return out
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "huge"}, Rules: []rbacv1.PolicyRule{{Verbs: many("v", 200), APIGroups: many("g", 200), Resources: many("r", 200)}}}
	if _, err := cs.RbacV1().Roles("default").Create(ctx, role, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a role of 8,000,000 permissions: %v, want Invalid", err)
	}
}
