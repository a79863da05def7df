package scheduler

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func node(name, cpu, memory string, pods int64, mods ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	n.Status.Allocatable = corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

func pod(name, cpu, memory string, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
	p.Spec.SchedulerName = DefaultSchedulerName
	requests := corev1.ResourceList{}
	if cpu != "" {
		requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		requests[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: "registry.example/app:1", Resources: corev1.ResourceRequirements{Requests: requests}}}
	for _, m := range mods {
		m(p)
	}
	return p
}

func onNode(name string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.NodeName = name } }

// ephemeral gives a node ephemeral storage; asksEphemeral has a pod ask
// for some.
func ephemeral(size string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceEphemeralStorage] = resource.MustParse(size) }
}

func asksEphemeral(size string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse(size)
	}
}

func newTestScheduler(nodes []*corev1.Node, pods ...*corev1.Pod) *scheduler {
	s := &scheduler{profile: DefaultProfile(), cache: newCache(), queue: newSchedulingQueue()}
	s.rand = rand.New(rand.NewPCG(1, 2))
	for _, n := range nodes {
		s.cache.setNode(n)
	}
	for _, p := range pods {
		s.cache.addPod(p)
	}
	return s
}

// The message of a pod that fits nowhere is kube's (1.37): the nodes
// counted by reason, sorted as strings, then what DynamicResources and
// DefaultPreemption say: how many nodes evicting pods of lower priority
// would not help, and why. The examples are kube's events.
func TestFitErrorMessage(t *testing.T) {
	tainted := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
	}
	cordoned := func(n *corev1.Node) { n.Spec.Unschedulable = true }
	priority := func(v int32) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.Priority = &v } }
	named := func(names ...string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: names}}}},
			}}}
		}
	}
	const noClaims = " no new claims to deallocate, preemption: "
	avoidDB := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: corev1.LabelHostname,
		}}}}
	}
	for _, tc := range []struct {
		name    string
		nodes   []*corev1.Node
		pods    []*corev1.Pod
		pod     *corev1.Pod
		profile string // a KubeSchedulerConfiguration's profiles, if not the default
		want    string
	}{
		{
			name:  "taint, and more cpu than the nodes have: preemption would not help",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110, tainted), node("b", "1", "8Gi", 110), node("c", "1", "8Gi", 110)},
			pod:   pod("p", "2", ""),
			want:  "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu." + noClaims + "0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		},
		{
			name:  "taint, and cpu in use by pods of the same priority: no victims",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110, tainted), node("b", "2", "8Gi", 110), node("c", "2", "8Gi", 110)},
			pods:  []*corev1.Pod{pod("b-old", "1500m", "", onNode("b")), pod("c-old", "1500m", "", onNode("c"))},
			pod:   pod("p", "1", ""),
			want:  "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu." + noClaims + "0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.",
		},
		{
			name:  "each resource short, pods full, cordoned",
			nodes: []*corev1.Node{node("a", "1", "1Gi", 110), node("b", "4", "8Gi", 1), node("c", "4", "8Gi", 110, cordoned)},
			pods:  []*corev1.Pod{pod("old", "", "", onNode("b"))},
			pod:   pod("p", "2", "2Gi"),
			want: "0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 Too many pods, 1 node(s) were unschedulable." + noClaims +
				"0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.",
		},
		{
			// One node has too little at all, the other too little left.
			name:  "ephemeral storage",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110, ephemeral("1Gi")), node("b", "4", "8Gi", 110, ephemeral("10Gi"))},
			pods:  []*corev1.Pod{pod("old", "", "", onNode("b"), asksEphemeral("8Gi"))},
			pod:   pod("p", "", "", asksEphemeral("5Gi")),
			want: "0/2 nodes are available: 2 Insufficient ephemeral-storage." + noClaims +
				"0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.",
		},
		{
			name:  "node selector",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110)},
			pod:   pod("p", "", "", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }),
			want:  "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector." + noClaims + "0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
		},
		{
			name: "extended resource",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110, func(n *corev1.Node) {
				n.Status.Allocatable["example.com/gpu"] = resource.MustParse("1")
			}), node("b", "4", "8Gi", 110)},
			pod: pod("p", "", "", func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("2")
			}),
			want: "0/2 nodes are available: 2 Insufficient example.com/gpu." + noClaims + "0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
		},
		{
			name:  "host port",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110)},
			pods: []*corev1.Pod{pod("web", "", "", onNode("a"), func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
			})},
			pod: pod("p", "", "", func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, HostIP: "10.0.0.1"}}
			}),
			want: "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports." + noClaims + "0/1 nodes are available: 1 No preemption victims found for incoming pod.",
		},
		{
			name:  "a pod that names its node, as a DaemonSet's (kubernetes/kubernetes#141227)",
			nodes: []*corev1.Node{node("a", "1", "8Gi", 110), node("b", "4", "8Gi", 110), node("c", "4", "8Gi", 110)},
			pods:  []*corev1.Pod{pod("a-old", "1", "", onNode("a"))},
			pod:   pod("p", "500m", "", named("a")),
			want: "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]." + noClaims +
				"0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.",
		},
		{
			name:  "node names that conflict",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110)},
			pod: pod("p", "", "", named("a"), func(p *corev1.Pod) {
				t := &p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
				t.MatchFields = append(t.MatchFields, corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}})
			}),
			want: "0/1 nodes are available: pod affinity terms conflict." + noClaims + "0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
		},
		{
			name:  "victims of lower priority, not enough once gone",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110)},
			pods:  []*corev1.Pod{pod("low", "1", "", onNode("a"), priority(0)), pod("high", "3", "", onNode("a"), priority(100))},
			pod:   pod("p", "2", "", priority(10)),
			want:  "0/1 nodes are available: 1 Insufficient cpu." + noClaims + "0/1 nodes are available: 1 Insufficient cpu.",
		},
		{
			name:  "victims whose eviction would make room: kube would preempt, trustplane does not and says nothing of it",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110)},
			pods:  []*corev1.Pod{pod("low", "3", "", onNode("a"), priority(0))},
			pod:   pod("p", "2", "", priority(10)),
			want:  "0/1 nodes are available: 1 Insufficient cpu.",
		},
		{
			name:  "anti-affinity to a pod of lower priority: kube would evict it, trustplane says nothing of it",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110)},
			pods:  []*corev1.Pod{pod("db-0", "", "", onNode("a"), priority(0), labelled("app", "db"))},
			pod:   pod("p", "", "", priority(10), avoidDB),
			want:  "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules.",
		},
		{
			name:  "anti-affinity to pods of lower and higher priority: evicting the lower is not enough",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110)},
			pods:  []*corev1.Pod{pod("db-0", "", "", onNode("a"), priority(0), labelled("app", "db")), pod("db-1", "", "", onNode("a"), priority(100), labelled("app", "db"))},
			pod:   pod("p", "", "", priority(10), avoidDB),
			want:  "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules." + noClaims + "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules.",
		},
		{
			name:  "preemptionPolicy Never",
			nodes: []*corev1.Node{node("a", "1", "8Gi", 110)},
			pod: pod("p", "2", "", func(p *corev1.Pod) {
				never := corev1.PreemptNever
				p.Spec.PreemptionPolicy = &never
			}),
			want: "0/1 nodes are available: 1 Insufficient cpu." + noClaims + "not eligible due to preemptionPolicy=Never.",
		},
		{
			name:  "a pod with resource claims: DynamicResources would look at them; trustplane says nothing",
			nodes: []*corev1.Node{node("a", "1", "8Gi", 110)},
			pod: pod("p", "2", "", func(p *corev1.Pod) {
				p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu-0")}}
			}),
			want: "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
		},
		{
			name:    "DefaultPreemption and DynamicResources disabled",
			nodes:   []*corev1.Node{node("a", "1", "8Gi", 110)},
			pod:     pod("p", "2", ""),
			profile: "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: DefaultPreemption\n      - name: DynamicResources\n",
			want:    "0/1 nodes are available: 1 Insufficient cpu.",
		},
		{name: "no nodes", pod: pod("p", "", ""), want: "no nodes available to schedule pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestScheduler(tc.nodes, tc.pods...)
			if tc.profile != "" {
				c, err := ParseConfig([]byte(configHeader + tc.profile))
				if err != nil {
					t.Fatal(err)
				}
				s.profile = c.Profile
			}
			host, err := s.schedulePod(tc.pod, s.cache.snapshot())
			if err == nil {
				t.Fatalf("scheduled on %s, want %q", host, tc.want)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A pod goes where it fits, and the scores choose among the nodes it fits.
func TestSchedulePod(t *testing.T) {
	preferSSD := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight:     10,
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}},
		}}}}
	}
	ssd := func(n *corev1.Node) { n.Labels["disk"] = "ssd" }
	// holds gives a node an image of 500 MB under names: on one node of
	// two, ImageLocality scores it (250 MB - 23 MB) / (1000 MB - 23 MB).
	holds := func(names ...string) func(*corev1.Node) {
		return func(n *corev1.Node) {
			n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: names, SizeBytes: 500 << 20})
		}
	}
	image := func(name string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.Containers[0].Image = name } }
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		pods  []*corev1.Pod
		pod   *corev1.Pod
		want  string
	}{
		{
			name:  "least allocated",
			nodes: []*corev1.Node{node("busy", "4", "8Gi", 110), node("idle", "4", "8Gi", 110)},
			pods:  []*corev1.Pod{pod("old", "3", "6Gi", onNode("busy"))},
			pod:   pod("p", "500m", "1Gi"),
			want:  "idle",
		},
		{
			name:  "preferred node affinity",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110, ssd), node("c", "4", "8Gi", 110)},
			pod:   pod("p", "", "", preferSSD),
			want:  "b",
		},
		{
			name: "PreferNoSchedule taint avoided",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110, func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}}
			}), node("b", "4", "8Gi", 110)},
			pod:  pod("p", "", ""),
			want: "b",
		},
		{
			name: "tolerated taint",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110, func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "gpu", Value: "yes", Effect: corev1.TaintEffectNoSchedule}}
			}), node("b", "1", "8Gi", 110)},
			pod: pod("p", "2", "", func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "yes", Effect: corev1.TaintEffectNoSchedule}}
			}),
			want: "a",
		},
		{
			name:  "required node affinity",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110, ssd)},
			pod: pod("p", "", "", func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpExists}}}},
				}}}
			}),
			want: "b",
		},
		{
			// The scores prefer the node of more cpu; only the other has
			// the storage.
			name:  "ephemeral storage",
			nodes: []*corev1.Node{node("cpu", "8", "8Gi", 110, ephemeral("1Gi")), node("disk", "4", "8Gi", 110, ephemeral("10Gi"))},
			pod:   pod("p", "500m", "", asksEphemeral("5Gi")),
			want:  "disk",
		},
		// The node that wins comes first: the test's seeded rand breaks
		// a tie of two for the second, at the first draws.
		{
			name:  "image locality: the node that holds the pod's image",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110, holds("registry.example/app:1")), node("b", "4", "8Gi", 110)},
			pod:   pod("p", "", ""),
			want:  "a",
		},
		{
			// The port of the registry is no tag; another tag is another
			// image.
			name: "image locality: an untagged image is :latest",
			nodes: []*corev1.Node{
				node("a", "4", "8Gi", 110, holds("registry.example:5000/db:latest")),
				node("b", "4", "8Gi", 110, holds("registry.example:5000/db:2")),
			},
			pod:  pod("p", "", "", image("registry.example:5000/db")),
			want: "a",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Ties are broken at random, from a seeded source that may
			// favour one place in the list: the nodes in both orders,
			// so that only the scores can choose the same node.
			reversed := slices.Clone(tc.nodes)
			slices.Reverse(reversed)
			for i, nodes := range [][]*corev1.Node{tc.nodes, reversed} {
				s := newTestScheduler(nodes, tc.pods...)
				for range 5 {
					host, err := s.schedulePod(tc.pod, s.cache.snapshot())
					if err != nil || host != tc.want {
						t.Fatalf("nodes in order %d: scheduled on %q, %v; want %q", i, host, err, tc.want)
					}
				}
			}
		})
	}
}

