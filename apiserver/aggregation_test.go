package apiserver

import (
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClusterRoleAggregation(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	sel := map[string]string{"example.com/aggregate-to-reader": "true"}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader"}, AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: sel}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader-configmaps", Labels: sel}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "frank-reader"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "reader"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "frank"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	frank := ts.clientset(t, &identity{user: "frank"})
	eventually(t, "frank lists config maps through the aggregated role", func() error {
		_, err := frank.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		return err
	})
	if err := cs.RbacV1().ClusterRoles().Delete(ctx, "reader-configmaps", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the aggregated rule goes with its source", func() error {
		role, err := cs.RbacV1().ClusterRoles().Get(ctx, "reader", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(role.Rules) != 0 {
			return fmt.Errorf("rules %v", role.Rules)
		}
		return nil
	})
}
