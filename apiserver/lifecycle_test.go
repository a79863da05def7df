package apiserver

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestFinalizersHoldDeletion(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	const fin = "example.com/hold"

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{fin}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("held").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Finalizers: []string{fin}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The config map waits for its finalizer.
	if err := cs.CoreV1().ConfigMaps("held").Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := cs.CoreV1().ConfigMaps("held").Get(ctx, "c", metav1.GetOptions{})
	if err != nil || cm.DeletionTimestamp == nil {
		t.Fatalf("config map after delete: %v %v, want it kept with a deletionTimestamp", cm, err)
	}
	cm.Finalizers = append(cm.Finalizers, "example.com/late")
	if _, err := cs.CoreV1().ConfigMaps("held").Update(ctx, cm, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("adding a finalizer to an object being deleted: %v, want Invalid", err)
	}
	cm.Finalizers = nil
	if _, err := cs.CoreV1().ConfigMaps("held").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("held").Get(ctx, "c", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("config map after its last finalizer: %v, want NotFound", err)
	}

	// The namespace terminates: no new content, then it goes with what
	// is in it once its finalizers are removed.
	if _, err := cs.CoreV1().ConfigMaps("held").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "held", metav1.GetOptions{})
	if err != nil || ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil {
		t.Fatalf("namespace after delete: %+v %v, want Terminating", ns, err)
	}
	if _, err := cs.CoreV1().ConfigMaps("held").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "e"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("create in a terminating namespace: %v, want Forbidden", err)
	}
	ns.Finalizers = nil
	if ns, err = cs.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Its "kubernetes" finalizer holds it until the namespace controller
	// has emptied it; none runs here. Finalized by hand, it goes, and
	// what was left in it with it.
	if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		t.Fatalf("namespace after its own finalizers: %+v, want it held by spec.finalizers", ns)
	}
	ns.Spec.Finalizers = nil
	if _, err := cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace after its finalizers: %v, want NotFound", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("held").Get(ctx, "d", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("content of the deleted namespace: %v, want NotFound", err)
	}
}

func TestStatusSubresource(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "st"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cond := corev1.NamespaceCondition{Type: "Example", Status: corev1.ConditionTrue}
	ns.Status.Conditions = []corev1.NamespaceCondition{cond}
	ns.Labels["via"] = "main"
	updated, err := cs.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(updated.Status.Conditions) != 0 || updated.Labels["via"] != "main" {
		t.Errorf("main update: status %+v labels %v; want the status ignored and the label kept", updated.Status, updated.Labels)
	}
	updated.Status.Conditions = []corev1.NamespaceCondition{cond}
	updated.Labels["via"] = "status"
	st, err := cs.CoreV1().Namespaces().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Status.Conditions) != 1 || st.Labels["via"] != "main" {
		t.Errorf("status update: status %+v labels %v; want the condition and the label unchanged", st.Status, st.Labels)
	}
	alice := ts.clientset(t, &identity{user: "alice"})
	if _, err := alice.CoreV1().Namespaces().UpdateStatus(ctx, st, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("status update without permission: %v, want Forbidden", err)
	}
}

// A request that follows an answered write sees it, though the watch
// caches learn of it a moment later: a namespace deleted is terminating
// for the next create, a ServiceAccount deleted refuses its token at once,
// a RoleBinding created or deleted decides the next request.
func TestNextRequestSeesTheWrite(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	for i := range 20 {
		ns := fmt.Sprintf("gone-%d", i)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "sa", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().ServiceAccounts(ns).Delete(ctx, "sa", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := ts.server.tokenAuthn.AuthenticateToken(ctx, tr.Status.Token); ok {
			t.Errorf("%s: the token of a ServiceAccount just deleted was accepted", ns)
		}
		// A binding is in force for the next request, and so is its removal.
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "rita"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "rita"}}}
		if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rita := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "rita", Groups: []string{user.AllAuthenticated}}, Verb: "list", Resource: "configmaps", Namespace: ns, ResourceRequest: true}
		if d, _, err := ts.server.authz.Authorize(ctx, rita); d != authorizer.DecisionAllow {
			t.Errorf("%s: just after the binding's create: %v %v, want allowed", ns, d, err)
		}
		if err := cs.RbacV1().RoleBindings(ns).Delete(ctx, "rita", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if d, _, _ := ts.server.authz.Authorize(ctx, rita); d == authorizer.DecisionAllow {
			t.Errorf("%s: just after the binding's delete: allowed", ns)
		}
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s: create just after the namespace's delete: %v, want Forbidden", ns, err)
		}
	}
}

// A server stopped while it starts, before it serves, stops cleanly: the
// stop is not an error.
func TestRunStoppedWhileStarting(t *testing.T) {
	ts := startServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ts.server.Run(ctx, ln); err != nil {
		t.Errorf("run stopped before serving: %v, want nil", err)
	}
}

