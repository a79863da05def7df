package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// standInNode is a node as its agent keeps it alive: a Node, Ready, and
// its Lease in kube-node-lease renewed while it beats.
type standInNode struct {
	name   string
	client kubernetes.Interface
	// stop and done are of the renewing goroutine, nil while silent.
	stop context.CancelFunc
	done chan struct{}
}

// newStandInNode creates the Node, Ready, and its Lease, and starts its
// heartbeats.
func newStandInNode(t *testing.T, client kubernetes.Interface, name string) *standInNode {
	t.Helper()
	schedNode(t, client, name, "4", nil)
	holder, secs, now := name, int32(40), metav1.NowMicro()
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &now},
	}
	if _, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(t.Context(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the lease of %s: %v", name, err)
	}
	n := &standInNode{name: name, client: client}
	n.beat(t)
	t.Cleanup(n.silence)
	return n
}

// beat renews the Lease every 200ms, as a kubelet every 10s, until
// silence.
func (n *standInNode) beat(t *testing.T) {
	ctx, stop := context.WithCancel(t.Context())
	n.stop, n.done = stop, make(chan struct{})
	go func() {
		defer close(n.done)
		leases := n.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
		for {
			// A failed renewal is a missed heartbeat, which the grace
			// period is there to absorb.
			if l, err := leases.Get(ctx, n.name, metav1.GetOptions{}); err == nil {
				now := metav1.NowMicro()
				l.Spec.RenewTime = &now
				_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}

// silence stops the heartbeats, as a node cut off, and returns once the
// last renewal is done.
func (n *standInNode) silence() {
	if n.stop == nil {
		return
	}
	n.stop()
	<-n.done
	n.stop, n.done = nil, nil
}

// resume posts the node Ready again, as a kubelet back in touch does,
// and starts its heartbeats.
func (n *standInNode) resume(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	node, err := n.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
	if _, err := n.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("post %s ready: %v", n.name, err)
	}
	n.beat(t)
}

// nodeTaint is a node's taint of key and effect, nil when it has none.
func nodeTaint(n *corev1.Node, key string, effect corev1.TaintEffect) *corev1.Taint {
	i := slices.IndexFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == effect })
	if i < 0 {
		return nil
	}
	return &n.Spec.Taints[i]
}

func podCondition(p *corev1.Pod, ct corev1.PodConditionType) *corev1.PodCondition {
	i := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == ct })
	if i < 0 {
		return nil
	}
	return &p.Status.Conditions[i]
}

