package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// daemonWatch plays the kubelets of a namespace's pods that selector
// matches and checks, at
// every pod event from before the test writes any, the DaemonSet
// controller's guarantees: no pod is ever created for a node the test
// has not made eligible, and while a rolling update runs, no more than
// maxUnavailable eligible nodes are without an available (Ready, not
// terminating) pod, and no more than maxSurge hold two pods.
//
// As a kubelet, it marks each pod bound to a node Running and Ready
// through pods/status, and finishes the deletion of a terminating pod
// (grace period 0), as the admin.
type daemonWatch struct {
	mu sync.Mutex
	// Guarded by mu.
	pods           map[string]*corev1.Pod
	eligible       map[string]bool // by node name
	rolling        bool
	maxUnavailable int
	maxSurge       int
	violations     []string
}

func watchDaemons(t *testing.T, client kubernetes.Interface, namespace, selector string) *daemonWatch {
	t.Helper()
	w := &daemonWatch{pods: map[string]*corev1.Pod{}, eligible: map[string]bool{}}
	kubelet := func(pod *corev1.Pod) {
		ctx := context.Background()
		switch {
		case pod.DeletionTimestamp != nil:
			zero := int64(0)
			// Gone already, or another event's delete: nothing to do.
			_ = client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
		case pod.Spec.NodeName != "" && (pod.Status.Phase == "" || pod.Status.Phase == corev1.PodPending):
			p := pod.DeepCopy()
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
			// A conflict or a pod gone: the next event brings it again.
			_, _ = client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		}
	}
	watchPods(t, client, namespace, selector, func(pod *corev1.Pod, added, deleted bool) {
		w.observe(pod, added, deleted)
		if !deleted {
			kubelet(pod)
		}
	})
	return w
}

// daemonPodNode is the node a daemon pod is bound or pinned to.
func daemonPodNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range term.MatchFields {
				if f.Key == "metadata.name" && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return ""
}

func (w *daemonWatch) observe(pod *corev1.Pod, added, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := pod.Namespace + "/" + pod.Name
	if deleted {
		delete(w.pods, k)
	} else {
		w.pods[k] = pod
	}
	if added && pod.DeletionTimestamp == nil && !w.eligible[daemonPodNode(pod)] {
		w.violations = append(w.violations, fmt.Sprintf("pod %s created for node %q, which is not eligible", pod.Name, daemonPodNode(pod)))
	}
	if !w.rolling {
		return
	}
	available, live := map[string]bool{}, map[string]int{}
	for _, p := range w.pods {
		if p.DeletionTimestamp == nil {
			live[daemonPodNode(p)]++
			if podIsReady(p) {
				available[p.Spec.NodeName] = true
			}
		}
	}
	var doubled []string
	for n, count := range live {
		if count > 1 {
			doubled = append(doubled, n)
		}
	}
	if len(doubled) > w.maxSurge {
		slices.Sort(doubled)
		w.violations = append(w.violations, fmt.Sprintf("at pod %s's event, nodes %v with two pods; maxSurge %d", pod.Name, doubled, w.maxSurge))
	}
	var without []string
	for n := range w.eligible {
		if !available[n] {
			without = append(without, n)
		}
	}
	if len(without) > w.maxUnavailable {
		slices.Sort(without)
		w.violations = append(w.violations, fmt.Sprintf("at pod %s's event, nodes %v without an available pod; maxUnavailable %d", pod.Name, without, w.maxUnavailable))
	}
}

// setEligible records whether the DaemonSet should run on node: call it
// before a change that makes a node eligible, after one that makes it
// not.
func (w *daemonWatch) setEligible(node string, eligible bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if eligible {
		w.eligible[node] = true
	} else {
		delete(w.eligible, node)
	}
}

func (w *daemonWatch) eligibleNodes() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for n := range w.eligible {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (w *daemonWatch) setRolling(rolling bool, maxUnavailable, maxSurge int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rolling, w.maxUnavailable, w.maxSurge = rolling, maxUnavailable, maxSurge
}

func (w *daemonWatch) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.violations {
		t.Error(v)
	}
	w.violations = nil
}

