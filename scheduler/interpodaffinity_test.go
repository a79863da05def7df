package scheduler

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// InterPodAffinity's score, with kube's examples (scoring_test.go,
// TestPreferredAffinity): the incoming pod's preferred terms, and
// symmetrically the existing pods' preferred terms and required
// affinity toward it.
func TestInterPodAffinityScore(t *testing.T) {
	region := func(r string) func(*corev1.Node) { return nodeLabelled("region", r) }
	az := func(z string) func(*corev1.Node) { return nodeLabelled("az", z) }
	security := func(v string) func(*corev1.Pod) { return labelled("security", v) }
	in := func(values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: "security", Operator: metav1.LabelSelectorOpIn, Values: values}
	}
	term := func(key string, reqs ...metav1.LabelSelectorRequirement) corev1.PodAffinityTerm {
		return corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchExpressions: reqs}, TopologyKey: key}
	}
	weighted := func(w int32, t corev1.PodAffinityTerm) corev1.WeightedPodAffinityTerm {
		return corev1.WeightedPodAffinityTerm{Weight: w, PodAffinityTerm: t}
	}
	prefer := func(terms ...corev1.WeightedPodAffinityTerm) *corev1.PodAffinity {
		return &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}
	}
	avoid := func(terms ...corev1.WeightedPodAffinityTerm) *corev1.PodAntiAffinity {
		return &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}
	}
	with := func(a *corev1.Affinity) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.Affinity = a } }
	exists := metav1.LabelSelectorRequirement{Key: "security", Operator: metav1.LabelSelectorOpExists}
	noWrongKey := metav1.LabelSelectorRequirement{Key: "wrongkey", Operator: metav1.LabelSelectorOpDoesNotExist}

	stayWithS1InRegion := &corev1.Affinity{PodAffinity: prefer(weighted(5, term("region", in("S1"))))}
	stayWithS2InRegion := &corev1.Affinity{PodAffinity: prefer(weighted(6, term("region", in("S2"))))}
	affinity3 := &corev1.Affinity{PodAffinity: prefer(
		weighted(8, term("region", metav1.LabelSelectorRequirement{Key: "security", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"S1"}}, in("S2"))),
		weighted(2, term("region", exists, noWrongKey)),
	)}
	hardAffinity := &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		term("region", in("S1", "value2")), term("region", exists, noWrongKey),
	}}}
	awayFromS1InAz := &corev1.Affinity{PodAntiAffinity: avoid(weighted(5, term("az", in("S1"))))}
	awayFromS2InAz := &corev1.Affinity{PodAntiAffinity: avoid(weighted(5, term("az", in("S2"))))}
	stayWithS1InRegionAwayFromS2InAz := &corev1.Affinity{PodAffinity: prefer(weighted(8, term("region", in("S1")))), PodAntiAffinity: avoid(weighted(5, term("az", in("S2"))))}
	team1 := func(t corev1.PodAffinityTerm) corev1.PodAffinityTerm {
		t.Namespaces = []string{"subteam2.team2"}
		t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "team1"}}
		return t
	}
	affinityNamespaceSelector := &corev1.Affinity{PodAffinity: prefer(weighted(5, team1(term("region", in("S1")))))}
	antiAffinityNamespaceSelector := &corev1.Affinity{PodAntiAffinity: avoid(weighted(5, team1(term("region", in("S1")))))}
	inTeam1 := func(p *corev1.Pod) { p.Namespace = "subteam1.team1" }
	n := func(name string, mods ...func(*corev1.Node)) *corev1.Node {
		return node(name, "4", "8Gi", 110, mods...)
	}
	china, india, az1 := region("China"), region("India"), az("az1")

	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		pods  []*corev1.Pod
		pod   *corev1.Pod
		args  *interPodAffinityArgs
		want  []int64 // by node, in order
	}{
		{
			name:  "all nodes are same priority as Affinity is nil",
			nodes: []*corev1.Node{n("n1", china), n("n2", india), n("n3", az1)},
			pod:   pod("p", "", "", security("S1")),
			want:  []int64{0, 0, 0},
		},
		{
			name:  "Affinity: pod that matches topology key & pods in nodes will get high score",
			nodes: []*corev1.Node{n("n1", china), n("n2", india), n("n3", az1)},
			pods:  []*corev1.Pod{pod("e1", "", "", onNode("n1"), security("S1")), pod("e2", "", "", onNode("n2"), security("S2")), pod("e3", "", "", onNode("n3"), security("S1"))},
			pod:   pod("p", "", "", security("S1"), with(stayWithS1InRegion)),
			want:  []int64{100, 0, 0},
		},
		{
			name:  "all the nodes that have the same topology key & label value as a node with a matching pod have the same score",
			nodes: []*corev1.Node{n("n1", china), n("n2", china, az1), n("n3", india)},
			pods:  []*corev1.Pod{pod("e1", "", "", onNode("n1"), security("S1"))},
			pod:   pod("p", "", "", with(stayWithS1InRegion)),
			want:  []int64{100, 100, 0},
		},
		{
			name:  "Affinity: the region with more matching pods scores higher",
			nodes: []*corev1.Node{n("n1", china), n("n2", india), n("n3", china), n("n4", china), n("n5", india)},
			pods: []*corev1.Pod{
				pod("e1", "", "", onNode("n1"), security("S2")), pod("e1b", "", "", onNode("n1"), security("S2")), pod("e2", "", "", onNode("n2"), security("S2")),
				pod("e3", "", "", onNode("n3"), security("S2")), pod("e4", "", "", onNode("n4"), security("S2")), pod("e5", "", "", onNode("n5"), security("S2")),
			},
			pod:  pod("p", "", "", security("S1"), with(stayWithS2InRegion)),
			want: []int64{100, 0, 100, 100, 0},
		},
		{
			name:  "Affinity: different label operators and values, including some match failures",
			nodes: []*corev1.Node{n("n1", china), n("n2", india), n("n3", az1)},
			pods:  []*corev1.Pod{pod("e1", "", "", onNode("n1"), security("S1")), pod("e2", "", "", onNode("n2"), security("S2")), pod("e3", "", "", onNode("n3"), security("S1"))},
			pod:   pod("p", "", "", security("S1"), with(affinity3)),
			want:  []int64{20, 100, 0},
		},
		{
			name:  "Affinity symmetry: existing pods' preferred affinity",
			nodes: []*corev1.Node{n("n1", china), n("n2", india), n("n3", az1)},
			pods:  []*corev1.Pod{pod("e1", "", "", onNode("n1"), security("S1"), with(stayWithS1InRegion)), pod("e2", "", "", onNode("n2"), security("S2"), with(stayWithS2InRegion))},
			pod:   pod("p", "", "", security("S2")),
			want:  []int64{0, 100, 0},
		},
		{
			name:  "Affinity symmetry with namespace selector",
			nodes: []*corev1.Node{n("n1", china), n("n2", india), n("n3", az1)},
			pods:  []*corev1.Pod{pod("e1", "", "", onNode("n1"), security("S1"), with(affinityNamespaceSelector)), pod("e2", "", "", onNode("n2"), security("S2"), with(stayWithS2InRegion))},
			pod:   pod("p", "", "", inTeam1, security("S1")),
			want:  []int64{100, 0, 0},
		},
		{
			name:  "AntiAffinity symmetry with namespace selector",
			nodes: []*corev1.Node{n("n1", china), n("n2", india), n("n3", az1)},
			pods:  []*corev1.Pod{pod("e1", "", "", onNode("n1"), security("S1"), with(antiAffinityNamespaceSelector)), pod("e2", "", "", onNode("n2"), security("S2"), with(stayWithS2InRegion))},
			pod:   pod("p", "", "", inTeam1, security("S1")),
			want:  []int64{0, 100, 100},
		},
		{
			name:  "Affinity symmetry: existing pods' required affinity, by hardPodAffinityWeight",
			nodes: []*corev1.Node{n("n1", china), n("n2", india), n("n3", az1)},
			pods:  []*corev1.Pod{pod("e1", "", "", onNode("n1"), security("S1"), with(hardAffinity)), pod("e2", "", "", onNode("n2"), security("S2"), with(hardAffinity))},
			pod:   pod("p", "", "", security("S1")),
			want:  []int64{100, 100, 0},
		},
		{
			name:  "hardPodAffinityWeight 0 ignores existing pods' required affinity",
			nodes: []*corev1.Node{n("n1", china), n("n2", india), n("n3", az1)},
			pods:  []*corev1.Pod{pod("e1", "", "", onNode("n1"), security("S1"), with(hardAffinity))},
			pod:   pod("p", "", "", security("S1")),
			args:  &interPodAffinityArgs{},
			want:  []int64{0, 0, 0},
		},
		{
			name:  "Anti Affinity: pod that does not match existing pods in node will get high score",
			nodes: []*corev1.Node{n("n1", az1), n("n2", china)},
			pods:  []*corev1.Pod{pod("e1", "", "", onNode("n1"), security("S1")), pod("e2", "", "", onNode("n2"), security("S2"))},
			pod:   pod("p", "", "", security("S1"), with(awayFromS1InAz)),
			want:  []int64{0, 100},
		},
		{
			name:  "Anti Affinity: the node with more matching pods scores lower",
			nodes: []*corev1.Node{n("n1", az1), n("n2", india)},
			pods:  []*corev1.Pod{pod("e1", "", "", onNode("n1"), security("S1")), pod("e1b", "", "", onNode("n1"), security("S1")), pod("e2", "", "", onNode("n2"), security("S2"))},
			pod:   pod("p", "", "", security("S1"), with(awayFromS1InAz)),
			want:  []int64{0, 100},
		},
		{
			name:  "Anti Affinity symmetry: existing pods' preferred anti-affinity",
			nodes: []*corev1.Node{n("n1", az1), n("n2", az("az2"))},
			pods:  []*corev1.Pod{pod("e1", "", "", onNode("n1"), security("S1"), with(awayFromS2InAz)), pod("e2", "", "", onNode("n2"), security("S2"), with(awayFromS1InAz))},
			pod:   pod("p", "", "", security("S2")),
			want:  []int64{0, 100},
		},
		{
			name:  "Affinity and Anti Affinity, the pod to schedule and existing pods having the same labels",
			nodes: []*corev1.Node{n("n1", china, az1), n("n2", india), n("n3", china), n("n4", china), n("n5", india)},
			pods: []*corev1.Pod{
				pod("e1", "", "", onNode("n1"), security("S1")), pod("e1b", "", "", onNode("n1"), security("S1")), pod("e2", "", "", onNode("n2"), security("S1")),
				pod("e3", "", "", onNode("n3"), security("S1")), pod("e3b", "", "", onNode("n3"), security("S1")), pod("e4", "", "", onNode("n4"), security("S1")), pod("e5", "", "", onNode("n5"), security("S1")),
			},
			pod:  pod("p", "", "", security("S1"), with(stayWithS1InRegionAwayFromS2InAz)),
			want: []int64{100, 0, 100, 100, 0},
		},
		{
			name:  "Affinity, Anti Affinity and symmetry together",
			nodes: []*corev1.Node{n("n1", china), n("n2", az1), n("n3", india), n("n4", az("az2"))},
			pods: []*corev1.Pod{
				pod("e1", "", "", onNode("n1"), security("S1")), pod("e2", "", "", onNode("n2"), security("S2")),
				pod("e3", "", "", onNode("n3"), with(stayWithS1InRegionAwayFromS2InAz)), pod("e4", "", "", onNode("n4"), with(awayFromS1InAz)),
			},
			pod:  pod("p", "", "", security("S1"), with(stayWithS1InRegionAwayFromS2InAz)),
			want: []int64{100, 0, 100, 0},
		},
		{
			name:  "nodes in a topology where only some have pods with affinity (kubernetes/kubernetes#82796)",
			nodes: []*corev1.Node{n("n1", china), n("n2", china)},
			pods:  []*corev1.Pod{pod("e1", "", "", onNode("n1"), security("S1")), pod("e2", "", "", onNode("n2"), with(stayWithS1InRegionAwayFromS2InAz))},
			pod:   pod("p", "", "", security("S1")),
			want:  []int64{0, 0},
		},
		{
			name:  "ignorePreferredTermsOfExistingPods: a pod without terms is not scored",
			nodes: []*corev1.Node{n("n1", china), n("n2", india), n("n3", az1)},
			pods:  []*corev1.Pod{pod("e1", "", "", onNode("n1"), security("S1"), with(stayWithS1InRegion)), pod("e2", "", "", onNode("n2"), security("S2"), with(stayWithS2InRegion))},
			pod:   pod("p", "", "", security("S2")),
			args:  &interPodAffinityArgs{hardPodAffinityWeight: 1, ignorePreferredTermsOfExistingPods: true},
			want:  []int64{0, 0, 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestScheduler(tc.nodes, tc.pods...)
			namespaces := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
			for name, team := range map[string]string{"subteam1.team1": "team1", "subteam2.team1": "team1", "subteam1.team2": "team2", "subteam2.team2": "team2"} {
				if err := namespaces.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": team}}}); err != nil {
					t.Fatal(err)
				}
			}
			s.namespaces = corelisters.NewNamespaceLister(namespaces)
			if tc.args != nil {
				i := slices.IndexFunc(s.profile.scorers, func(sc scorer) bool { return sc.name == "InterPodAffinity" })
				s.profile.scorers[i] = interPodAffinityScorer(*tc.args)
			}
			var names []string
			want := map[string]int64{}
			for i, node := range tc.nodes {
				names = append(names, node.Name)
				want[node.Name] = tc.want[i]
			}
			if got := runScorer(t, s, "InterPodAffinity", tc.pod, names); !maps.Equal(got, want) {
				t.Errorf("scores %v, want %v", got, want)
			}
		})
	}
}