// A node that stops renewing its Lease becomes Ready=Unknown and is
// tainted unreachable; its pods go at once, after their
// tolerationSeconds, or never, by their tolerations; the node's
// neighbours and their pods are left alone; when its heartbeats come
// back, so does its Ready condition, and the taints go. Two nodes cut
// off at once are tainted at the zone's rate, one by one. When every
// node is cut off, no node keeps a NoExecute taint: the control plane,
// not the cluster, is the likelier fault.
func TestNodeLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	const brief = 2 // seconds a pod tolerates the unreachable taint
	// The default toleration of unreachable is 0 seconds here, so that a
	// pod without one of its own goes at once.
	c := e2etest.StartCluster(t, "--node-monitor-grace-period=3s", "--node-monitor-period=500ms", "--default-unreachable-toleration-seconds=0")
	admin, adminCfg := clientFor(t, c.AdminConf())
	ctx := t.Context()
	createNamespace(t, c, admin, "lifecycle")
	alive := newStandInNode(t, admin, "alive")
	lost := newStandInNode(t, admin, "lost")

	secs := int64(brief)
	unreachableFor := func(s *int64) []corev1.Toleration {
		return []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: s}}
	}
	pods := admin.CoreV1().Pods("lifecycle")
	for _, p := range []struct {
		name, node  string
		tolerations []corev1.Toleration
	}{
		{"at-once", "lost", nil},
		{"brief", "lost", unreachableFor(&secs)},
		{"forever", "lost", unreachableFor(nil)},
		{"elsewhere", "alive", nil},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name}, Spec: corev1.PodSpec{
			NodeName: p.node, Tolerations: p.tolerations,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		}}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", p.name, err)
		}
	}
	// DefaultTolerationSeconds, with the cluster's flag.
	atOnce, err := pods.Get(ctx, "at-once", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tol := atOnce.Spec.Tolerations; len(tol) != 2 || tol[1].Key != corev1.TaintNodeUnreachable || tol[1].TolerationSeconds == nil || *tol[1].TolerationSeconds != 0 {
		t.Errorf("tolerations given to pod at-once: %+v, want unreachable for 0s last", tol)
	}
	// The pod that stays is Ready, as its kubelet reported it.
	forever, err := pods.Get(ctx, "forever", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	forever.Status.Phase = corev1.PodRunning
	forever.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if _, err := pods.UpdateStatus(ctx, forever, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	lost.silence()
	var tainted *corev1.Node
	waitFor(t, "lost Unknown and tainted unreachable", func(ctx context.Context) error {
		n, err := admin.CoreV1().Nodes().Get(ctx, "lost", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ready := nodeCondition(n, corev1.NodeReady)
		if ready == nil || ready.Status != corev1.ConditionUnknown || ready.Reason != "NodeStatusUnknown" || ready.Message != "Kubelet stopped posting node status." {
			return fmt.Errorf("ready condition %+v", ready)
		}
		if nodeTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) == nil || nodeTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule) == nil {
			return fmt.Errorf("taints %+v", n.Spec.Taints)
		}
		tainted = n
		return nil
	})
	taintedAt := nodeTaint(tainted, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute).TimeAdded
	if taintedAt == nil {
		t.Fatal("the unreachable NoExecute taint has no timeAdded")
	}

	evicted := func(name string) *corev1.Pod {
		t.Helper()
		var pod *corev1.Pod
		waitFor(t, "pod "+name+" evicted", func(ctx context.Context) error {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			// A bound pod deleted waits for its node to confirm; this
			// one's never will.
			if p.DeletionTimestamp == nil {
				return errors.New("not deleted")
			}
			pod = p
			return nil
		})
		if c := podCondition(pod, corev1.DisruptionTarget); c == nil || c.Status != corev1.ConditionTrue || c.Reason != "DeletionByTaintManager" {
			t.Errorf("pod %s evicted with DisruptionTarget %+v, want True by DeletionByTaintManager", name, c)
		}
		return pod
	}
	evicted("at-once")
	waitForEvent(t, admin, "at-once", "TaintManagerEviction", "taint-eviction-controller")
	// Not before its tolerationSeconds: the taint and the eviction are
	// stamped by the controllers' clock, to the second, and the
	// eviction's clock starts once the taint is seen.
	p := evicted("brief")
	if c := podCondition(p, corev1.DisruptionTarget); c != nil {
		if waited := c.LastTransitionTime.Sub(taintedAt.Time); waited < brief*time.Second {
			t.Errorf("pod brief evicted %s after the taint, want at least its %ds", waited, brief)
		}
	}
	waitFor(t, "pod forever marked not ready", func(ctx context.Context) error {
		p, err := pods.Get(ctx, "forever", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c := podCondition(p, corev1.PodReady); c == nil || c.Status != corev1.ConditionFalse {
			return fmt.Errorf("ready %+v", c)
		}
		return nil
	})
	waitForEvent(t, admin, "forever", "NodeNotReady", "node-controller")
	// By now the pod of 2s has gone: the one that tolerates forever, and
	// the one on a live node, stay.
	for _, name := range []string{"forever", "elsewhere"} {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Errorf("pod %s: %v, deleted at %v; want it kept", name, err, p.GetDeletionTimestamp())
		}
	}
	if n, err := admin.CoreV1().Nodes().Get(ctx, "alive", metav1.GetOptions{}); err != nil || len(n.Spec.Taints) != 0 || !nodeReady(n) {
		t.Errorf("alive: %v, taints %v, ready %v; want untouched", err, n.Spec.Taints, nodeReady(n))
	}

	lost.resume(t)
	waitFor(t, "lost Ready and untainted", func(ctx context.Context) error {
		n, err := admin.CoreV1().Nodes().Get(ctx, "lost", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !nodeReady(n) || len(n.Spec.Taints) != 0 {
			return fmt.Errorf("ready %v, taints %+v", nodeReady(n), n.Spec.Taints)
		}
		return nil
	})

	// Two of four nodes cut off at once: both Unknown, but the zone's
	// token bucket (--node-eviction-rate, 0.1 a second, burst 1)
	// taints one, and the other ten seconds later, by the stamps the
	// controller puts on the taints (to the second; the first stamp
	// may come a little after its token, never before).
	spares := []*standInNode{newStandInNode(t, admin, "spare-0"), newStandInNode(t, admin, "spare-1")}
	alive.silence()
	lost.silence()
	cutOff := []string{"alive", "lost"}
	// Longer than waitFor's 20s: the second waits for its token.
	waitWithin(t, time.Minute, "alive and lost Unknown and tainted unreachable", func(ctx context.Context) error {
		return unreachable(ctx, admin, cutOff, 2)
	})
	var stamps []time.Time
	for _, name := range cutOff {
		n, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if tt := nodeTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute); tt != nil && tt.TimeAdded != nil {
			stamps = append(stamps, tt.TimeAdded.Time)
		}
	}
	if len(stamps) != 2 {
		t.Fatalf("taints stamped at %v, want two", stamps)
	}
	if apart := stamps[0].Sub(stamps[1]).Abs(); apart < 8*time.Second {
		t.Errorf("two nodes tainted %s apart, want the rate's ten seconds", apart)
	}

	// Every node cut off: all Unknown, and none keeps a NoExecute taint.
	for _, n := range spares {
		n.silence()
	}
	waitFor(t, "every node Unknown and none tainted NoExecute", func(ctx context.Context) error {
		return unreachable(ctx, admin, append(cutOff, "spare-0", "spare-1"), 0)
	})

	testNodeLifecycleIdentities(t, admin, adminCfg)
}

// waitForEvent waits for an event of a pod in lifecycle, of reason, from
// component.
func waitForEvent(t *testing.T, client kubernetes.Interface, pod, reason, component string) {
	t.Helper()
	waitFor(t, "event "+reason+" of pod "+pod, func(ctx context.Context) error {
		events, err := client.CoreV1().Events("lifecycle").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == pod && e.Reason == reason && e.Source.Component == component {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})
}

// unreachable checks that the nodes are Ready=Unknown and tainted
// unreachable NoSchedule, and that tainted of them are tainted
// unreachable NoExecute.
func unreachable(ctx context.Context, client kubernetes.Interface, names []string, tainted int) error {
	var got []string
	for _, name := range names {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ready := nodeCondition(n, corev1.NodeReady); ready == nil || ready.Status != corev1.ConditionUnknown {
			return fmt.Errorf("%s: ready %+v", name, ready)
		}
		if nodeTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule) == nil {
			return fmt.Errorf("%s: no unreachable NoSchedule taint: %+v", name, n.Spec.Taints)
		}
		if nodeTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) != nil {
			got = append(got, name)
		}
	}
	if len(got) != tainted {
		return fmt.Errorf("tainted unreachable NoExecute: %q, want %d of %q", got, tainted, names)
	}
	return nil
}

