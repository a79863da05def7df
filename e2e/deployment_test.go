package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/trustplane/trustplane/e2e/e2etest"
	"github.com/trustplane/trustplane/rbac"
)

// brokenImage is an image whose pods the stand-in never makes ready.
const brokenImage = "registry.example/web:broken"

// replicaSetStandIn plays the ReplicaSet controller and the kubelets,
// which trustplane does not run here, through the one thing the
// deployment controller reads of them: each ReplicaSet's status. As
// soon as a ReplicaSet's spec asks for replicas it reports them made,
// ready and available, as the ReplicaSet controller would once its pods
// ran, writing replicasets/status as the admin. Pods of brokenImage
// never become ready. While holdScaleDown is set, a ReplicaSet scaled
// down keeps reporting its pods, as if they were still terminating.
type replicaSetStandIn struct {
	client        kubernetes.Interface
	holdScaleDown atomic.Bool
	done          chan struct{}
}

// startStandIn runs a stand-in for the whole cluster until the test ends.
func startStandIn(t *testing.T, client kubernetes.Interface) *replicaSetStandIn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &replicaSetStandIn{client: client, done: make(chan struct{})}
	go s.run(ctx)
	t.Cleanup(func() { cancel(); <-s.done })
	return s
}

func (s *replicaSetStandIn) run(ctx context.Context) {
	defer close(s.done)
	for ctx.Err() == nil {
		rv := s.reportAll(ctx)
		if rv == "" {
			continue
		}
		w, err := s.client.AppsV1().ReplicaSets("").Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			continue
		}
		for ev := range w.ResultChan() {
			if rs, ok := ev.Object.(*appsv1.ReplicaSet); ok && ev.Type != "DELETED" {
				s.report(ctx, rs)
			}
		}
		w.Stop()
	}
}

// reportAll reports every ReplicaSet and returns the list's revision,
// empty if it could not list.
func (s *replicaSetStandIn) reportAll(ctx context.Context) string {
	list, err := s.client.AppsV1().ReplicaSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for i := range list.Items {
		s.report(ctx, &list.Items[i])
	}
	return list.ResourceVersion
}

// release lets held scale-downs through.
func (s *replicaSetStandIn) release(ctx context.Context) {
	s.holdScaleDown.Store(false)
	s.reportAll(ctx)
}

func (s *replicaSetStandIn) report(ctx context.Context, rs *appsv1.ReplicaSet) {
	want := *rs.Spec.Replicas
	if s.holdScaleDown.Load() && want < rs.Status.Replicas {
		return
	}
	ready := want
	if rs.Spec.Template.Spec.Containers[0].Image == brokenImage {
		ready = 0
	}
	status := appsv1.ReplicaSetStatus{Replicas: want, FullyLabeledReplicas: want, ReadyReplicas: ready, AvailableReplicas: ready, ObservedGeneration: rs.Generation}
	if rs.Status.Replicas == status.Replicas && rs.Status.AvailableReplicas == status.AvailableReplicas && rs.Status.ReadyReplicas == status.ReadyReplicas && rs.Status.ObservedGeneration == status.ObservedGeneration {
		return
	}
	rs = rs.DeepCopy()
	rs.Status = status
	// A conflict means a newer ReplicaSet is on its way in the watch.
	_, _ = s.client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
}

// rsHistory records every state of a namespace's ReplicaSets, one per
// watch event, from when it starts until stop.
type rsHistory struct {
	mu     sync.Mutex
	states []map[string]appsv1.ReplicaSet
	cancel context.CancelFunc
	done   chan struct{}
}

