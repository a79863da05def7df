package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// The garbage collector of `trustplane up`, driven by stock kubectl's
// --cascade: a Deployment deleted in the background takes its ReplicaSets
// and their pods; in the foreground it stays until they are gone, held
// by a pod that blocks it; orphaning leaves its ReplicaSet without a
// reference to it. Pods whose owner never existed, or exists under
// another uid, go; the collector's own token reads no Secret and creates
// nothing.
func TestGarbageCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	k := newKubectl(t, kubectlVersions[len(kubectlVersions)-1])
	c := e2etest.StartCluster(t)
	admin, adminCfg := clientFor(t, c.AdminConf())
	ctx := t.Context()
	const ns = "gc"
	newNamespace(t, admin, ns)
	c.WaitForServiceAccount(t, ns)
	kubectl := func(args ...string) {
		t.Helper()
		args = append([]string{"-n", ns}, args...)
		if res := k.run(t, c.AdminConf(), args...); res.exit != 0 {
			t.Fatalf("kubectl %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), res.exit, res.stdout, res.stderr)
		}
	}
	// running creates a Deployment and waits for its two pods.
	running := func(name string) {
		t.Helper()
		if _, err := admin.AppsV1().Deployments(ns).Create(ctx, deployment(name, 2, "registry.example/web:1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, name+"'s pods created", func(ctx context.Context) error {
			pods, err := podsOf(ctx, admin, ns, name)
			if err == nil && len(pods) != 2 {
				err = fmt.Errorf("%d pods", len(pods))
			}
			return err
		})
	}
	// goneAll waits until the Deployment, its ReplicaSets and pods are gone.
	goneAll := func(name string) {
		t.Helper()
		waitFor(t, name+" and its dependents deleted", func(ctx context.Context) error {
			if _, err := admin.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the Deployment: %v", err)
			}
			rss, err := replicaSetsFor(ctx, admin, ns, name)
			if err != nil || len(rss) > 0 {
				return fmt.Errorf("%d ReplicaSets left (%v)", len(rss), err)
			}
			pods, err := podsOf(ctx, admin, ns, name)
			if err != nil || len(pods) > 0 {
				return fmt.Errorf("%d pods left (%v)", len(pods), err)
			}
			return nil
		})
	}

	t.Run("background", func(t *testing.T) {
		running("bg")
		kubectl("delete", "deployment", "bg")
		goneAll("bg")
	})

	t.Run("foreground", func(t *testing.T) {
		running("fg")
		// One pod is held by a finalizer of its own: it blocks its
		// ReplicaSet's deletion, which blocks the Deployment's.
		pods, err := podsOf(ctx, admin, ns, "fg")
		if err != nil {
			t.Fatal(err)
		}
		held := pods[0].Name
		patch := []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`)
		if _, err := admin.CoreV1().Pods(ns).Patch(ctx, held, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		kubectl("delete", "deployment", "fg", "--cascade=foreground", "--wait=false")
		waitFor(t, "the other pod deleted, the held one marked", func(ctx context.Context) error {
			pods, err := podsOf(ctx, admin, ns, "fg")
			if err != nil {
				return err
			}
			if len(pods) != 1 || pods[0].Name != held || pods[0].DeletionTimestamp == nil {
				return fmt.Errorf("pods %v", podNames(pods))
			}
			return nil
		})
		d, err := admin.AppsV1().Deployments(ns).Get(ctx, "fg", metav1.GetOptions{})
		if err != nil || d.DeletionTimestamp == nil || !slices.Contains(d.Finalizers, metav1.FinalizerDeleteDependents) {
			t.Fatalf("the Deployment while a dependent blocks it: %+v %v; want it kept with the foregroundDeletion finalizer", d.ObjectMeta, err)
		}
		if rss, err := replicaSetsFor(ctx, admin, ns, "fg"); err != nil || len(rss) != 1 || rss[0].DeletionTimestamp == nil {
			t.Fatalf("its ReplicaSets while a pod blocks them: %d %v; want one, being deleted", len(rss), err)
		}
		patch = []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := admin.CoreV1().Pods(ns).Patch(ctx, held, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		goneAll("fg")
	})

	t.Run("orphan", func(t *testing.T) {
		running("or")
		kubectl("delete", "deployment", "or", "--cascade=orphan")
		waitFor(t, "the Deployment deleted, its ReplicaSet kept without a reference to it", func(ctx context.Context) error {
			if _, err := admin.AppsV1().Deployments(ns).Get(ctx, "or", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the Deployment: %v", err)
			}
			rss, err := replicaSetsFor(ctx, admin, ns, "or")
			if err != nil || len(rss) != 1 || len(rss[0].OwnerReferences) != 0 || rss[0].DeletionTimestamp != nil {
				return fmt.Errorf("ReplicaSets %+v (%v)", rss, err)
			}
			return nil
		})
		if pods, err := podsOf(ctx, admin, ns, "or"); err != nil || len(pods) != 2 {
			t.Errorf("the orphaned ReplicaSet's pods: %v %v; want 2", podNames(pods), err)
		}
	})

	t.Run("owners gone or replaced", func(t *testing.T) {
		cms := admin.CoreV1().ConfigMaps(ns)
		owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		old, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ref := func(name string, uid types.UID) []metav1.OwnerReference {
			return []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uid}}
		}
		pods := map[string][]metav1.OwnerReference{
			"never":   ref("ghost", "5e3c1b9a-0000-4000-8000-000000000001"),
			"another": ref("owner", "5e3c1b9a-0000-4000-8000-000000000002"),
			"renewed": ref("old", old.UID),
			"owned":   ref("owner", owner.UID),
		}
		for name, refs := range pods {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}}}
			if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// "old" goes, and comes back under its name as another object,
		// which does not adopt what the first one owned.
		if err := cms.Delete(ctx, "old", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the pods without their owner deleted", func(ctx context.Context) error {
			for _, name := range []string{"never", "another", "renewed"} {
				if _, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("pod %s: %v", name, err)
				}
			}
			return nil
		})
		if _, err := admin.CoreV1().Pods(ns).Get(ctx, "owned", metav1.GetOptions{}); err != nil {
			t.Errorf("the pod whose owner exists: %v, want it kept", err)
		}
		if _, err := cms.Get(ctx, "old", metav1.GetOptions{}); err != nil {
			t.Errorf("the owner created again: %v, want it kept", err)
		}
	})

	// Two objects that own each other, each blocking the other's
	// deletion, both go when one is deleted in the foreground: the
	// collector breaks the circle rather than wait on it forever.
	t.Run("a cycle, foreground", func(t *testing.T) {
		cms := admin.CoreV1().ConfigMaps(ns)
		a, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cycle-a"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		refTo := func(cm *corev1.ConfigMap) []metav1.OwnerReference {
			return []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID, BlockOwnerDeletion: new(true)}}
		}
		b, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cycle-b", OwnerReferences: refTo(a)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a.OwnerReferences = refTo(b)
		if _, err := cms.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		kubectl("delete", "configmap", "cycle-a", "--cascade=foreground", "--wait=false")
		waitFor(t, "both deleted", func(ctx context.Context) error {
			for _, name := range []string{"cycle-a", "cycle-b"} {
				if cm, err := cms.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("%s: %v %v", name, cm.ObjectMeta, err)
				}
			}
			return nil
		})
	})

	// Cluster-scoped owners own namespaced objects as well.
	t.Run("a cluster-scoped owner", func(t *testing.T) {
		role, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gc-owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		refs := []metav1.OwnerReference{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: role.Name, UID: role.UID}}
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "of-a-role", OwnerReferences: refs}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := admin.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the ClusterRole's ConfigMap deleted", func(ctx context.Context) error {
			if _, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "of-a-role", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the ConfigMap: %v", err)
			}
			return nil
		})
	})

	t.Run("Secrets, by their metadata", func(t *testing.T) {
		// The collector's grant on Secrets is on their metadata: it
		// still deletes a Secret whose owner goes, and patches the
		// ownerReference out of one orphaned.
		secretOf := func(owner, name string) {
			t.Helper()
			cm, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: owner}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner, UID: cm.UID, BlockOwnerDeletion: ptrTo(true)}
			if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{ref}},
				Data:       map[string][]byte{"k": []byte("v")},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		secretOf("owner-fg", "owned-fg")
		secretOf("owner-orphan", "owned-orphan")
		kubectl("delete", "configmap", "owner-fg", "--cascade=foreground")
		kubectl("delete", "configmap", "owner-orphan", "--cascade=orphan")
		waitFor(t, "the owned Secret deleted, the orphan released", func(ctx context.Context) error {
			if _, err := admin.CoreV1().Secrets(ns).Get(ctx, "owned-fg", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("owned-fg: %v", err)
			}
			s, err := admin.CoreV1().Secrets(ns).Get(ctx, "owned-orphan", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if len(s.OwnerReferences) > 0 || string(s.Data["k"]) != "v" {
				return fmt.Errorf("owned-orphan: owners %v, data %v", s.OwnerReferences, s.Data)
			}
			return nil
		})
	})

	t.Run("its token", func(t *testing.T) {
		if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": "s3cret"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		gc := tokenClient(t, admin, adminCfg, "generic-garbage-collector")
		if _, err := gc.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("the collector reading a Secret: %v, want Forbidden", err)
		}
		listsMetadataOnly(t, gc, ns, "s3cret")
		// It may patch every kind that can own or be owned, but
		// admission keeps it to ownerReferences and finalizers.
		aggregate := []byte(`{"metadata":{"labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}}}`)
		if _, err := gc.RbacV1().ClusterRoles().Patch(ctx, "system:controller:generic-garbage-collector", types.MergePatchType, aggregate, metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("the collector aggregating its role into view: %v, want Forbidden", err)
		}
		running("gc-victim")
		image := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.example/evil:1"}]}}}}`)
		if _, err := gc.AppsV1().Deployments(ns).Patch(ctx, "gc-victim", types.StrategicMergePatchType, image, metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("the collector changing a Deployment's template: %v, want Forbidden", err)
		}
		if _, err := gc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "by-gc"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("the collector creating a ConfigMap: %v, want Forbidden", err)
		}
		if _, err := gc.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "by-gc"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("the collector creating a pod: %v, want Forbidden", err)
		}
	})
}

