package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/trustplane/trustplane/e2e/e2etest"
	"github.com/trustplane/trustplane/rbac"
)

// A namespace of a thousand objects, some held by finalizers, is emptied
// by the namespace controller through the API: each object is deleted as
// a client would delete it, those with finalizers wait for them (and the
// namespace with them, saying so), and once they are gone the namespace
// goes. One created again under its name starts empty.
func TestNamespaceDeletion(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t)
	admin, _ := clientFor(t, c.AdminConf())
	ctx := t.Context()
	const ns = "big"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.WaitForServiceAccount(t, ns)
	held := map[string]bool{"held-0": true, "held-1": true, "held-2": true}
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	sem := make(chan struct{}, 16)
	for i := range 1000 {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var err error
			switch {
			case i < 3:
				_, err = admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("held-%d", i), Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{})
			case i < 900:
				_, err = admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			case i < 990:
				_, err = admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i)}, Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{})
			case i < 995:
				_, err = admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i)}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}}}, metav1.CreateOptions{})
			default:
				_, err = admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r-%d", i)}}, metav1.CreateOptions{})
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	if err := admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "all but the held ConfigMaps deleted, and the namespace saying why it waits", func(ctx context.Context) error {
		cms, err := admin.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, cm := range cms.Items {
			if !held[cm.Name] {
				return fmt.Errorf("%d ConfigMaps left, %s among them", len(cms.Items), cm.Name)
			}
		}
		for _, list := range []func() (int, error){
			func() (int, error) {
				l, err := admin.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
				return len(l.Items), err
			},
			func() (int, error) {
				l, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				return len(l.Items), err
			},
			func() (int, error) {
				l, err := admin.RbacV1().Roles(ns).List(ctx, metav1.ListOptions{})
				return len(l.Items), err
			},
		} {
			if n, err := list(); err != nil || n > 0 {
				return fmt.Errorf("%d objects left: %v", n, err)
			}
		}
		got, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == "NamespaceFinalizersRemaining" && cond.Status == corev1.ConditionTrue && strings.Contains(cond.Message, "example.com/hold in 3 resource instances") {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", got.Status.Conditions)
	})
	for name := range held {
		cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.DeletionTimestamp == nil {
			t.Errorf("%s is not being deleted", name)
		}
		cm.Finalizers = nil
		if _, err := admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the namespace gone", func(ctx context.Context) error {
		_, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errors.New("still there")
	})
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if l, err := admin.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) > 0 {
		t.Errorf("the namespace created again holds %d Secrets: %v", len(l.Items), err)
	}

	// Every delete went through the API as the namespace controller.
	deleters := map[string]int{}
	for _, ev := range readAudit(t, c.AuditLog()) {
		if ev.ObjectRef != nil && ev.ObjectRef.Namespace == ns && (ev.Verb == "deletecollection" || ev.Verb == "delete") && ev.ObjectRef.Resource != "namespaces" {
			deleters[ev.User.Username]++
		}
	}
	if want := rbac.ControllerUser("namespace-controller"); deleters[want] == 0 || len(deleters) != 1 {
		t.Errorf("deletes in the namespace by %v, want by %s only", deleters, want)
	}
}

// The namespace controller's token deletes; it does not create, nor read
// a Secret's data. It deletes and finalizes only in a namespace being
// deleted: in kube-system (live) it cannot delete a ConfigMap, the
// controller manager's tokens RoleBinding (one by one or as a
// collection), a controller's ServiceAccount or the manager's Lease, nor
// mark the namespace Terminating or finalize it; each stays as it was.
// In a namespace being deleted the same token deletes and writes status.
func TestNamespaceControllerIdentity(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t, "--controllers=false")
	admin, adminCfg := clientFor(t, c.AdminConf())
	ctx := t.Context()
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Data: map[string][]byte{"k": []byte("value-never-listed")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nc := tokenClient(t, admin, adminCfg, "namespace-controller")
	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
		}
	}
	_, err := nc.CoreV1().Secrets("default").Get(ctx, "db", metav1.GetOptions{})
	forbidden("the namespace controller gets a Secret", err)
	listsMetadataOnly(t, nc, "default", "value-never-listed")
	_, err = nc.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	forbidden("the namespace controller creates a pod", err)
	_, err = nc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	forbidden("the namespace controller creates a namespace", err)
	err = nc.CoreV1().Namespaces().Delete(ctx, "default", metav1.DeleteOptions{})
	forbidden("the namespace controller deletes a namespace", err)

	namespaceControllerOnlyInDeleted(t, admin, nc)
}

