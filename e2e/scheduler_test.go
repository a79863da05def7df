package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// schedNode creates a Node with the allocatable given and Ready, and its
// hostname label, as a node agent would report it, and labels and taints.
func schedNode(t *testing.T, client kubernetes.Interface, name, cpu string, labels map[string]string, taints ...corev1.Taint) {
	t.Helper()
	ctx := t.Context()
	all := map[string]string{corev1.LabelHostname: name}
	for k, v := range labels {
		all[k] = v
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all}, Spec: corev1.NodeSpec{Taints: taints}}
	if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	// The node lifecycle controller may taint the new node meanwhile: the
	// status goes on the latest copy, again on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Capacity, n.Status.Allocatable = resources, resources
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("node %s status: %v", name, err)
	}
}

// schedPod is a pod that asks for cpu, with a node selector.
func schedPod(name, cpu string, selector map[string]string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		NodeSelector: selector,
		Containers:   []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
	}}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	return p
}

// A pod that fits nowhere stays Pending with kube's FailedScheduling
// event and PodScheduled condition, and is bound as soon as a node it
// fits appears. Pods created at once never overbook a node, and keep to
// their anti-affinity and their topology spread constraints.
func TestScheduler(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t)
	admin, _ := clientFor(t, c.AdminConf())
	ctx := t.Context()

	pool := map[string]string{"pool": "small"}
	schedNode(t, admin, "infra", "4", pool, corev1.Taint{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule})
	schedNode(t, admin, "small-1", "1", pool)
	schedNode(t, admin, "small-2", "1", pool)
	if _, err := admin.CoreV1().Pods("default").Create(ctx, schedPod("big", "2", pool), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kube's words (1.37): the taint is not named, and DynamicResources
	// and DefaultPreemption add their part.
	want := "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. " +
		"no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
	waitFor(t, "FailedScheduling of a pod that fits nowhere", func(ctx context.Context) error {
		events, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var seen []string
		for _, ev := range events.Items {
			if ev.InvolvedObject.Name == "big" && ev.Reason == "FailedScheduling" {
				if ev.Type == corev1.EventTypeWarning && ev.Message == want {
					return nil
				}
				seen = append(seen, ev.Type+" "+ev.Message)
			}
		}
		return fmt.Errorf("events of big: %q, want Warning %q", seen, want)
	})
	waitFor(t, "PodScheduled False", func(ctx context.Context) error {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "big", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable && cond.Message == want {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", p.Status.Conditions)
	})
	if p, err := admin.CoreV1().Pods("default").Get(ctx, "big", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Fatalf("big: node %q, %v; want none", p.Spec.NodeName, err)
	}
	added := time.Now()
	schedNode(t, admin, "large", "4", pool)
	waitFor(t, "big bound to the node that fits", func(ctx context.Context) error {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "big", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName != "large" {
			return fmt.Errorf("on node %q", p.Spec.NodeName)
		}
		return nil
	})
	// The binding made PodScheduled True, as kube's binding does; the
	// Unschedulable reason and message went with the False.
	big, err := admin.CoreV1().Pods("default").Get(ctx, "big", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var scheduled []corev1.PodCondition
	for _, cond := range big.Status.Conditions {
		if cond.Type == corev1.PodScheduled {
			scheduled = append(scheduled, cond)
		}
	}
	if len(scheduled) != 1 || scheduled[0].Status != corev1.ConditionTrue || scheduled[0].Reason != "" || scheduled[0].Message != "" {
		t.Errorf("bound, big's PodScheduled conditions are %+v, want one True with no reason", scheduled)
	}
	t.Logf("bound %s after the node that fits was added", time.Since(added).Round(time.Millisecond))

	// Three nodes of two CPUs, ten pods of one created at once: six
	// bound, two a node, and four left Pending.
	burst := map[string]string{"pool": "burst"}
	for i := range 3 {
		schedNode(t, admin, fmt.Sprintf("burst-%d", i), "2", burst)
	}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			if _, err := admin.CoreV1().Pods("default").Create(ctx, schedPod(fmt.Sprintf("burst-%d", i), "1", burst), metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var perNode map[string]int
	waitFor(t, "six of the ten pods bound", func(ctx context.Context) error {
		pods, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		perNode = map[string]int{}
		bound, failed := 0, 0
		for _, p := range pods.Items {
			if !strings.HasPrefix(p.Name, "burst-") {
				continue
			}
			if p.Spec.NodeName != "" {
				perNode[p.Spec.NodeName]++
				bound++
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
					failed++
				}
			}
		}
		if bound != 6 || failed != 4 {
			return fmt.Errorf("%d bound %v, %d unschedulable", bound, perNode, failed)
		}
		return nil
	})
	for node, n := range perNode {
		if n > 2 {
			t.Errorf("node %s has %d pods of 1 CPU, with 2 CPUs", node, n)
		}
	}

	// Twins with required anti-affinity by host, created at once, never
	// share a node: two nodes, two twins bound apart, the third Pending.
	twins := map[string]string{"pool": "twins"}
	schedNode(t, admin, "twin-a", "4", twins)
	schedNode(t, admin, "twin-b", "4", twins)
	for i := range 3 {
		wg.Go(func() {
			p := schedPod(fmt.Sprintf("db-%d", i), "", twins)
			p.Labels = map[string]string{"app": "db"}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
				TopologyKey:   corev1.LabelHostname,
			}}}}
			if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	waitFor(t, "two twins bound apart, the third unschedulable", func(ctx context.Context) error {
		pods, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
		if err != nil {
			return err
		}
		var on []string
		pending := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				on = append(on, p.Spec.NodeName)
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && strings.Contains(cond.Message, "2 node(s) didn't match pod anti-affinity rules") {
					pending++
				}
			}
		}
		slices.Sort(on)
		if !slices.Equal(on, []string{"twin-a", "twin-b"}) || pending != 1 {
			return fmt.Errorf("twins on %q, %d refused for anti-affinity", on, pending)
		}
		return nil
	})

	// Six pods spread over two zones (maxSkew 1, DoNotSchedule), created
	// at once: the pods assumed but not yet bound count, three a zone,
	// though one zone has two nodes and the other one.
	spread := map[string]string{"pool": "spread"}
	schedNode(t, admin, "spread-a1", "4", map[string]string{"pool": "spread", corev1.LabelTopologyZone: "a"})
	schedNode(t, admin, "spread-a2", "4", map[string]string{"pool": "spread", corev1.LabelTopologyZone: "a"})
	schedNode(t, admin, "spread-b1", "4", map[string]string{"pool": "spread", corev1.LabelTopologyZone: "b"})
	for i := range 6 {
		wg.Go(func() {
			p := schedPod(fmt.Sprintf("spread-%d", i), "", spread)
			p.Labels = map[string]string{"app": "spread"}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
			}}
			if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	waitFor(t, "three spread pods a zone", func(ctx context.Context) error {
		pods, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=spread"})
		if err != nil {
			return err
		}
		zones := map[string]int{}
		for _, p := range pods.Items {
			switch {
			case p.Spec.NodeName == "spread-b1":
				zones["b"]++
			case strings.HasPrefix(p.Spec.NodeName, "spread-a"):
				zones["a"]++
			}
		}
		if zones["a"] != 3 || zones["b"] != 3 {
			return fmt.Errorf("pods by zone %v, want 3 and 3", zones)
		}
		return nil
	})
}