func nodeCondition(n *corev1.Node, ct corev1.NodeConditionType) *corev1.NodeCondition {
	i := slices.IndexFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == ct })
	if i < 0 {
		return nil
	}
	return &n.Status.Conditions[i]
}

// The two controllers' tokens are refused what their jobs do not need:
// neither reads a Secret or creates a pod; the node controller deletes
// no pod and no node; the taint eviction controller writes no node.
func testNodeLifecycleIdentities(t *testing.T, admin kubernetes.Interface, adminCfg *rest.Config) {
	ctx := t.Context()
	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "intruder"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	for _, sa := range []string{"node-controller", "taint-eviction-controller"} {
		cs := tokenClient(t, admin, adminCfg, sa)
		_, err := cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
		forbidden(sa+" lists Secrets", err)
		_, err = cs.CoreV1().Secrets("lifecycle").Get(ctx, "any", metav1.GetOptions{})
		forbidden(sa+" reads a Secret", err)
		_, err = cs.CoreV1().Pods("lifecycle").Create(ctx, pod, metav1.CreateOptions{})
		forbidden(sa+" creates a pod", err)
		_, err = cs.CoreV1().Pods("lifecycle").List(ctx, metav1.ListOptions{})
		forbidden(sa+" lists pods", err)
	}
	node := tokenClient(t, admin, adminCfg, "node-controller")
	forbidden("the node controller deletes a pod", node.CoreV1().Pods("lifecycle").Delete(ctx, "elsewhere", metav1.DeleteOptions{}))
	forbidden("the node controller deletes a node", node.CoreV1().Nodes().Delete(ctx, "alive", metav1.DeleteOptions{}))
	eviction := tokenClient(t, admin, adminCfg, "taint-eviction-controller")
	_, err := eviction.CoreV1().Nodes().Patch(ctx, "alive", types.MergePatchType, []byte(`{"spec":{"taints":null}}`), metav1.PatchOptions{})
	forbidden("the taint eviction controller patches a node", err)
}