// namespaceControllerOnlyInDeleted checks that nc, the namespace
// controller's client, is refused by admission in a live namespace and
// admitted in one being deleted (the controller manager is not running,
// so the namespace stays Terminating).
func namespaceControllerOnlyInDeleted(t *testing.T, admin, nc kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	const sys = metav1.NamespaceSystem
	notDeleted := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "namespace "+sys+" is not being deleted") {
			t.Errorf("%s: %v, want Forbidden: namespace %s is not being deleted", what, err, sys)
		}
	}
	if _, err := admin.CoreV1().ConfigMaps(sys).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const tokens = "system:kube-controller-manager:tokens"
	notDeleted("the namespace controller deletes a ConfigMap in kube-system",
		nc.CoreV1().ConfigMaps(sys).Delete(ctx, "settings", metav1.DeleteOptions{}))
	notDeleted("the namespace controller deletes the tokens RoleBinding",
		nc.RbacV1().RoleBindings(sys).Delete(ctx, tokens, metav1.DeleteOptions{}))
	notDeleted("the namespace controller deletes kube-system's RoleBindings",
		nc.RbacV1().RoleBindings(sys).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	notDeleted("the namespace controller deletes a controller's ServiceAccount",
		nc.CoreV1().ServiceAccounts(sys).Delete(ctx, rbac.NamespaceControllerServiceAccount, metav1.DeleteOptions{}))
	// The controller manager is off: its Lease is made here.
	if _, err := admin.CoordinationV1().Leases(sys).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: rbac.ControllerManagerLease}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	notDeleted("the namespace controller deletes kube-system's Leases",
		nc.CoordinationV1().Leases(sys).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))

	live, err := admin.CoreV1().Namespaces().Get(ctx, sys, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	marked := live.DeepCopy()
	marked.Status.Phase = corev1.NamespaceTerminating
	_, err = nc.CoreV1().Namespaces().UpdateStatus(ctx, marked, metav1.UpdateOptions{})
	notDeleted("the namespace controller marks kube-system Terminating", err)
	finalized := live.DeepCopy()
	finalized.Spec.Finalizers = nil
	_, err = nc.CoreV1().Namespaces().Finalize(ctx, finalized, metav1.UpdateOptions{})
	notDeleted("the namespace controller finalizes kube-system", err)

	// Each is as it was: the refusal came before storage.
	if _, err := admin.CoreV1().ConfigMaps(sys).Get(ctx, "settings", metav1.GetOptions{}); err != nil {
		t.Errorf("the ConfigMap: %v", err)
	}
	if _, err := admin.RbacV1().RoleBindings(sys).Get(ctx, tokens, metav1.GetOptions{}); err != nil {
		t.Errorf("the tokens RoleBinding: %v", err)
	}
	if _, err := admin.CoreV1().ServiceAccounts(sys).Get(ctx, rbac.NamespaceControllerServiceAccount, metav1.GetOptions{}); err != nil {
		t.Errorf("the namespace controller's ServiceAccount: %v", err)
	}
	if _, err := admin.CoordinationV1().Leases(sys).Get(ctx, rbac.ControllerManagerLease, metav1.GetOptions{}); err != nil {
		t.Errorf("the controller manager's Lease: %v", err)
	}
	if got, err := admin.CoreV1().Namespaces().Get(ctx, sys, metav1.GetOptions{}); err != nil || got.Status.Phase != corev1.NamespaceActive || !slices.Equal(got.Spec.Finalizers, live.Spec.Finalizers) {
		t.Errorf("kube-system after the controller's writes: %v %+v", err, got)
	}

	// A namespace being deleted: the controller manager is off, so its
	// "kubernetes" finalizer holds it Terminating.
	const doomed = "doomed"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: doomed}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := admin.CoreV1().ConfigMaps(doomed).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.CoreV1().ConfigMaps(doomed).Delete(ctx, "a", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "namespace "+doomed+" is not being deleted") {
		t.Errorf("the namespace controller deletes in a live namespace: %v, want Forbidden", err)
	}
	if err := admin.CoreV1().Namespaces().Delete(ctx, doomed, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nc.CoreV1().ConfigMaps(doomed).Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Errorf("the namespace controller deletes in a namespace being deleted: %v", err)
	}
	if err := nc.CoreV1().ConfigMaps(doomed).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Errorf("the namespace controller deletes a collection in a namespace being deleted: %v", err)
	}
	ns, err := admin.CoreV1().Namespaces().Get(ctx, doomed, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Status.Conditions = append(ns.Status.Conditions, corev1.NamespaceCondition{Type: "NamespaceContentRemaining", Status: corev1.ConditionFalse, Reason: "ContentDeleted", Message: "All content successfully removed"})
	if _, err := nc.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Errorf("the namespace controller writes the status of a namespace being deleted: %v", err)
	}
}