func recordReplicaSets(t *testing.T, client kubernetes.Interface, namespace string) *rsHistory {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	list, err := client.AppsV1().ReplicaSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := client.AppsV1().ReplicaSets(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	h := &rsHistory{cancel: cancel, done: make(chan struct{})}
	cur := map[string]appsv1.ReplicaSet{}
	for _, rs := range list.Items {
		cur[rs.Name] = rs
	}
	h.states = append(h.states, cur)
	go func() {
		defer close(h.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			rs, ok := ev.Object.(*appsv1.ReplicaSet)
			if !ok {
				continue
			}
			h.mu.Lock()
			next := map[string]appsv1.ReplicaSet{}
			for k, v := range h.states[len(h.states)-1] {
				next[k] = v
			}
			if ev.Type == "DELETED" {
				delete(next, rs.Name)
			} else {
				next[rs.Name] = *rs
			}
			h.states = append(h.states, next)
			h.mu.Unlock()
		}
	}()
	t.Cleanup(h.stop)
	return h
}

func (h *rsHistory) stop() {
	h.cancel()
	<-h.done
}

// has reports whether the history's latest state holds rs as it is, at
// its resourceVersion: whether the watch has caught up with it.
func (h *rsHistory) has(rs *appsv1.ReplicaSet) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur, ok := h.states[len(h.states)-1][rs.Name]
	return ok && cur.UID == rs.UID && cur.ResourceVersion == rs.ResourceVersion
}

// largestReplicas is the largest spec.replicas the ReplicaSet uid had at
// any revision up to rev (etcd's, which orders every object's writes),
// 0 if it did not exist by then.
func (h *rsHistory) largestReplicas(uid types.UID, rev int64) int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var most int32
	for _, state := range h.states {
		for _, rs := range state {
			if v, err := strconv.ParseInt(rs.ResourceVersion, 10, 64); err == nil && rs.UID == uid && v <= rev {
				most = max(most, *rs.Spec.Replicas)
			}
		}
	}
	return most
}

// totals are a state's ReplicaSet replicas (spec) and available
// replicas (status) in all.
func totals(state map[string]appsv1.ReplicaSet) (replicas, available int32) {
	for _, rs := range state {
		replicas += *rs.Spec.Replicas
		available += rs.Status.AvailableReplicas
	}
	return replicas, available
}

func deployment(name string, replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
		},
	}
}

// rolledOut waits until d's latest spec is rolled out as `kubectl
// rollout status` judges it, with the condition kube reports then, and
// returns the Deployment.
func rolledOut(t *testing.T, client kubernetes.Interface, namespace, name string) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	waitFor(t, "deployment "+name+" rolled out", func(ctx context.Context) (err error) {
		d, err = client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s := d.Status
		want := *d.Spec.Replicas
		c := condition(d, appsv1.DeploymentProgressing)
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.Replicas != want || s.AvailableReplicas != want ||
			c == nil || c.Reason != "NewReplicaSetAvailable" {
			return fmt.Errorf("generation %d, status %+v", d.Generation, s)
		}
		return nil
	})
	return d
}

func condition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

// replicaSetsOf are the ReplicaSets d controls, by revision.
func replicaSetsOf(t *testing.T, client kubernetes.Interface, d *appsv1.Deployment) map[string]appsv1.ReplicaSet {
	t.Helper()
	list, err := client.AppsV1().ReplicaSets(d.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]appsv1.ReplicaSet{}
	for _, rs := range list.Items {
		if ref := metav1.GetControllerOf(&rs); ref != nil && ref.UID == d.UID {
			out[rs.Annotations["deployment.kubernetes.io/revision"]] = rs
		}
	}
	return out
}