// The same with trustplane's node agent: an agent killed leaves its node
// Unknown and tainted, and its pod evicted; restarted, it posts its node
// Ready over the Unknown, the taints go, and it finishes the pod that was
// being deleted.
func TestNodeLifecycleAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t, "--node-monitor-grace-period=4s", "--node-monitor-period=500ms", "--default-unreachable-toleration-seconds=0")
	admin, _ := clientFor(t, c.AdminConf())
	ctx := t.Context()
	tok := tokenCreate(t, c)
	agent := func(name, dir string, join bool) *e2etest.Process {
		// A Lease of 2s is renewed every half second, within the grace.
		args := []string{"node", "--name", name, "--server", c.URL, "--dir", dir, "--node-lease-duration-seconds", "2", "--node-status-update-frequency", "1s"}
		if join {
			args = append(args, "--token", tok["token"], "--ca-cert-hash", tok["ca-cert-hash"])
		}
		return e2etest.Start(t, exec.Command(e2etest.Binary(t), args...))
	}
	flakyDir := t.TempDir()
	agent("steady", t.TempDir(), true)
	flaky := agent("flaky", flakyDir, true)
	ready := func(ctx context.Context) error {
		for _, name := range []string{"steady", "flaky"} {
			n, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !nodeReady(n) || len(n.Spec.Taints) != 0 {
				return fmt.Errorf("%s: ready %v, taints %+v", name, nodeReady(n), n.Spec.Taints)
			}
		}
		return nil
	}
	waitFor(t, "both nodes Ready and untainted", ready)
	createNamespace(t, c, admin, "agents")
	grace := int64(1)
	pods := admin.CoreV1().Pods("agents")
	if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{
		NodeName: "flaky", TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "web Running on flaky", func(ctx context.Context) error {
		p, err := pods.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})

	flaky.Kill()
	waitFor(t, "flaky Unknown and tainted unreachable", func(ctx context.Context) error {
		return unreachable(ctx, admin, []string{"flaky"}, 1)
	})
	waitFor(t, "web evicted", func(ctx context.Context) error {
		p, err := pods.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.DeletionTimestamp == nil {
			return errors.New("not deleted")
		}
		return nil
	})

	agent("flaky", flakyDir, false)
	waitFor(t, "flaky Ready and untainted again", ready)
	waitFor(t, "web gone, finished by its agent", func(ctx context.Context) error {
		_, err := pods.Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
}