// An assumed pod counts on its node: a second pod that would overbook the
// node goes elsewhere, and a failed binding gives the room back.
func TestAssumeCountsBeforeBinding(t *testing.T) {
	s := newTestScheduler([]*corev1.Node{node("a", "2", "8Gi", 110)})
	first := pod("first", "1500m", "")
	host, err := s.schedulePod(first, s.cache.snapshot())
	if err != nil || host != "a" {
		t.Fatalf("first: %q, %v", host, err)
	}
	assumed := first.DeepCopy()
	assumed.Spec.NodeName = host
	if err := s.cache.assume(assumed); err != nil {
		t.Fatal(err)
	}
	if _, err := s.schedulePod(pod("second", "1", ""), s.cache.snapshot()); err == nil || !strings.Contains(err.Error(), "Insufficient cpu") {
		t.Fatalf("second pod with the first assumed: %v, want Insufficient cpu", err)
	}
	// The informer's view of the bound pod replaces the assumed one; it
	// is not counted twice.
	s.cache.addPod(assumed)
	if n := s.cache.snapshot()[0]; len(n.pods) != 1 || n.requested.milliCPU != 1500 {
		t.Errorf("after confirmation: %d pods, %dm requested; want 1, 1500m", len(n.pods), n.requested.milliCPU)
	}
	s.cache.forget(assumed.UID) // confirmed: forget does nothing
	if n := s.cache.snapshot()[0]; len(n.pods) != 1 {
		t.Errorf("forget removed a confirmed pod")
	}
	s.cache.removePod(assumed.UID)
	if _, err := s.schedulePod(pod("second", "1", ""), s.cache.snapshot()); err != nil {
		t.Errorf("second pod once the first is gone: %v", err)
	}
}