// Two schedulers elect one leader; when it is killed the other takes over
// within the lease duration (and the retry period that notices), and no
// pod is ever bound twice, by the audit log's Binding events.
func TestSchedulerLeaderElection(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	const (
		lease = 4 * time.Second
		retry = 500 * time.Millisecond
	)
	c := e2etest.StartCluster(t, "--scheduler=false")
	admin, _ := clientFor(t, c.AdminConf())
	ctx := t.Context()
	schedulers := map[string]*e2etest.Process{}
	for range 2 {
		p := e2etest.Start(t, exec.Command(e2etest.Binary(t), "scheduler", "--kubeconfig", c.Kubeconfig("scheduler"),
			"--leader-elect-lease-duration", lease.String(), "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", retry.String()))
		id := strings.TrimPrefix(p.WaitLine(t, "scheduler running as "), "scheduler running as ")
		schedulers[id] = p
	}
	holder := func(ctx context.Context) (string, error) {
		l, err := admin.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if l.Spec.HolderIdentity == nil || schedulers[*l.Spec.HolderIdentity] == nil {
			return "", fmt.Errorf("holder %v is neither scheduler", l.Spec.HolderIdentity)
		}
		return *l.Spec.HolderIdentity, nil
	}
	var leader string
	waitFor(t, "a leader", func(ctx context.Context) (err error) {
		leader, err = holder(ctx)
		return err
	})
	for i := range 3 {
		schedNode(t, admin, fmt.Sprintf("node-%d", i), "100", nil)
	}

	// Pods are created all along, the handover included.
	var (
		mu      sync.Mutex
		created []string
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			name := fmt.Sprintf("p-%d", i)
			if _, err := admin.CoreV1().Pods("default").Create(ctx, schedPod(name, "10m", nil), metav1.CreateOptions{}); err != nil {
				t.Errorf("create %s: %v", name, err)
				return
			}
			mu.Lock()
			created = append(created, name)
			mu.Unlock()
		}
	})
	// boundAfter waits until a pod created after the first n is bound:
	// the scheduler leading now is binding what is created now.
	boundAfter := func(what string, n int) {
		waitFor(t, what, func(ctx context.Context) error {
			pods, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, p := range pods.Items {
				var i int
				if _, err := fmt.Sscanf(p.Name, "p-%d", &i); err == nil && i >= n && p.Spec.NodeName != "" {
					return nil
				}
			}
			return fmt.Errorf("no pod after the first %d bound", n)
		})
	}
	createdSoFar := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(created)
	}
	boundAfter("pods bound by the first leader", 0)
	before, err := admin.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	schedulers[leader].Kill()
	var next string
	waitFor(t, "a new leader", func(ctx context.Context) error {
		h, err := holder(ctx)
		if err != nil {
			return err
		}
		if h == leader {
			return fmt.Errorf("still held by the killed leader %s", h)
		}
		next = h
		return nil
	})
	t.Logf("leader %s killed; %s leads after %s (lease %s, retry %s)", leader, next, time.Since(killed).Round(time.Millisecond), lease, retry)
	after, err := admin.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	acquired, renewed := after.Spec.AcquireTime, before.Spec.RenewTime
	if acquired == nil || renewed == nil {
		t.Fatalf("the lease was acquired at %v, renewed before the kill at %v", acquired, renewed)
	}
	// The standby takes the lease only once it has seen no renewal for
	// the lease duration, timed from when it saw the last one, which
	// came after the renewal read before the kill: never earlier. (It
	// stamps acquireTime when the attempt that succeeds starts. Less
	// 100 ms: the times compared are the wall clock's, which may be
	// slewed, and client-go times the lease on the monotonic clock.)
	if early := renewed.Add(lease - 100*time.Millisecond).Sub(acquired.Time); early > 0 {
		t.Errorf("the new leader acquired the lease at %v, %s before the renewal of %v expired", acquired, early+100*time.Millisecond, renewed)
	}
	// And no later than a lease duration and two retries after the kill:
	// it sees the last renewal up to one retry late, and tries again up
	// to one retry after the lease has expired. client-go jitters each
	// retry to up to 2.2 retry periods (JitterFactor 1.2): 6.2 s here.
	// Twice that, as a loaded machine delays every step.
	bound := 2 * (lease + 2*time.Duration((1+leaderelection.JitterFactor)*float64(retry)))
	if took := acquired.Sub(killed); took > bound {
		t.Errorf("the new leader acquired the lease %s after the kill, want within %s (lease %s, retry %s)", took, bound, lease, retry)
	} else {
		t.Logf("the new leader acquired the lease %s after the kill (bound %s), %s after the renewal read before it",
			took.Round(time.Millisecond), bound, acquired.Sub(renewed.Time).Round(time.Millisecond))
	}
	if b, a := ptr.Deref(before.Spec.LeaseTransitions, 0), ptr.Deref(after.Spec.LeaseTransitions, 0); a != b+1 {
		t.Errorf("lease transitions %d, then %d: want one handover", b, a)
	}
	boundAfter("pods created under the new leader bound", createdSoFar())
	close(stop)
	wg.Wait()

	waitFor(t, "every pod bound", func(ctx context.Context) error {
		pods, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var unbound []string
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				unbound = append(unbound, p.Name)
			}
		}
		if len(unbound) > 0 {
			return fmt.Errorf("not bound: %v", unbound)
		}
		return nil
	})
	// Stop the survivor so that the audit log holds every binding.
	if err := schedulers[next].Stop(); err != nil {
		t.Error(err)
	}
	// A binding refused as a conflict would be two schedulers racing for
	// one pod: the second finds it bound by the first.
	bindings := map[string]int{}
	binders := map[string]bool{}
	for _, ev := range readAudit(t, c.AuditLog()) {
		if ev.Verb != "create" || ev.ObjectRef == nil || ev.ObjectRef.Resource != "pods" || ev.ObjectRef.Subresource != "binding" || ev.Stage != auditv1.StageResponseComplete || ev.ResponseStatus == nil {
			continue
		}
		switch code := ev.ResponseStatus.Code; code {
		case 201:
			bindings[ev.ObjectRef.Name]++
			binders[ev.User.Username] = true
		case 409:
			t.Errorf("binding of %s refused as a conflict: %s", ev.ObjectRef.Name, ev.ResponseStatus.Message)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(created) < 20 {
		t.Errorf("only %d pods created", len(created))
	}
	for _, name := range created {
		if n := bindings[name]; n != 1 {
			t.Errorf("pod %s bound %d times, want once", name, n)
		}
	}
	if users := slices.Sorted(func(yield func(string) bool) {
		for u := range binders {
			if !yield(u) {
				return
			}
		}
	}); !slices.Equal(users, []string{"system:kube-scheduler"}) {
		t.Errorf("bindings by %q, want system:kube-scheduler only", users)
	}
}

// Pods are placed on nodes kwok simulates, which run them.
func TestKwokScheduling(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	kwok := buildKwok(t)
	c := e2etest.StartCluster(t)
	kwok.start(t, c, true)
	admin, _ := clientFor(t, c.AdminConf())
	ctx := t.Context()
	for i := range 2 {
		_, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("kwok-%d", i),
			Annotations: map[string]string{kwokAnnotation: "fake"},
			Labels:      map[string]string{"type": "kwok"},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		if _, err := admin.CoreV1().Pods("default").Create(ctx, schedPod(fmt.Sprintf("web-%d", i), "100m", map[string]string{"type": "kwok"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nodes := map[string]int{}
	waitFor(t, "pods Running on the kwok nodes", func(ctx context.Context) error {
		pods, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		clear(nodes)
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning || !strings.HasPrefix(p.Spec.NodeName, "kwok-") {
				return fmt.Errorf("%s on %q is %s", p.Name, p.Spec.NodeName, p.Status.Phase)
			}
			nodes[p.Spec.NodeName]++
		}
		if len(pods.Items) != 4 {
			return fmt.Errorf("%d pods", len(pods.Items))
		}
		return nil
	})
	t.Logf("pods per node: %v", nodes)
}

// trustplane scheduler --config, and up --scheduler-config, read a
// KubeSchedulerConfiguration: a file that disables TaintToleration's
// filter lets a pod onto a node whose taint it does not tolerate, which
// the default profile refuses; a file trustplane cannot honour stops
// either at start with the reason, up before it creates anything.
func TestSchedulerConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	dir := t.TempDir()
	writeConfig := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"+body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, bad := range []struct{ body, want string }{
		{"profiles:\n- plugins:\n    score:\n      enabled:\n      - name: NodeResourcesMostAllocated\n", `plugins.score.enabled: unknown plugin "NodeResourcesMostAllocated"`},
		{"profiles:\n- schedulerName: default-scheduler\n- schedulerName: batch-scheduler\n", `profiles[1].schedulerName "batch-scheduler"`},
		{"profile: []\n", `unknown field "profile"`},
	} {
		config := writeConfig("bad.yaml", bad.body)
		_, stderr, err := e2etest.Run(t, "scheduler", "--config", config, "--kubeconfig", filepath.Join(dir, "absent.conf"))
		if err == nil || !strings.Contains(string(stderr), bad.want) {
			t.Errorf("scheduler with %q: %v, stderr %q; want a refusal naming %q", bad.body, err, stderr, bad.want)
		}
		data := filepath.Join(dir, "data")
		_, stderr, err = e2etest.Run(t, "up", "--dir", data, "--scheduler-config", config)
		if err == nil || !strings.Contains(string(stderr), bad.want) {
			t.Errorf("up with %q: %v, stderr %q; want a refusal naming %q", bad.body, err, stderr, bad.want)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("up refused its scheduler's configuration after creating %s (%v)", data, err)
		}
	}

	config := writeConfig("scheduler.yaml", "leaderElection:\n  leaderElect: false\nprofiles:\n- schedulerName: default-scheduler\n  plugins:\n    filter:\n      disabled:\n      - name: TaintToleration\n")
	for _, how := range []string{"scheduler --config", "up --scheduler-config"} {
		t.Run(how, func(t *testing.T) {
			var c *e2etest.Cluster
			if how == "up --scheduler-config" {
				c = e2etest.StartCluster(t, "--scheduler-config", config)
			} else {
				c = e2etest.StartCluster(t, "--scheduler=false")
				p := e2etest.Start(t, exec.Command(e2etest.Binary(t), "scheduler", "--config", config, "--kubeconfig", c.Kubeconfig("scheduler")))
				p.WaitLine(t, "scheduler running as ")
			}
			admin, _ := clientFor(t, c.AdminConf())
			schedNode(t, admin, "tainted", "4", nil, corev1.Taint{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule})
			if _, err := admin.CoreV1().Pods("default").Create(t.Context(), schedPod("intolerant", "", nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the intolerant pod bound to the tainted node", func(ctx context.Context) error {
				p, err := admin.CoreV1().Pods("default").Get(ctx, "intolerant", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if p.Spec.NodeName != "tainted" {
					return fmt.Errorf("on node %q, conditions %+v", p.Spec.NodeName, p.Status.Conditions)
				}
				return nil
			})
		})
	}
}
