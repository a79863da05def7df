package scheduler

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func labelled(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		for i := 0; i < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func nodeLabelled(kv ...string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		for i := 0; i < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

// withoutHostname: a node that lacks the hostname label.
func withoutHostname(n *corev1.Node) { delete(n.Labels, corev1.LabelHostname) }

// spread adds a topology spread constraint selecting pods with label key.
func spread(maxSkew int32, topologyKey string, action corev1.UnsatisfiableConstraintAction, key string, mods ...func(*corev1.TopologySpreadConstraint)) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		c := corev1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: topologyKey, WhenUnsatisfiable: action}
		if key != "" {
			c.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpExists}}}
		}
		for _, m := range mods {
			m(&c)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
}

// podsOn are n pods on node, labelled as mods say, named after the node.
func podsOn(node string, n int, mods ...func(*corev1.Pod)) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, pod(node+"-"+string(rune('a'+i)), "", "", append([]func(*corev1.Pod){onNode(node)}, mods...)...))
	}
	return out
}

// filterReasons runs every filter on every node: the first reason of
// each node refused, "" for each node the pod fits.
func filterReasons(s *scheduler, p *corev1.Pod) map[string]string {
	nodes := s.cache.snapshot()
	c := newPodCycle(newPodInfo(p), nodes, s.namespaceLabels)
	c.spreadSelector, c.spreadDefaults = s.spreadSelector, s.profile.spreadDefaults
	s.profile.prepareFilters(c)
	out := map[string]string{}
	for _, n := range nodes {
		out[n.name] = ""
		if why, _ := s.profile.runFilters(c, n); len(why) > 0 {
			out[n.name] = why[0]
		}
	}
	return out
}

// runScorer is one scorer's normalized scores of the feasible nodes, by
// name, the other nodes of the cache being there but not feasible.
func runScorer(t *testing.T, s *scheduler, name string, p *corev1.Pod, feasible []string) map[string]int64 {
	t.Helper()
	nodes := s.cache.snapshot()
	c := newPodCycle(newPodInfo(p), nodes, s.namespaceLabels)
	c.spreadSelector, c.spreadDefaults = s.spreadSelector, s.profile.spreadDefaults
	var fit []*nodeInfo
	for _, n := range nodes {
		if slices.Contains(feasible, n.name) {
			fit = append(fit, n)
		}
	}
	c.feasible = fit
	i := slices.IndexFunc(s.profile.scorers, func(sc scorer) bool { return sc.name == name })
	if i < 0 {
		t.Fatalf("no scorer %s", name)
	}
	sc := s.profile.scorers[i]
	out := map[string]int64{}
	if sc.prepare != nil && !sc.prepare(c) {
		for _, n := range fit {
			out[n.name] = 0
		}
		return out
	}
	raw := make([]int64, len(fit))
	for i, n := range fit {
		raw[i] = sc.score(c, n)
	}
	if sc.normalize != nil {
		sc.normalize(raw)
	}
	for i, n := range fit {
		out[n.name] = raw[i]
	}
	return out
}