func TestFeasibleNodesToFind(t *testing.T) {
	p := DefaultProfile()
	for _, tc := range []struct{ nodes, want int }{{10, 10}, {99, 99}, {100, 100}, {250, 120}, {1000, 420}, {5000, 500}, {10000, 500}} {
		if got := p.feasibleNodesToFind(tc.nodes); got != tc.want {
			t.Errorf("feasibleNodesToFind(%d) = %d, want %d", tc.nodes, got, tc.want)
		}
	}
}

func TestBalancedAllocation(t *testing.T) {
	// cpu half used, memory a quarter: 100 - |0.5-0.25|/2*100.
	s := newTestScheduler([]*corev1.Node{node("a", "4", "8Gi", 110)})
	c := newPodCycle(newPodInfo(pod("p", "2", "2Gi")), s.cache.snapshot(), s.namespaceLabels)
	if got := defaultBalancedScoring().score(c, s.cache.snapshot()[0]); got != 87 {
		t.Errorf("balanced allocation %d, want 87", got)
	}
	// (4-2)/4 and (8-2)/8: (50+75)/2.
	if got := defaultFitScoring().score(c, s.cache.snapshot()[0]); got != 62 {
		t.Errorf("least allocated %d, want 62", got)
	}
}

// The queue: priority first; an unschedulable pod waits for a move, one
// whose attempt overlapped a move goes to backoff, and backoff doubles.
func TestQueue(t *testing.T) {
	now := time.Unix(1000, 0)
	q := newSchedulingQueue()
	q.now = func() time.Time { return now }
	prio := func(v int32) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.Priority = &v } }
	q.add(pod("low", "", "", prio(1)))
	q.add(pod("high", "", "", prio(10)))
	qp, cycle, _ := q.pop()
	if qp.pod.Name != "high" {
		t.Fatalf("popped %s first, want high", qp.pod.Name)
	}
	q.requeue(qp, cycle, true)
	if q.unschedulable[qp.pod.UID] == nil {
		t.Fatal("an unschedulable pod is not put aside")
	}
	low, lowCycle, _ := q.pop()
	q.moveAll() // during low's attempt: high moves, low must not be put aside
	q.requeue(low, lowCycle, true)
	if len(q.unschedulable) != 0 || len(q.backoff) != 2 {
		t.Fatalf("after a move: %d unschedulable, %d in backoff; want 0, 2", len(q.unschedulable), len(q.backoff))
	}
	now = now.Add(999 * time.Millisecond)
	q.flush(false)
	if len(q.active) != 0 {
		t.Fatalf("backoff of 1s over after 999ms")
	}
	now = now.Add(time.Millisecond)
	q.flush(false)
	if len(q.active) != 2 {
		t.Fatalf("%d active after 1s of backoff, want 2", len(q.active))
	}
	qp, cycle, _ = q.pop()
	q.requeue(qp, cycle, false)
	if got := q.backoffExpiry(qp).Sub(now); got != 2*time.Second {
		t.Errorf("second backoff %s, want 2s", got)
	}
	q.remove(qp.pod.UID)
	if len(q.backoff) != 0 || len(q.all) != 1 {
		t.Errorf("removed pod still queued")
	}
}