// newNamespace creates a namespace, without waiting for its ServiceAccount:
// these tests create no pods.
func newNamespace(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func setImage(t *testing.T, client kubernetes.Interface, namespace, name, image string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":%q}]}}}}`, image)
	if _, err := client.AppsV1().Deployments(namespace).Patch(t.Context(), name, "application/strategic-merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deploymentCluster is a cluster whose controller manager, in a process
// of its own, runs every controller but the ReplicaSet controller, whose
// part (and the kubelets') a stand-in plays: ReplicaSets are made
// available at will, without nodes.
func deploymentCluster(t *testing.T) *e2etest.Cluster {
	t.Helper()
	c := e2etest.StartCluster(t, "--controllers=false")
	p := e2etest.Start(t, exec.Command(e2etest.Binary(t), "controller-manager", "--dir", c.Dir, "--controllers", "*,-replicaset"))
	p.WaitLine(t, "controller manager running: ")
	c.WaitForServiceAccount(t, "default")
	return c
}

// The deployment controller rolls Deployments out as kube's does; a
// stand-in plays the ReplicaSet controller.
func TestDeployments(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := deploymentCluster(t)
	admin, adminCfg := clientFor(t, c.AdminConf())
	standIn := startStandIn(t, admin)

	// A rolling update never has more than replicas+maxSurge
	// ReplicaSet replicas, nor fewer than replicas-maxUnavailable
	// available; 25% of 10 is a surge of 3 (rounded up) and 2
	// unavailable (rounded down).
	t.Run("rolling update", func(t *testing.T) {
		ctx := t.Context()
		newNamespace(t, admin, "roll")
		d := deployment("web", 10, "registry.example/web:1")
		quarter := intstr.FromString("25%")
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter}}
		if _, err := admin.AppsV1().Deployments("roll").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		d = rolledOut(t, admin, "roll", "web")
		first := replicaSetsOf(t, admin, d)["1"]
		hash := first.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		if hash == "" || first.Name != "web-"+hash || first.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
			first.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || *first.Spec.Replicas != 10 ||
			first.Annotations["deployment.kubernetes.io/desired-replicas"] != "10" || first.Annotations["deployment.kubernetes.io/max-replicas"] != "13" {
			t.Errorf("the first ReplicaSet: %+v", first.ObjectMeta)
		}
		if a := condition(d, appsv1.DeploymentAvailable); a == nil || a.Status != corev1.ConditionTrue || a.Reason != "MinimumReplicasAvailable" {
			t.Errorf("Available condition: %+v", a)
		}

		h := recordReplicaSets(t, admin, "roll")
		setImage(t, admin, "roll", "web", "registry.example/web:2")
		d = rolledOut(t, admin, "roll", "web")
		h.stop()
		maxTotal, minAvailable := int32(0), int32(1<<30)
		for i, state := range h.states {
			total, available := totals(state)
			if total > 13 || available < 8 {
				t.Errorf("state %d of %d: %d ReplicaSet replicas, %d available; want at most 13 and at least 8", i, len(h.states), total, available)
			}
			maxTotal, minAvailable = max(maxTotal, total), min(minAvailable, available)
		}
		// How close it came to the bounds depends on how fast the
		// stand-in reports availability: a matter of timing, not a
		// property. That it never crossed them is checked above.
		t.Logf("the rollout reached %d ReplicaSet replicas at most and %d available at least (bounds 13 and 8)", maxTotal, minAvailable)
		rss := replicaSetsOf(t, admin, d)
		if len(rss) != 2 || *rss["1"].Spec.Replicas != 0 || *rss["2"].Spec.Replicas != 10 || d.Annotations["deployment.kubernetes.io/revision"] != "2" {
			t.Errorf("after the update: ReplicaSets by revision %v, deployment annotations %v", slices.Sorted(maps.Keys(rss)), d.Annotations)
		}
		s := d.Status
		if s.ObservedGeneration != d.Generation || s.Replicas != 10 || s.UpdatedReplicas != 10 || s.ReadyReplicas != 10 || s.AvailableReplicas != 10 || s.UnavailableReplicas != 0 {
			t.Errorf("status %+v", s)
		}

		// Scaled in the middle of nothing, the one active ReplicaSet
		// takes it all, and no new revision is made.
		if _, err := admin.AppsV1().Deployments("roll").Patch(ctx, "web", "application/merge-patch+json", []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		d = rolledOut(t, admin, "roll", "web")
		if rss := replicaSetsOf(t, admin, d); len(rss) != 2 || *rss["2"].Spec.Replicas != 4 {
			t.Errorf("scaled to 4: ReplicaSets %v", rss)
		}

		// kube's events, which `kubectl describe` shows.
		waitFor(t, "a ScalingReplicaSet event", func(ctx context.Context) error {
			events, err := admin.CoreV1().Events("roll").List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, ev := range events.Items {
				if ev.Reason == "ScalingReplicaSet" && ev.InvolvedObject.Kind == "Deployment" && ev.InvolvedObject.Name == "web" &&
					ev.Source.Component == "deployment-controller" && strings.HasPrefix(ev.Message, "Scaled down replica set web-") {
					return nil
				}
			}
			return fmt.Errorf("%d events, none of scaling down", len(events.Items))
		})

		writers := map[string]string{}
		for _, ev := range readAudit(t, c.AuditLog()) {
			if ev.ObjectRef != nil && ev.ObjectRef.Namespace == "roll" && ev.ObjectRef.Resource == "replicasets" && ev.ObjectRef.Subresource == "" && ev.Verb == "create" {
				writers[ev.User.Username] = ev.Verb
			}
		}
		if len(writers) != 1 || writers[rbac.ControllerUser("deployment-controller")] == "" {
			t.Errorf("ReplicaSets created by %v, want only the deployment controller", writers)
		}
	})

	// Recreate stops every old pod before the new ReplicaSet is made.
	t.Run("recreate", func(t *testing.T) {
		ctx := t.Context()
		newNamespace(t, admin, "recreate")
		d := deployment("web", 3, "registry.example/web:1")
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		if _, err := admin.AppsV1().Deployments("recreate").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		d = rolledOut(t, admin, "recreate", "web")
		h := recordReplicaSets(t, admin, "recreate")
		standIn.holdScaleDown.Store(true)
		setImage(t, admin, "recreate", "web", "registry.example/web:2")
		waitFor(t, "the old ReplicaSet scaled to 0 and the update observed", func(ctx context.Context) error {
			cur, err := admin.AppsV1().Deployments("recreate").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			rss := replicaSetsOf(t, admin, cur)
			if cur.Status.ObservedGeneration < cur.Generation || *rss["1"].Spec.Replicas != 0 {
				return fmt.Errorf("observed %d of %d, old ReplicaSet %d", cur.Status.ObservedGeneration, cur.Generation, *rss["1"].Spec.Replicas)
			}
			return nil
		})
		if rss := replicaSetsOf(t, admin, d); len(rss) != 1 {
			t.Errorf("while the old pods terminate: %d ReplicaSets, want only the old one", len(rss))
		}
		standIn.release(ctx)
		d = rolledOut(t, admin, "recreate", "web")
		h.stop()
		for i, state := range h.states {
			var oldPods, newReplicas int32
			for _, rs := range state {
				if rs.Spec.Template.Spec.Containers[0].Image == "registry.example/web:1" {
					oldPods += rs.Status.Replicas
				} else {
					newReplicas += *rs.Spec.Replicas
				}
			}
			if oldPods > 0 && newReplicas > 0 {
				t.Errorf("state %d: %d old pods beside %d new replicas", i, oldPods, newReplicas)
			}
		}
		if rss := replicaSetsOf(t, admin, d); len(rss) != 2 || *rss["2"].Spec.Replicas != 3 {
			t.Errorf("after the update: %v", slices.Sorted(maps.Keys(rss)))
		}
	})

	// A paused Deployment does not roll; resumed, it does.
	t.Run("pause and resume", func(t *testing.T) {
		ctx := t.Context()
		newNamespace(t, admin, "paused")
		d := deployment("web", 2, "registry.example/web:1")
		if _, err := admin.AppsV1().Deployments("paused").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rolledOut(t, admin, "paused", "web")
		if _, err := admin.AppsV1().Deployments("paused").Patch(ctx, "web", "application/merge-patch+json", []byte(`{"spec":{"paused":true}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		setImage(t, admin, "paused", "web", "registry.example/web:2")
		waitFor(t, "the paused update observed", func(ctx context.Context) error {
			cur, err := admin.AppsV1().Deployments("paused").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if c := condition(cur, appsv1.DeploymentProgressing); cur.Status.ObservedGeneration < cur.Generation || c == nil || c.Reason != "DeploymentPaused" || c.Status != corev1.ConditionUnknown {
				return fmt.Errorf("observed %d of %d, Progressing %+v", cur.Status.ObservedGeneration, cur.Generation, c)
			}
			d = cur
			return nil
		})
		if rss := replicaSetsOf(t, admin, d); len(rss) != 1 {
			t.Errorf("paused: %d ReplicaSets, want 1", len(rss))
		}
		if _, err := admin.AppsV1().Deployments("paused").Patch(ctx, "web", "application/merge-patch+json", []byte(`{"spec":{"paused":false}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		d = rolledOut(t, admin, "paused", "web")
		if rss := replicaSetsOf(t, admin, d); len(rss) != 2 || rss["2"].Spec.Template.Spec.Containers[0].Image != "registry.example/web:2" {
			t.Errorf("resumed: ReplicaSets %v", slices.Sorted(maps.Keys(rss)))
		}
	})

	// A rollout that makes no progress for progressDeadlineSeconds is
	// reported as failed.
	t.Run("progress deadline", func(t *testing.T) {
		ctx := t.Context()
		newNamespace(t, admin, "deadline")
		d := deployment("web", 2, "registry.example/web:1")
		d.Spec.ProgressDeadlineSeconds = new(int32(2))
		if _, err := admin.AppsV1().Deployments("deadline").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rolledOut(t, admin, "deadline", "web")
		setImage(t, admin, "deadline", "web", brokenImage)
		waitFor(t, "ProgressDeadlineExceeded", func(ctx context.Context) error {
			cur, err := admin.AppsV1().Deployments("deadline").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if c := condition(cur, appsv1.DeploymentProgressing); c == nil || c.Status != corev1.ConditionFalse || c.Reason != "ProgressDeadlineExceeded" {
				return fmt.Errorf("Progressing %+v", c)
			}
			// maxUnavailable 25% of 2 is none: the old pods stay.
			if cur.Status.AvailableReplicas != 2 {
				return fmt.Errorf("available %d", cur.Status.AvailableReplicas)
			}
			return nil
		})

		// A fixed template replaces the broken one: its pods, never
		// available, go first, and the rollout completes again.
		setImage(t, admin, "deadline", "web", "registry.example/web:3")
		d = rolledOut(t, admin, "deadline", "web")
		rss := replicaSetsOf(t, admin, d)
		if len(rss) != 3 || *rss["2"].Spec.Replicas != 0 || *rss["1"].Spec.Replicas != 0 || *rss["3"].Spec.Replicas != 2 {
			t.Errorf("after the fix: ReplicaSets by revision %v", slices.Sorted(maps.Keys(rss)))
		}
	})

	// Scaled while a rollout is stuck, the ReplicaSets share the new
	// size in proportion to theirs, within the new maxSurge: from 4
	// replicas (old 4, new 1 of a surge of 25%, none unavailable) to 8
	// (a surge of 2, 10 in all), old 8 and new 2.
	t.Run("proportional scaling", func(t *testing.T) {
		ctx := t.Context()
		newNamespace(t, admin, "proportional")
		d := deployment("web", 4, "registry.example/web:1")
		quarter, none := intstr.FromString("25%"), intstr.FromInt32(0)
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &none}}
		if _, err := admin.AppsV1().Deployments("proportional").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rolledOut(t, admin, "proportional", "web")
		setImage(t, admin, "proportional", "web", brokenImage)
		sizes := func(want map[string]int32) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				cur, err := admin.AppsV1().Deployments("proportional").Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return err
				}
				got := map[string]int32{}
				for rev, rs := range replicaSetsOf(t, admin, cur) {
					got[rev] = *rs.Spec.Replicas
				}
				if !maps.Equal(got, want) {
					return fmt.Errorf("ReplicaSets' replicas by revision %v, want %v", got, want)
				}
				return nil
			}
		}
		waitFor(t, "the rollout stuck at one new replica", sizes(map[string]int32{"1": 4, "2": 1}))
		if _, err := admin.AppsV1().Deployments("proportional").Patch(ctx, "web", "application/merge-patch+json", []byte(`{"spec":{"replicas":8}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "scaled in proportion", sizes(map[string]int32{"1": 8, "2": 2}))
	})

	// An orphan ReplicaSet the selector matches is adopted (here it is
	// of the Deployment's template, so no other is made); one another
	// controller owns is left alone.
	t.Run("adoption", func(t *testing.T) {
		ctx := t.Context()
		newNamespace(t, admin, "adopt")
		d := deployment("web", 2, "registry.example/web:1")
		orphan := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: d.Spec.Template.Labels},
			Spec:       appsv1.ReplicaSetSpec{Replicas: new(int32(2)), Selector: d.Spec.Selector, Template: d.Spec.Template},
		}
		if _, err := admin.AppsV1().ReplicaSets("adopt").Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		owned := orphan.DeepCopy()
		owned.Name = "owned"
		owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Other", Name: "other", UID: "d2f5c4f2-0000-4000-8000-000000000001", Controller: new(true)}}
		if _, err := admin.AppsV1().ReplicaSets("adopt").Create(ctx, owned, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		created, err := admin.AppsV1().Deployments("adopt").Create(ctx, d, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d = rolledOut(t, admin, "adopt", "web")
		list, err := admin.AppsV1().ReplicaSets("adopt").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rs := range list.Items {
			ref := metav1.GetControllerOf(&rs)
			switch rs.Name {
			case "orphan":
				if ref == nil || ref.UID != created.UID || rs.Annotations["deployment.kubernetes.io/revision"] != "1" {
					t.Errorf("the orphan: controller %+v, annotations %v", ref, rs.Annotations)
				}
			case "owned":
				if ref == nil || ref.Kind != "Other" || len(rs.OwnerReferences) != 1 || *rs.Spec.Replicas != 2 {
					t.Errorf("another controller's ReplicaSet: owners %+v, replicas %d", rs.OwnerReferences, *rs.Spec.Replicas)
				}
			default:
				t.Errorf("ReplicaSet %s made beside the adopted one", rs.Name)
			}
		}
	})

	// Beyond revisionHistoryLimit, the oldest ReplicaSets scaled to 0
	// are deleted.
	t.Run("revision history limit", func(t *testing.T) {
		ctx := t.Context()
		newNamespace(t, admin, "history")
		d := deployment("web", 1, "registry.example/web:1")
		d.Spec.RevisionHistoryLimit = new(int32(1))
		if _, err := admin.AppsV1().Deployments("history").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rolledOut(t, admin, "history", "web")
		for _, v := range []string{"2", "3"} {
			setImage(t, admin, "history", "web", "registry.example/web:"+v)
			d = rolledOut(t, admin, "history", "web")
		}
		waitFor(t, "revision 1 deleted", func(ctx context.Context) error {
			if got := slices.Sorted(maps.Keys(replicaSetsOf(t, admin, d))); !slices.Equal(got, []string{"2", "3"}) {
				return fmt.Errorf("revisions %v, want [2 3]", got)
			}
			return nil
		})
	})

	// The controller's identity may manage ReplicaSets, not make pods
	// or read Secrets.
	t.Run("identity", func(t *testing.T) {
		ctx := t.Context()
		secs := int64(600)
		tr, err := admin.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "deployment-controller",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := rest.AnonymousClientConfig(adminCfg)
		cfg.BearerToken = tr.Status.Token
		dc, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		forbidden := func(what string, err error) {
			t.Helper()
			if !apierrors.IsForbidden(err) {
				t.Errorf("%s: %v, want Forbidden", what, err)
			}
		}
		_, err = dc.CoreV1().Pods("roll").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
		forbidden("the deployment controller creates a pod", err)
		_, err = dc.CoreV1().Secrets("roll").Get(ctx, "any", metav1.GetOptions{})
		forbidden("the deployment controller reads a Secret", err)
		_, err = dc.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
		forbidden("the deployment controller lists Secrets", err)
		err = dc.AppsV1().Deployments("roll").Delete(ctx, "web", metav1.DeleteOptions{})
		forbidden("the deployment controller deletes a Deployment", err)
		_, err = dc.AppsV1().ReplicaSets("roll").Get(ctx, "any", metav1.GetOptions{})
		forbidden("the deployment controller reads beside its informers", err)
	})
}

// `kubectl rollout` works against the deployment controller as on kube:
// status, history, undo, restart, pause and resume.
func TestKubectlRollout(t *testing.T) {
	forEachKubectlOn(t, deploymentCluster, func(t *testing.T, k *kubectl, c *e2etest.Cluster) {
		admin, _ := clientFor(t, c.AdminConf())
		startStandIn(t, admin)
		kc := c.AdminConf()
		run := func(want string, args ...string) result {
			t.Helper()
			res := k.run(t, kc, args...)
			if res.exit != 0 || !strings.Contains(res.stdout, want) {
				t.Fatalf("kubectl %s: exit %d, stdout %q, stderr %q; want %q", strings.Join(args, " "), res.exit, res.stdout, res.stderr, want)
			}
			return res
		}
		manifest := filepath.Join(t.TempDir(), "web.yaml")
		if err := os.WriteFile(manifest, []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    kubernetes.io/change-cause: first
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.example/web:1
`), 0o600); err != nil {
			t.Fatal(err)
		}
		status := []string{"rollout", "status", "deployment/web", "--timeout=60s"}
		run("deployment.apps/web created", "create", "-f", manifest)
		run(`deployment "web" successfully rolled out`, status...)

		run("image updated", "set", "image", "deployment/web", "web=registry.example/web:2")
		run("annotated", "annotate", "--overwrite", "deployment/web", "kubernetes.io/change-cause=second")
		run(`deployment "web" successfully rolled out`, status...)
		history := run("REVISION", "rollout", "history", "deployment/web")
		for _, want := range []string{"1         first", "2         second"} {
			if !strings.Contains(history.stdout, want) {
				t.Errorf("rollout history: %q, want a line %q", history.stdout, want)
			}
		}
		run("registry.example/web:1", "rollout", "history", "deployment/web", "--revision=1")

		// undo: kubectl writes revision 1's template back; its
		// ReplicaSet becomes revision 3.
		run("deployment.apps/web rolled back", "rollout", "undo", "deployment/web")
		run(`deployment "web" successfully rolled out`, status...)
		history = run("REVISION", "rollout", "history", "deployment/web")
		if !strings.Contains(history.stdout, "3         first") || strings.Contains(history.stdout, "1         first") {
			t.Errorf("rollout history after undo: %q, want revision 1 as 3", history.stdout)
		}
		d, err := admin.AppsV1().Deployments("default").Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example/web:1" {
			t.Errorf("after undo, image %s", img)
		}
		if rs := replicaSetsOf(t, admin, d)["3"]; rs.Annotations["deployment.kubernetes.io/revision-history"] != "1" || *rs.Spec.Replicas != 3 {
			t.Errorf("revision 3: annotations %v, replicas %d", rs.Annotations, *rs.Spec.Replicas)
		}

		run("deployment.apps/web restarted", "rollout", "restart", "deployment/web")
		run(`deployment "web" successfully rolled out`, status...)
		d, err = admin.AppsV1().Deployments("default").Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rs := replicaSetsOf(t, admin, d)["4"]; rs.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" || *rs.Spec.Replicas != 3 {
			t.Errorf("restart: revision 4 is %+v", rs.Spec.Template.ObjectMeta)
		}

		run("deployment.apps/web paused", "rollout", "pause", "deployment/web")
		run("image updated", "set", "image", "deployment/web", "web=registry.example/web:3")
		res := k.run(t, kc, "rollout", "status", "deployment/web", "--timeout=2s")
		if res.exit == 0 {
			t.Errorf("rollout status of a paused update: exit 0, stdout %q", res.stdout)
		}
		if rss := replicaSetsOf(t, admin, d); len(rss) != 3 {
			t.Errorf("paused: %d ReplicaSets, want 3", len(rss))
		}
		run("deployment.apps/web resumed", "rollout", "resume", "deployment/web")
		run(`deployment "web" successfully rolled out`, status...)

		// A rollout past its deadline: rollout status says so and fails.
		run("patched", "patch", "deployment/web", "-p", `{"spec":{"progressDeadlineSeconds":2}}`)
		run("image updated", "set", "image", "deployment/web", "web="+brokenImage)
		res = k.run(t, kc, "rollout", "status", "deployment/web", "--timeout=60s")
		if res.exit == 0 || !strings.Contains(res.stderr, `deployment "web" exceeded its progress deadline`) {
			t.Errorf("rollout status past the deadline: exit %d, stdout %q, stderr %q", res.exit, res.stdout, res.stderr)
		}
	})
}