// PodTopologySpread's filter, with kube's examples (filtering_test.go):
// "2/1/0/3" are the matching pods on nodes a, b, x, y.
func TestTopologySpreadFilter(t *testing.T) {
	zone := func(z string) func(*corev1.Node) { return nodeLabelled("zone", z) }
	foo := labelled("foo", "")
	fourNodes := []*corev1.Node{node("a", "4", "8Gi", 110, zone("1")), node("b", "4", "8Gi", 110, zone("1")), node("x", "4", "8Gi", 110, zone("2")), node("y", "4", "8Gi", 110, zone("2"))}
	honor, ignore := corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore
	minDomains := func(n int32) func(*corev1.TopologySpreadConstraint) {
		return func(c *corev1.TopologySpreadConstraint) { c.MinDomains = &n }
	}
	affinityPolicy := func(p corev1.NodeInclusionPolicy) func(*corev1.TopologySpreadConstraint) {
		return func(c *corev1.TopologySpreadConstraint) { c.NodeAffinityPolicy = &p }
	}
	taintsPolicy := func(p corev1.NodeInclusionPolicy) func(*corev1.TopologySpreadConstraint) {
		return func(c *corev1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &p }
	}
	matchLabelKeys := func(keys ...string) func(*corev1.TopologySpreadConstraint) {
		return func(c *corev1.TopologySpreadConstraint) { c.MatchLabelKeys = keys }
	}
	tainted := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}}
	}
	hostSpread := func(skew int32, mods ...func(*corev1.TopologySpreadConstraint)) func(*corev1.Pod) {
		return spread(skew, corev1.LabelHostname, corev1.DoNotSchedule, "foo", mods...)
	}
	const skewed, fits = reasonSpread, ""
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		pods  [][]*corev1.Pod
		pod   *corev1.Pod
		want  map[string]string
	}{
		{
			name:  "no existing pods",
			nodes: fourNodes,
			pod:   pod("p", "", "", foo, spread(1, "zone", corev1.DoNotSchedule, "foo")),
			want:  map[string]string{"a": fits, "b": fits, "x": fits, "y": fits},
		},
		{
			name:  "pods spread across nodes as 2/1/0/3, only node-x fits",
			nodes: fourNodes,
			pods:  [][]*corev1.Pod{podsOn("a", 2, foo), podsOn("b", 1, foo), podsOn("y", 3, foo)},
			pod:   pod("p", "", "", foo, hostSpread(1)),
			want:  map[string]string{"a": skewed, "b": skewed, "x": fits, "y": skewed},
		},
		{
			name:  "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
			nodes: fourNodes,
			pods:  [][]*corev1.Pod{podsOn("a", 2, foo), podsOn("b", 1, foo), podsOn("y", 3, foo)},
			pod:   pod("p", "", "", foo, hostSpread(2)),
			want:  map[string]string{"a": skewed, "b": fits, "x": fits, "y": skewed},
		},
		{
			name:  "pods spread across zones as 3/3, all nodes fit",
			nodes: fourNodes,
			pods:  [][]*corev1.Pod{podsOn("a", 1, foo), podsOn("b", 2, foo), podsOn("x", 2, foo), podsOn("y", 1, foo)},
			pod:   pod("p", "", "", foo, spread(1, "zone", corev1.DoNotSchedule, "foo")),
			want:  map[string]string{"a": fits, "b": fits, "x": fits, "y": fits},
		},
		{
			name:  "pods spread across zones as 1/2, only zone1 fits",
			nodes: fourNodes,
			pods:  [][]*corev1.Pod{podsOn("a", 1, foo), podsOn("x", 1, foo), podsOn("y", 1, foo)},
			pod:   pod("p", "", "", foo, spread(1, "zone", corev1.DoNotSchedule, "foo")),
			want:  map[string]string{"a": fits, "b": fits, "x": skewed, "y": skewed},
		},
		{
			name:  "incoming pod doesn't match itself",
			nodes: fourNodes,
			pods:  [][]*corev1.Pod{podsOn("a", 2, foo), podsOn("x", 1, foo)},
			pod:   pod("p", "", "", spread(1, "zone", corev1.DoNotSchedule, "foo")),
			want:  map[string]string{"a": fits, "b": fits, "x": fits, "y": fits},
		},
		{
			name:  "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110, zone("1")), node("b", "4", "8Gi", 110), node("x", "4", "8Gi", 110, zone("2")), node("y", "4", "8Gi", 110, zone("2"))},
			pods:  [][]*corev1.Pod{podsOn("a", 1, foo), podsOn("b", 3, foo), podsOn("x", 1, foo), podsOn("y", 1, foo)},
			pod:   pod("p", "", "", foo, spread(1, "zone", corev1.DoNotSchedule, "foo")),
			want:  map[string]string{"a": fits, "b": reasonSpreadMissingLabel, "x": skewed, "y": skewed},
		},
		{
			name:  "pods in other namespaces and pods being deleted do not count",
			nodes: fourNodes,
			pods: [][]*corev1.Pod{
				podsOn("a", 2, foo, func(p *corev1.Pod) { p.Namespace = "other" }),
				podsOn("b", 2, foo, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }),
				podsOn("x", 1, foo),
			},
			pod:  pod("p", "", "", foo, hostSpread(1)),
			want: map[string]string{"a": fits, "b": fits, "x": skewed, "y": fits},
		},
		{
			name:  "two constraints on zone and node, spreads = [3/3, 2/1/0/3]",
			nodes: fourNodes,
			pods:  [][]*corev1.Pod{podsOn("a", 2, foo), podsOn("b", 1, foo), podsOn("y", 3, foo)},
			pod:   pod("p", "", "", foo, spread(1, "zone", corev1.DoNotSchedule, "foo"), hostSpread(1)),
			want:  map[string]string{"a": skewed, "b": skewed, "x": fits, "y": skewed},
		},
		{
			name:  "two constraints on zone and node, spreads = [1/4, 1/0/1/3]: no node fits both",
			nodes: fourNodes,
			pods:  [][]*corev1.Pod{podsOn("a", 1, foo), podsOn("x", 1, foo), podsOn("y", 3, foo)},
			pod:   pod("p", "", "", foo, spread(1, "zone", corev1.DoNotSchedule, "foo"), hostSpread(1)),
			want:  map[string]string{"a": skewed, "b": fits, "x": skewed, "y": skewed},
		},
		{
			name:  "fewer domains than minDomains: the global minimum is 0, only the third node fits",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110), node("c", "4", "8Gi", 110)},
			pods:  [][]*corev1.Pod{podsOn("a", 2, foo), podsOn("b", 2, foo), podsOn("c", 1, foo)},
			pod:   pod("p", "", "", foo, hostSpread(2, minDomains(4))),
			want:  map[string]string{"a": skewed, "b": skewed, "c": fits},
		},
		{
			name:  "as many domains as minDomains: the global minimum counts",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110), node("c", "4", "8Gi", 110)},
			pods:  [][]*corev1.Pod{podsOn("a", 2, foo), podsOn("b", 2, foo), podsOn("c", 1, foo)},
			pod:   pod("p", "", "", foo, hostSpread(2, minDomains(3))),
			want:  map[string]string{"a": fits, "b": fits, "c": fits},
		},
		{
			name:  "nodeAffinityPolicy Honor (the default): a node the pod may not go to is no domain",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110, nodeLabelled("foo", "")), node("b", "4", "8Gi", 110, nodeLabelled("foo", "")), node("c", "4", "8Gi", 110)},
			pods:  [][]*corev1.Pod{podsOn("a", 1, foo), podsOn("b", 1, foo)},
			pod:   pod("p", "", "", foo, func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"foo": ""} }, hostSpread(1)),
			want:  map[string]string{"a": fits, "b": fits, "c": reasonNodeAffinity},
		},
		{
			name:  "nodeAffinityPolicy Ignore: it is",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110, nodeLabelled("foo", "")), node("b", "4", "8Gi", 110, nodeLabelled("foo", "")), node("c", "4", "8Gi", 110)},
			pods:  [][]*corev1.Pod{podsOn("a", 1, foo), podsOn("b", 1, foo)},
			pod:   pod("p", "", "", foo, func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"foo": ""} }, hostSpread(1, affinityPolicy(ignore))),
			want:  map[string]string{"a": skewed, "b": skewed, "c": reasonNodeAffinity},
		},
		{
			name:  "nodeTaintsPolicy Ignore (the default): a tainted node is a domain",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110), node("c", "4", "8Gi", 110, tainted)},
			pods:  [][]*corev1.Pod{podsOn("a", 1, foo), podsOn("b", 1, foo)},
			pod:   pod("p", "", "", foo, hostSpread(1)),
			want:  map[string]string{"a": skewed, "b": skewed, "c": reasonUntoleratedTaint},
		},
		{
			name:  "nodeTaintsPolicy Honor: a node whose taint the pod does not tolerate is not",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110), node("c", "4", "8Gi", 110, tainted)},
			pods:  [][]*corev1.Pod{podsOn("a", 1, foo), podsOn("b", 1, foo)},
			pod:   pod("p", "", "", foo, hostSpread(1, taintsPolicy(honor))),
			want:  map[string]string{"a": fits, "b": fits, "c": reasonUntoleratedTaint},
		},
		{
			name:  "matchLabelKeys: only the pods of the incoming pod's revision count",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110)},
			pods:  [][]*corev1.Pod{podsOn("a", 2, foo, labelled("rev", "1"))},
			pod:   pod("p", "", "", foo, labelled("rev", "2"), hostSpread(1, matchLabelKeys("rev"))),
			want:  map[string]string{"a": fits, "b": fits},
		},
		{
			name:  "without matchLabelKeys every revision counts",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110)},
			pods:  [][]*corev1.Pod{podsOn("a", 2, foo, labelled("rev", "1"))},
			pod:   pod("p", "", "", foo, labelled("rev", "2"), hostSpread(1)),
			want:  map[string]string{"a": skewed, "b": fits},
		},
		{
			name:  "ScheduleAnyway constraints do not filter",
			nodes: fourNodes,
			pods:  [][]*corev1.Pod{podsOn("a", 5, foo)},
			pod:   pod("p", "", "", foo, spread(1, corev1.LabelHostname, corev1.ScheduleAnyway, "foo")),
			want:  map[string]string{"a": fits, "b": fits, "x": fits, "y": fits},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestScheduler(tc.nodes, slices.Concat(tc.pods...)...)
			if diff := cmp.Diff(tc.want, filterReasons(s, tc.pod)); diff != "" {
				t.Errorf("reasons by node (-want +got):\n%s", diff)
			}
		})
	}
}