// Required pod anti-affinity keeps twins apart, and required affinity
// keeps a pod with the pods it needs; the first of a group goes anywhere.
func TestInterPodAffinity(t *testing.T) {
	zone := func(z string) func(*corev1.Node) { return func(n *corev1.Node) { n.Labels["zone"] = z } }
	app := func(v string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Labels = map[string]string{"app": v} }
	}
	term := func(key string) corev1.PodAffinityTerm {
		return corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: key}
	}
	anti := func(key string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(key)}}}
		}
	}
	with := func(key string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(key)}}}
		}
	}
	revision := func(r string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Labels["rev"] = r } }
	antiByRevision := func(p *corev1.Pod) {
		t := term("zone")
		t.MatchLabelKeys = []string{"rev"}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{t}}}
	}
	nodes := []*corev1.Node{node("a", "4", "8Gi", 110, zone("1")), node("b", "4", "8Gi", 110, zone("1")), node("c", "4", "8Gi", 110, zone("2"))}
	for _, tc := range []struct {
		name    string
		pods    []*corev1.Pod
		pod     *corev1.Pod
		want    []string // any of
		wantErr string
	}{
		{name: "twin apart by host", pods: []*corev1.Pod{pod("db-0", "", "", app("db"), anti("kubernetes.io/hostname"), onNode("a"))},
			pod: pod("db-1", "", "", app("db"), anti("kubernetes.io/hostname")), want: []string{"b", "c"}},
		{name: "twin apart by zone", pods: []*corev1.Pod{pod("db-0", "", "", app("db"), anti("zone"), onNode("a"))},
			pod: pod("db-1", "", "", app("db"), anti("zone")), want: []string{"c"}},
		{name: "existing pod's anti-affinity", pods: []*corev1.Pod{pod("guard", "", "", anti("zone"), onNode("c"))},
			pod: pod("db-1", "", "", app("db")), want: []string{"a", "b"}},
		{name: "no room for a third twin by zone",
			pods:    []*corev1.Pod{pod("db-0", "", "", app("db"), anti("zone"), onNode("a")), pod("db-1", "", "", app("db"), anti("zone"), onNode("c"))},
			pod:     pod("db-2", "", "", app("db"), anti("zone")),
			wantErr: "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. no new claims to deallocate, preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."},
		{name: "affinity with db's zone", pods: []*corev1.Pod{pod("db-0", "", "", app("db"), onNode("c"))},
			pod: pod("web", "", "", with("zone")), want: []string{"c"}},
		{name: "affinity, no db anywhere", pod: pod("web", "", "", with("zone")),
			wantErr: "0/3 nodes are available: 3 node(s) didn't match pod affinity rules. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."},
		{name: "first of its group", pod: pod("db-0", "", "", app("db"), with("zone")), want: []string{"a", "b", "c"}},
		{name: "matchLabelKeys: twins apart by zone within a revision only",
			pods: []*corev1.Pod{pod("db-0", "", "", app("db"), revision("1"), antiByRevision, onNode("a"))},
			pod:  pod("db-1", "", "", app("db"), revision("2"), antiByRevision), want: []string{"a", "b", "c"}},
		{name: "matchLabelKeys: the same revision",
			pods: []*corev1.Pod{pod("db-0", "", "", app("db"), revision("1"), antiByRevision, onNode("a"))},
			pod:  pod("db-1", "", "", app("db"), revision("1"), antiByRevision), want: []string{"c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestScheduler(nodes, tc.pods...)
			for range 10 {
				host, err := s.schedulePod(tc.pod, s.cache.snapshot())
				if tc.wantErr != "" {
					if err == nil || err.Error() != tc.wantErr {
						t.Fatalf("scheduled on %q, %v; want %q", host, err, tc.wantErr)
					}
					continue
				}
				if err != nil || !slices.Contains(tc.want, host) {
					t.Fatalf("scheduled on %q, %v; want one of %q", host, err, tc.want)
				}
			}
		})
	}
}

// A pod with a scheduling gate waits outside the queue until its last
// gate is removed.
func TestSchedulingGates(t *testing.T) {
	s := newTestScheduler(nil)
	gated := pod("p", "", "", func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}} })
	s.podAdded(gated)
	if len(s.queue.all) != 0 {
		t.Fatalf("a gated pod is queued")
	}
	open := gated.DeepCopy()
	open.Spec.SchedulingGates = nil
	s.podUpdated(gated, open)
	if len(s.queue.active) != 1 {
		t.Errorf("%d pods active once the gate is removed, want 1", len(s.queue.active))
	}
}