// waitDaemons waits until the set runs exactly one Ready pod on each
// eligible node and none elsewhere, and its status says so; it returns
// the pods by node.
func waitDaemons(t *testing.T, client kubernetes.Interface, w *daemonWatch, namespace, name string) map[string]*corev1.Pod {
	t.Helper()
	var byNode map[string]*corev1.Pod
	waitFor(t, "daemonset "+name+" on "+strings.Join(w.eligibleNodes(), ","), func(ctx context.Context) error {
		want := w.eligibleNodes()
		ds, err := client.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return err
		}
		byNode = map[string]*corev1.Pod{}
		var got []string
		for i := range list.Items {
			p := &list.Items[i]
			if p.DeletionTimestamp != nil {
				continue
			}
			n := daemonPodNode(p)
			if byNode[n] != nil {
				return fmt.Errorf("two pods on node %s: %s and %s", n, byNode[n].Name, p.Name)
			}
			if p.Spec.NodeName == "" || !podIsReady(p) {
				return fmt.Errorf("pod %s for node %s not yet bound and Ready", p.Name, n)
			}
			byNode[n] = p
			got = append(got, n)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("pods on nodes %v, want %v", got, want)
		}
		s, n := ds.Status, int32(len(want))
		if s.ObservedGeneration != ds.Generation || s.DesiredNumberScheduled != n || s.CurrentNumberScheduled != n ||
			s.NumberReady != n || s.NumberAvailable != n || s.NumberUnavailable != 0 || s.NumberMisscheduled != 0 {
			return fmt.Errorf("status %+v (generation %d), want %d nodes ready and available", s, ds.Generation, n)
		}
		return nil
	})
	return byNode
}