// PodTopologySpread's score, with kube's examples (scoring_test.go):
// "2/1/0/3" are the matching pods by node, "~3~" on a node that is not
// feasible, "?2?" on one without the topology key.
func TestTopologySpreadScore(t *testing.T) {
	zone := func(z string) func(*corev1.Node) { return nodeLabelled("zone", z) }
	foo, bar := labelled("foo", ""), labelled("bar", "")
	abcd := []*corev1.Node{node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110), node("c", "4", "8Gi", 110), node("d", "4", "8Gi", 110)}
	zoned := []*corev1.Node{node("a", "4", "8Gi", 110, zone("1")), node("b", "4", "8Gi", 110, zone("1")), node("x", "4", "8Gi", 110, zone("2")), node("y", "4", "8Gi", 110, zone("2"))}
	onHost := func(skew int32, key string) func(*corev1.Pod) {
		return spread(skew, corev1.LabelHostname, corev1.ScheduleAnyway, key)
	}
	onZone := func(key string) func(*corev1.Pod) { return spread(1, "zone", corev1.ScheduleAnyway, key) }
	realZone := func(z string) func(*corev1.Node) { return nodeLabelled(corev1.LabelTopologyZone, z) }
	realZones := []*corev1.Node{node("a", "4", "8Gi", 110, realZone("1")), node("b", "4", "8Gi", 110, realZone("1")), node("x", "4", "8Gi", 110, realZone("2")), node("y", "4", "8Gi", 110, realZone("2"))}
	fooService := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "foo"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"foo": ""}}}
	for _, tc := range []struct {
		name     string
		nodes    []*corev1.Node
		pods     [][]*corev1.Pod
		pod      *corev1.Pod
		objects  []runtime.Object // Services and controllers, for the default spreading
		feasible []string
		want     map[string]int64
	}{
		{
			name: "system defaulting, nodes don't have zone, pods match service (4/3/2/1)", nodes: abcd,
			pods: [][]*corev1.Pod{podsOn("a", 4, foo), podsOn("b", 3, foo), podsOn("c", 2, foo), podsOn("d", 1, foo)}, pod: pod("p", "", "", foo),
			objects: []runtime.Object{fooService}, feasible: []string{"a", "b", "c", "d"}, want: map[string]int64{"a": 44, "b": 66, "c": 77, "d": 100},
		},
		{
			name: "system defaulting, nothing shared with the pod: no opinion", nodes: abcd,
			pods: [][]*corev1.Pod{podsOn("a", 4, foo)}, pod: pod("p", "", "", foo),
			feasible: []string{"a", "b", "c", "d"}, want: map[string]int64{"a": 0, "b": 0, "c": 0, "d": 0},
		},
		{
			name: "system defaulting, spread by zone and host among a ReplicaSet's pods", nodes: realZones,
			pods: [][]*corev1.Pod{podsOn("a", 2, labelled("app", "web")), podsOn("b", 2, labelled("app", "web")), podsOn("x", 1, labelled("app", "web"))},
			pod:  pod("p", "", "", labelled("app", "web"), ownedBy("ReplicaSet", "web")),
			objects: []runtime.Object{&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
				Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}},
			feasible: []string{"a", "b", "x", "y"}, want: map[string]int64{"a": 46, "b": 46, "x": 86, "y": 100},
		},
		{
			name:     "one constraint on node, 3 out of 4 nodes are candidates (4/2/1/~3~)",
			nodes:    []*corev1.Node{node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110), node("x", "4", "8Gi", 110), node("y", "4", "8Gi", 110)},
			pods:     [][]*corev1.Pod{podsOn("a", 4, foo), podsOn("b", 2, foo), podsOn("x", 1, foo), podsOn("y", 3, foo)},
			pod:      pod("p", "", "", foo, onHost(1, "foo")),
			feasible: []string{"a", "b", "x"}, want: map[string]int64{"a": 33, "b": 83, "x": 100},
		},
		{
			name: "one constraint on node, no existing pods", nodes: abcd[:2], pod: pod("p", "", "", foo, onHost(1, "foo")),
			feasible: []string{"a", "b"}, want: map[string]int64{"a": 100, "b": 100},
		},
		{
			name: "one constraint on node, only one node is candidate", nodes: abcd[:2],
			pods: [][]*corev1.Pod{podsOn("a", 2, foo), podsOn("b", 1, foo)}, pod: pod("p", "", "", foo, onHost(1, "foo")),
			feasible: []string{"a"}, want: map[string]int64{"a": 100},
		},
		{
			name: "one constraint on node, all 4 nodes are candidates (2/1/0/3)", nodes: abcd,
			pods: [][]*corev1.Pod{podsOn("a", 2, foo), podsOn("b", 1, foo), podsOn("d", 3, foo)}, pod: pod("p", "", "", foo, onHost(1, "foo")),
			feasible: []string{"a", "b", "c", "d"}, want: map[string]int64{"a": 20, "b": 60, "c": 100, "d": 0},
		},
		{
			name: "one constraint on node, maxSkew=2 (2/1/0/3)", nodes: abcd,
			pods: [][]*corev1.Pod{podsOn("a", 2, foo), podsOn("b", 1, foo), podsOn("d", 3, foo)}, pod: pod("p", "", "", foo, onHost(2, "foo")),
			feasible: []string{"a", "b", "c", "d"}, want: map[string]int64{"a": 33, "b": 66, "c": 100, "d": 16},
		},
		{
			name: "one constraint on node, maxSkew=3 (4/3/2/1)", nodes: abcd,
			pods: [][]*corev1.Pod{podsOn("a", 4, foo), podsOn("b", 3, foo), podsOn("c", 2, foo), podsOn("d", 1, foo)}, pod: pod("p", "", "", foo, onHost(3, "foo")),
			feasible: []string{"a", "b", "c", "d"}, want: map[string]int64{"a": 44, "b": 66, "c": 77, "d": 100},
		},
		{
			name:  "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key (4/?2?/1/~3~)",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110, withoutHostname), node("x", "4", "8Gi", 110), node("y", "4", "8Gi", 110)},
			pods:  [][]*corev1.Pod{podsOn("a", 4, foo), podsOn("b", 2, foo), podsOn("x", 1, foo), podsOn("y", 3, foo)}, pod: pod("p", "", "", foo, onHost(1, "foo")),
			feasible: []string{"a", "b", "x"}, want: map[string]int64{"a": 16, "b": 0, "x": 100},
		},
		{
			name: "one constraint on zone, 3 out of 4 nodes are candidates (4/2/1/~3~)", nodes: zoned,
			pods: [][]*corev1.Pod{podsOn("a", 4, foo), podsOn("b", 2, foo), podsOn("x", 1, foo), podsOn("y", 3, foo)}, pod: pod("p", "", "", foo, onZone("foo")),
			feasible: []string{"a", "b", "x"}, want: map[string]int64{"a": 75, "b": 75, "x": 100},
		},
		{
			name: "two constraints on zone and node, 2 out of 4 nodes are candidates (2/~1~/2/~4~)", nodes: zoned,
			pods: [][]*corev1.Pod{podsOn("a", 2, foo), podsOn("b", 1, foo), podsOn("x", 2, foo), podsOn("y", 4, foo)}, pod: pod("p", "", "", foo, onZone("foo"), onHost(1, "foo")),
			feasible: []string{"a", "x"}, want: map[string]int64{"a": 100, "x": 63},
		},
		{
			name: "two constraints on zone and node, with different labelSelectors", nodes: zoned,
			pods: [][]*corev1.Pod{podsOn("a", 1, foo), podsOn("b", 1, foo, bar), podsOn("y", 1, foo), {pod("y-bar", "", "", onNode("y"), bar)}},
			pod:  pod("p", "", "", foo, bar, onZone("foo"), onHost(1, "bar")), feasible: []string{"a", "b", "x", "y"},
			want: map[string]int64{"a": 60, "b": 20, "x": 100, "y": 60},
		},
		{
			name: "two constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates", nodes: zoned,
			pods: [][]*corev1.Pod{podsOn("a", 1, foo), podsOn("b", 1, foo, bar), podsOn("y", 1, foo), {pod("y-bar", "", "", onNode("y"), bar)}},
			pod:  pod("p", "", "", foo, bar, onZone("foo"), onHost(1, "bar")), feasible: []string{"a", "b", "x"},
			want: map[string]int64{"a": 50, "b": 25, "x": 100},
		},
		{
			name: "existing pods in a different namespace do not count", nodes: abcd[:2],
			pods: [][]*corev1.Pod{podsOn("a", 1, foo, func(p *corev1.Pod) { p.Namespace = "ns1" }), {pod("a-2", "", "", onNode("a"), foo)}, podsOn("b", 2, foo)},
			pod:  pod("p", "", "", foo, onHost(1, "foo")), feasible: []string{"a", "b"}, want: map[string]int64{"a": 100, "b": 33},
		},
		{
			name: "terminating pods are excluded", nodes: abcd[:2],
			pods: [][]*corev1.Pod{podsOn("a", 1, foo, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }), podsOn("b", 1, foo)},
			pod:  pod("p", "", "", foo, onHost(1, "foo")), feasible: []string{"a", "b"}, want: map[string]int64{"a": 100, "b": 0},
		},
		{
			name:  "NodeAffinityPolicy honored with labelSelectors",
			nodes: []*corev1.Node{node("a", "4", "8Gi", 110, nodeLabelled("node", "a", "foo", "")), node("b", "4", "8Gi", 110, nodeLabelled("node", "b", "foo", "")), node("c", "4", "8Gi", 110, nodeLabelled("node", "c"))},
			pods:  [][]*corev1.Pod{podsOn("a", 2, foo), podsOn("b", 1, foo), podsOn("c", 1, foo)},
			pod: pod("p", "", "", foo, func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"foo": ""} },
				spread(1, "node", corev1.ScheduleAnyway, "foo")),
			feasible: []string{"a", "b", "c"}, want: map[string]int64{"a": 0, "b": 33, "c": 100},
		},
		{
			name: "no soft constraints: no opinion", nodes: abcd[:2],
			pods: [][]*corev1.Pod{podsOn("a", 3, foo)}, pod: pod("p", "", "", foo, spread(1, corev1.LabelHostname, corev1.DoNotSchedule, "foo")),
			feasible: []string{"a", "b"}, want: map[string]int64{"a": 0, "b": 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestScheduler(tc.nodes, slices.Concat(tc.pods...)...)
			s.spreadSelector = listersOf(t, tc.objects...).selector
			got := runScorer(t, s, "PodTopologySpread", tc.pod, tc.feasible)
			if !maps.Equal(got, tc.want) {
				t.Errorf("scores %v, want %v", got, tc.want)
			}
		})
	}
}

