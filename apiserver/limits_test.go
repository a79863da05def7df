package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeleteCollection(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	for _, cm := range []struct{ name, team string }{{"a", "x"}, {"b", "x"}, {"c", "y"}} {
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm.name, Labels: map[string]string{"team": cm.team}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.CoreV1().ConfigMaps("default").DeleteCollection(ctx, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, metav1.ListOptions{LabelSelector: "team=x"}); err != nil {
		t.Fatal(err)
	}
	if list, _ := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); len(list.Items) != 3 {
		t.Errorf("dry-run deletecollection left %d, want 3", len(list.Items))
	}
	if err := cs.CoreV1().ConfigMaps("default").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "team=x"}); err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "c" {
		t.Errorf("after deletecollection: %v %v, want only c", list, err)
	}
	alice := ts.clientset(t, &identity{user: "alice"})
	if err := alice.CoreV1().ConfigMaps("default").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("deletecollection without permission: %v, want Forbidden", err)
	}
}

func TestObjectAndWatchLimits(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxWatchesPerUser = 2 })
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	// Under the 3 MiB body limit, over the 1.5 MiB stored object limit.
	big := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "big"}}
	for i := range 24000 {
		big.Rules = append(big.Rules, rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{fmt.Sprintf("%064d", i)}})
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, big, metav1.CreateOptions{}); !apierrors.IsRequestEntityTooLargeError(err) {
		t.Errorf("create of a 1.8 MiB object: %v, want RequestEntityTooLarge", err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, "big", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the oversized object was stored: %v", err)
	}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := range 2 {
		w, err := cs.CoreV1().ConfigMaps("default").Watch(wctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
		defer w.Stop()
	}
	// client-go would retry a 429; a raw request sees it.
	resp, err := ts.httpClient(t, admin).Get(ts.url + "/api/v1/secrets?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, resp); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third watch of one user: %d %s, want 429 with Retry-After", resp.StatusCode, st.Message)
	}
	other := ts.clientset(t, scheduler)
	w, err := other.CoreV1().Namespaces().Watch(wctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("another user's watch: %v", err)
	} else {
		w.Stop()
	}
}