// The DaemonSet controller, against the real binary, with nodes and
// kubelets played by the test and every pod event checked from the
// start: one pod per eligible node (nodeSelector, untolerated taints) as
// nodes come, go and change; duplicates removed (the oldest kept); a
// failed pod replaced; a pod released, and adopted again; rolling
// updates within maxUnavailable, and with maxSurge, that stock kubectl
// waits for; OnDelete; and its identity is refused what is not its job.
func TestDaemonSet(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t)
	admin, adminCfg := clientFor(t, c.AdminConf())
	const ns = "ds"
	createNamespace(t, c, admin, ns)
	w := watchDaemons(t, admin, ns, "app=agent")
	ctx := t.Context()
	worker := map[string]string{"role": "worker"}
	for _, n := range []string{"n1", "n2", "n5", "n6"} {
		w.setEligible(n, true)
		schedNode(t, admin, n, "4", worker)
	}
	// A worker tainted against the set's pods, and another kind of node.
	schedNode(t, admin, "n3", "4", worker, corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule})
	schedNode(t, admin, "n4", "4", map[string]string{"role": "other"})
	// Taints every daemon pod tolerates.
	schedNode(t, admin, "n8", "4", worker, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute})
	w.setEligible("n8", true)

	one := intstr.FromInt32(1)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{
					NodeSelector: worker,
					Containers:   []corev1.Container{{Name: "c", Image: "registry.example/agent:1"}},
				},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one}},
		},
	}
	if _, err := admin.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := waitDaemons(t, admin, w, ns, "agent")
	for n, p := range pods {
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "DaemonSet" || p.Labels[appsv1.ControllerRevisionHashLabelKey] == "" {
			t.Errorf("pod %s on %s: ownerReferences %+v, labels %v; want the DaemonSet as controller and a revision hash", p.Name, n, p.OwnerReferences, p.Labels)
		}
	}
	w.check(t)

	// Nodes come, go and change.
	w.setEligible("n7", true)
	schedNode(t, admin, "n7", "4", worker)
	if err := admin.CoreV1().Nodes().Delete(ctx, "n2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.setEligible("n2", false)
	w.setEligible("n4", true)
	patchNode(t, admin, "n4", `{"metadata":{"labels":{"role":"worker"}}}`)
	patchNode(t, admin, "n1", `{"metadata":{"labels":{"role":"other"}}}`)
	w.setEligible("n1", false)
	patchNode(t, admin, "n5", `{"spec":{"taints":[{"key":"evict","value":"x","effect":"NoExecute"}]}}`)
	w.setEligible("n5", false)
	pods = waitDaemons(t, admin, w, ns, "agent")
	w.check(t)

	// A second pod of the set on one node: the newer goes.
	secondAfter(t, pods["n6"])
	dup := pods["n6"].DeepCopy()
	dup.ObjectMeta = metav1.ObjectMeta{GenerateName: "agent-", Labels: dup.Labels, OwnerReferences: dup.OwnerReferences}
	dup.Spec.NodeName = ""
	dup.Status = corev1.PodStatus{}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, dup, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if after := waitDaemons(t, admin, w, ns, "agent"); after["n6"].UID != pods["n6"].UID {
		t.Errorf("node n6 kept pod %s, want the older %s", after["n6"].Name, pods["n6"].Name)
	}
	w.check(t)

	// A failed pod is replaced.
	failed := pods["n4"]
	setPodStatus(t, admin, ns, failed.Name, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}}
	})
	if after := waitDaemons(t, admin, w, ns, "agent"); after["n4"].UID == failed.UID {
		t.Errorf("node n4 still runs the failed pod")
	}
	w.check(t)

	// A pod it no longer selects is released, and replaced. Its
	// replacement must be younger to the second, creation times'
	// resolution, for the adoption below: of two pods created within one
	// second, the controller keeps the first by name, as kube does.
	time.Sleep(time.Until(pods["n7"].CreationTimestamp.Add(time.Second)))
	released := pods["n7"].Name
	if _, err := admin.CoreV1().Pods(ns).Patch(ctx, released, types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"app":"released"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod "+released+" released", func(ctx context.Context) error {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, released, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ref := metav1.GetControllerOf(p); ref != nil {
			return fmt.Errorf("controller %s %s", ref.Kind, ref.Name)
		}
		return nil
	})
	if after := waitDaemons(t, admin, w, ns, "agent"); after["n7"].Name == released {
		t.Errorf("node n7 still runs the released pod")
	}
	w.check(t)

	// A rolling update: no more than maxUnavailable nodes go without.
	k := newKubectl(t, kubectlVersions[0])
	w.setRolling(true, 2, 0)
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"registry.example/agent:2"}]}},"updateStrategy":{"rollingUpdate":{"maxUnavailable":2}}}}`
	if _, err := admin.AppsV1().DaemonSets(ns).Patch(ctx, "agent", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	res := k.run(t, c.AdminConf(), "-n", ns, "rollout", "status", "daemonset/agent", "--timeout=60s")
	if want := `daemon set "agent" successfully rolled out`; res.exit != 0 || !strings.Contains(res.stdout, want) {
		t.Errorf("rollout status: exit %d, stdout %q, stderr %q; want %q", res.exit, res.stdout, res.stderr, want)
	}
	pods = waitDaemons(t, admin, w, ns, "agent")
	w.setRolling(false, 0, 0)
	w.check(t)
	revs, err := admin.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		t.Fatal(err)
	}
	var newHash string
	for _, r := range revs.Items {
		if r.Revision == 2 {
			newHash = r.Labels["controller.kubernetes.io/hash"]
		}
	}
	if len(revs.Items) != 2 || newHash == "" {
		t.Errorf("revisions: %d, want 2, the second numbered 2", len(revs.Items))
	}
	for n, p := range pods {
		if p.Spec.Containers[0].Image != "registry.example/agent:2" || p.Labels[appsv1.ControllerRevisionHashLabelKey] != newHash {
			t.Errorf("pod %s on %s: image %s, hash %s; want agent:2 of revision %s", p.Name, n, p.Spec.Containers[0].Image, p.Labels[appsv1.ControllerRevisionHashLabelKey], newHash)
		}
	}

	// With maxSurge and no unavailability: each node's new pod comes
	// beside its old one, on one node at a time.
	w.setRolling(true, 0, 1)
	patch = `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"registry.example/agent:3"}]}},"updateStrategy":{"rollingUpdate":{"maxUnavailable":0,"maxSurge":1}}}}`
	if _, err := admin.AppsV1().DaemonSets(ns).Patch(ctx, "agent", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	res = k.run(t, c.AdminConf(), "-n", ns, "rollout", "status", "daemonset/agent", "--timeout=60s")
	if want := `daemon set "agent" successfully rolled out`; res.exit != 0 || !strings.Contains(res.stdout, want) {
		t.Errorf("rollout status with surge: exit %d, stdout %q, stderr %q; want %q", res.exit, res.stdout, res.stderr, want)
	}
	pods = waitDaemons(t, admin, w, ns, "agent")
	w.setRolling(false, 0, 0)
	w.check(t)
	for n, p := range pods {
		if got := p.Spec.Containers[0].Image; got != "registry.example/agent:3" {
			t.Errorf("after the surge, pod %s on %s has %s, want agent:3", p.Name, n, got)
		}
	}

	// OnDelete: a pod takes the new template when it is deleted.
	patch = `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"registry.example/agent:4"}]}},"updateStrategy":{"type":"OnDelete","rollingUpdate":null}}}`
	if _, err := admin.AppsV1().DaemonSets(ns).Patch(ctx, "agent", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "OnDelete observed", func(ctx context.Context) error {
		ds, err := admin.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ds.Status.ObservedGeneration != ds.Generation || ds.Status.UpdatedNumberScheduled != 0 {
			return fmt.Errorf("status %+v, generation %d; want it observed, nothing updated", ds.Status, ds.Generation)
		}
		return nil
	})
	if err := admin.CoreV1().Pods(ns).Delete(ctx, pods["n6"].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	after := waitDaemons(t, admin, w, ns, "agent")
	for n, p := range after {
		want := "registry.example/agent:3"
		if n == "n6" {
			want = "registry.example/agent:4"
		}
		if got := p.Spec.Containers[0].Image; got != want {
			t.Errorf("OnDelete: pod on %s has %s, want %s", n, got, want)
		}
	}
	w.check(t)

	// An orphan it selects is adopted; on n7, beside the pod that
	// replaced it, it is the older and stays (under RollingUpdate it
	// would then be replaced, having no revision).
	if _, err := admin.CoreV1().Pods(ns).Patch(ctx, released, types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"app":"agent"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	after = waitDaemons(t, admin, w, ns, "agent")
	if p := after["n7"]; p.Name != released || metav1.GetControllerOf(p) == nil || metav1.GetControllerOf(p).Kind != "DaemonSet" {
		t.Errorf("node n7 runs %s, controlled by %+v; want %s adopted", p.Name, metav1.GetControllerOf(p), released)
	}
	w.check(t)

	// Its identity: its own writes, nothing else.
	dsc := tokenClient(t, admin, adminCfg, "daemon-set-controller")
	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("daemon-set-controller: %s: %v, want Forbidden", what, err)
		}
	}
	_, err = dsc.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	forbidden("list Secrets", err)
	_, err = dsc.CoreV1().Secrets(ns).Get(ctx, "any", metav1.GetOptions{})
	forbidden("get a Secret", err)
	forbidden("delete a node", dsc.CoreV1().Nodes().Delete(ctx, "n6", metav1.DeleteOptions{}))
	_, err = dsc.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "x"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}},
		},
	}, metav1.CreateOptions{})
	forbidden("create a Deployment", err)
	if _, err := dsc.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{}); err != nil {
		t.Errorf("daemon-set-controller: get its DaemonSet, as after a conflict: %v", err)
	}
}

// secondAfter waits until a second after p's creation: creation times
// are in seconds, and of two pods created within one, which is the
// older is not known.
func secondAfter(t *testing.T, p *corev1.Pod) {
	t.Helper()
	waitFor(t, "a second after pod "+p.Name+"'s creation", func(context.Context) error {
		if !time.Now().Truncate(time.Second).After(p.CreationTimestamp.Time) {
			return fmt.Errorf("created at %s", p.CreationTimestamp)
		}
		return nil
	})
}

func patchNode(t *testing.T, client kubernetes.Interface, name, patch string) {
	t.Helper()
	if _, err := client.CoreV1().Nodes().Patch(t.Context(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch node %s with %s: %v", name, patch, err)
	}
}