// An assigned pod's arrival moves back only the pods it may let fit:
// those that wait for pods (required affinity, DoNotSchedule spread).
func TestMoveOnAssignedPod(t *testing.T) {
	q := newSchedulingQueue()
	q.add(pod("big", "64", ""))
	q.add(pod("spread", "", "", spread(1, "zone", corev1.DoNotSchedule, "foo")))
	for range 2 {
		qp, cycle, _ := q.pop()
		q.requeue(qp, cycle, true)
	}
	q.moveWhere(waitsForPods)
	if _, ok := q.unschedulable["uid-big"]; !ok || len(q.unschedulable) != 1 {
		t.Errorf("unschedulable after an assigned pod's arrival: %v, want big only", slices.Collect(maps.Keys(q.unschedulable)))
	}
}

// An assigned pod whose labels change moves back the pods whose fit
// depends on pods' labels, those with required anti-affinity included.
func TestMoveOnAssignedPodLabels(t *testing.T) {
	s := newTestScheduler(nil)
	anti := pod("twin", "", "", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: corev1.LabelHostname,
		}}}}
	})
	for _, p := range []*corev1.Pod{pod("big", "64", ""), anti} {
		s.queue.add(p)
		qp, cycle, _ := s.queue.pop()
		s.queue.requeue(qp, cycle, true)
	}
	placed := pod("db-0", "", "", onNode("a"), labelled("app", "db"))
	s.podAdded(placed)
	if len(s.queue.unschedulable) != 2 {
		t.Fatalf("%d unschedulable after a pod placed, want 2 (neither waits for pods)", len(s.queue.unschedulable))
	}
	relabelled := placed.DeepCopy()
	relabelled.Labels = map[string]string{"app": "cache"}
	s.podUpdated(placed, relabelled)
	if _, ok := s.queue.unschedulable["uid-big"]; !ok || len(s.queue.unschedulable) != 1 {
		t.Errorf("unschedulable after a placed pod's labels changed: %v, want big only", slices.Collect(maps.Keys(s.queue.unschedulable)))
	}
}