// TestDeletePropagation: a delete's propagation policy becomes the garbage
// collector's finalizer on the object, which then waits for it, as in
// kube-apiserver; Background, the default, adds none.
func TestDeletePropagation(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	const hold = "example.com/hold"
	policy := func(p metav1.DeletionPropagation) metav1.DeleteOptions {
		return metav1.DeleteOptions{PropagationPolicy: &p}
	}
	orphanDependents := func(b bool) metav1.DeleteOptions { return metav1.DeleteOptions{OrphanDependents: &b} }
	tests := []struct {
		name       string
		finalizers []string              // the object's, from its creation
		first      *metav1.DeleteOptions // a delete before the one tested
		opts       metav1.DeleteOptions  // the delete tested
		want       []string              // the finalizers held with; nil: gone
	}{
		{name: "no policy", want: nil},
		{name: "background", opts: policy(metav1.DeletePropagationBackground), want: nil},
		{name: "foreground", opts: policy(metav1.DeletePropagationForeground), want: []string{metav1.FinalizerDeleteDependents}},
		{name: "orphan", opts: policy(metav1.DeletePropagationOrphan), want: []string{metav1.FinalizerOrphanDependents}},
		{name: "orphanDependents", opts: orphanDependents(true), want: []string{metav1.FinalizerOrphanDependents}},
		{name: "orphanDependents false", finalizers: []string{metav1.FinalizerOrphanDependents}, opts: orphanDependents(false), want: nil},
		{name: "foreground beside another finalizer", finalizers: []string{hold}, opts: policy(metav1.DeletePropagationForeground), want: []string{hold, metav1.FinalizerDeleteDependents}},
		// The creator's finalizer is the policy when the delete names none.
		{name: "an orphan finalizer from creation", finalizers: []string{metav1.FinalizerOrphanDependents}, want: []string{metav1.FinalizerOrphanDependents}},
		{name: "an orphan finalizer overridden", finalizers: []string{metav1.FinalizerOrphanDependents}, opts: policy(metav1.DeletePropagationForeground), want: []string{metav1.FinalizerDeleteDependents}},
		{name: "background overrides a creator's foreground", finalizers: []string{metav1.FinalizerDeleteDependents}, opts: policy(metav1.DeletePropagationBackground), want: nil},
		// A second delete changes the policy of one being deleted.
		{name: "foreground, then orphan", first: ptrTo(policy(metav1.DeletePropagationForeground)), opts: policy(metav1.DeletePropagationOrphan), want: []string{metav1.FinalizerOrphanDependents}},
		{name: "foreground, then background", first: ptrTo(policy(metav1.DeletePropagationForeground)), opts: policy(metav1.DeletePropagationBackground), want: nil},
		{name: "foreground, then no policy", first: ptrTo(policy(metav1.DeletePropagationForeground)), want: []string{metav1.FinalizerDeleteDependents}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("prop-%d", i)
			cms := cs.CoreV1().ConfigMaps("default")
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: tt.finalizers}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if tt.first != nil {
				if err := cms.Delete(ctx, name, *tt.first); err != nil {
					t.Fatal(err)
				}
			}
			if err := cms.Delete(ctx, name, tt.opts); err != nil {
				t.Fatal(err)
			}
			cm, err := cms.Get(ctx, name, metav1.GetOptions{})
			if tt.want == nil {
				if !apierrors.IsNotFound(err) {
					t.Errorf("after the delete: %v %v, want NotFound", cm, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cm.DeletionTimestamp == nil || !slices.Equal(cm.Finalizers, tt.want) {
				t.Errorf("after the delete: deletion at %v, finalizers %q; want it marked, held by %q", cm.DeletionTimestamp, cm.Finalizers, tt.want)
			}
		})
	}

	t.Run("the collector's finalizer removed", func(t *testing.T) {
		cms := cs.CoreV1().ConfigMaps("default")
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fg"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, "fg", policy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := cms.Patch(ctx, "fg", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Get(ctx, "fg", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("after its last finalizer: %v, want NotFound", err)
		}
	})

	t.Run("dry run", func(t *testing.T) {
		cms := cs.CoreV1().ConfigMaps("default")
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		opts := policy(metav1.DeletePropagationForeground)
		opts.DryRun = []string{metav1.DryRunAll}
		if err := cms.Delete(ctx, "dry", opts); err != nil {
			t.Fatal(err)
		}
		if cm, err := cms.Get(ctx, "dry", metav1.GetOptions{}); err != nil || cm.DeletionTimestamp != nil || len(cm.Finalizers) > 0 {
			t.Errorf("after a dry-run delete: %+v %v, want it untouched", cm, err)
		}
	})

	// A pod on a node waits for its node agent as well as for the
	// collector: the finalizer gone, its grace period still holds it.
	t.Run("a bound pod, foreground", func(t *testing.T) {
		pods := cs.CoreV1().Pods("default")
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fg"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(ctx, "fg", policy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		got, err := pods.Get(ctx, "fg", metav1.GetOptions{})
		if err != nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 30 || !slices.Equal(got.Finalizers, []string{metav1.FinalizerDeleteDependents}) {
			t.Fatalf("pod after a foreground delete: %+v %v, want a grace period of 30s and the foregroundDeletion finalizer", got, err)
		}
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := pods.Patch(ctx, "fg", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if got, err := pods.Get(ctx, "fg", metav1.GetOptions{}); err != nil || got.DeletionTimestamp == nil {
			t.Errorf("pod after its finalizer: %+v %v, want it kept for its node agent", got, err)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }

// A delete held to an object's uid, which another writer changes all the
// while, succeeds: it starts again from the object as stored, as
// kube-apiserver's does. One held to a resourceVersion that has moved on
// is the client's conflict.
func TestDeleteRacingAnUpdate(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	for i := range 5 {
		name := fmt.Sprintf("busy-%d", i)
		cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				patch := fmt.Sprintf(`{"metadata":{"labels":{"n":"%d"}}}`, n)
				if _, err := cs.CoreV1().ConfigMaps("default").Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					return // deleted
				}
			}
		})
		time.Sleep(20 * time.Millisecond)
		if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}}); err != nil {
			t.Errorf("delete %s held to its uid while it is being updated: %v", name, err)
		}
		close(stop)
		wg.Wait()
	}
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "moved"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Patch(ctx, "moved", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "moved", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &cm.ResourceVersion}}); !apierrors.IsConflict(err) {
		t.Errorf("delete held to a resourceVersion that moved on: %v, want 409", err)
	}
}