// listsMetadataOnly checks that client, whose grant on Secrets is on
// their metadata only, lists namespace's Secrets (as a typed client asks,
// in JSON) as PartialObjectMetadata, without value in any form.
func listsMetadataOnly(t *testing.T, client kubernetes.Interface, namespace, value string) {
	t.Helper()
	body, err := client.CoreV1().RESTClient().Get().Namespace(namespace).Resource("secrets").SetHeader("Accept", "application/json").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("listing Secrets' metadata: %v", err)
	}
	for _, shown := range []string{value, base64.StdEncoding.EncodeToString([]byte(value)), `"data"`} {
		if strings.Contains(string(body), shown) {
			t.Fatalf("a Secret's data was listed (%q): %s", shown, body)
		}
	}
	if !strings.Contains(string(body), `"kind":"PartialObjectMetadataList"`) {
		t.Fatalf("want a PartialObjectMetadataList; got %s", body)
	}
}

// podsOf are the pods of the Deployment name, by its pods' label.
func podsOf(ctx context.Context, client kubernetes.Interface, namespace, name string) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// replicaSetsFor are the ReplicaSets of the Deployment name, by label.
func replicaSetsFor(ctx context.Context, client kubernetes.Interface, namespace, name string) ([]appsv1.ReplicaSet, error) {
	list, err := client.AppsV1().ReplicaSets(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