// ownedBy makes the pod its controller's, of kind in apps/v1.
func ownedBy(kind, name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: kind, Name: name, UID: "uid-" + types.UID(name), Controller: ptr.To(true)}}
	}
}

// listersOf are the listers of spreadSelectors over objects, real
// in-memory indexers as the informers fill.
func listersOf(t *testing.T, objects ...runtime.Object) spreadSelectors {
	t.Helper()
	index := func() toolscache.Indexer {
		return toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	}
	services, replicaSets, statefulSets := index(), index(), index()
	for _, o := range objects {
		var err error
		switch o.(type) {
		case *corev1.Service:
			err = services.Add(o)
		case *appsv1.ReplicaSet:
			err = replicaSets.Add(o)
		case *appsv1.StatefulSet:
			err = statefulSets.Add(o)
		default:
			t.Fatalf("no lister for %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return spreadSelectors{
		services: corelisters.NewServiceLister(services), replicaSets: appslisters.NewReplicaSetLister(replicaSets),
		statefulSets: appslisters.NewStatefulSetLister(statefulSets),
	}
}

// The pods a pod is spread among by default, as kube's DefaultSelector:
// its Services' selectors merged, and its controller's.
func TestSpreadSelector(t *testing.T) {
	web := labelled("app", "web", "tier", "front")
	objects := []runtime.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "front"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"tier": "front"}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "headless"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web", "ns": "other"}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "db"}}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"},
			Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "1"}}}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
			Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"db"}}}}}},
	}
	l := listersOf(t, objects...)
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"services of its namespace that select it", pod("p", "", "", web), "app=web,tier=front"},
		{"and its ReplicaSet", pod("p", "", "", web, labelled("pod-template-hash", "1"), ownedBy("ReplicaSet", "web-1")), "app=web,app=web,pod-template-hash=1,tier=front"},
		{"a StatefulSet's expressions", pod("p", "", "", labelled("app", "db"), ownedBy("StatefulSet", "db")), "app=db,app in (db)"},
		{"a controller not found", pod("p", "", "", labelled("app", "new"), ownedBy("ReplicaSet", "gone")), ""},
		{"nothing shared", pod("p", "", "", labelled("app", "batch")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := l.selector(tc.pod).String(); got != tc.want {
				t.Errorf("selector %q, want %q", got, tc.want)
			}
		})
	}
}
