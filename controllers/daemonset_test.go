package controllers

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestDaemonPodFits(t *testing.T) {
	node := func(labels map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	set := func(spec corev1.PodSpec) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}
	}
	affinity := func(key, value string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}}}},
		}}}
	}
	taint := func(k string, e corev1.TaintEffect) corev1.Taint { return corev1.Taint{Key: k, Effect: e} }
	for _, tc := range []struct {
		name                  string
		node                  *corev1.Node
		ds                    *appsv1.DaemonSet
		wantRun, wantContinue bool
	}{
		{"plain", node(nil), set(corev1.PodSpec{}), true, true},
		{"selector matches", node(map[string]string{"disk": "ssd"}), set(corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}), true, true},
		{"selector does not", node(map[string]string{"disk": "hdd"}), set(corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}), false, false},
		{"affinity matches", node(map[string]string{"zone": "a"}), set(corev1.PodSpec{Affinity: affinity("zone", "a")}), true, true},
		{"affinity does not", node(map[string]string{"zone": "b"}), set(corev1.PodSpec{Affinity: affinity("zone", "a")}), false, false},
		{"other nodeName", node(nil), set(corev1.PodSpec{NodeName: "n2"}), false, false},
		{"NoSchedule taint", node(nil, taint("dedicated", corev1.TaintEffectNoSchedule)), set(corev1.PodSpec{}), false, true},
		{"NoExecute taint", node(nil, taint("dedicated", corev1.TaintEffectNoExecute)), set(corev1.PodSpec{}), false, false},
		{"PreferNoSchedule taint", node(nil, taint("dedicated", corev1.TaintEffectPreferNoSchedule)), set(corev1.PodSpec{}), true, true},
		{"tolerated taint", node(nil, taint("dedicated", corev1.TaintEffectNoExecute)),
			set(corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}}), true, true},
		{"not ready", node(nil, taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)), set(corev1.PodSpec{}), true, true},
		{"unreachable", node(nil, taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)), set(corev1.PodSpec{}), true, true},
		{"cordoned", node(nil, taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)), set(corev1.PodSpec{}), true, true},
		{"memory pressure", node(nil, taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)), set(corev1.PodSpec{}), true, true},
		{"network unavailable", node(nil, taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), set(corev1.PodSpec{}), false, true},
		{"network unavailable, host network", node(nil, taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), set(corev1.PodSpec{HostNetwork: true}), true, true},
	} {
		run, cont := daemonPodFits(tc.node, tc.ds)
		if run != tc.wantRun || cont != tc.wantContinue {
			t.Errorf("%s: shouldRun, shouldContinue = %v, %v; want %v, %v", tc.name, run, cont, tc.wantRun, tc.wantContinue)
		}
	}
}

// A daemon pod is pinned to its node in every term of its required
// affinity, which keeps its own expressions, and is found there again.
func TestPinToNode(t *testing.T) {
	spec := corev1.PodSpec{}
	pinToNode(&spec, "n1")
	if got := targetNode(&corev1.Pod{Spec: spec}); got != "n1" {
		t.Errorf("targetNode of a pod pinned to n1 = %q", got)
	}
	expr := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	spec = corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{expr}}, {MatchExpressions: []corev1.NodeSelectorRequirement{expr}}},
	}}}}
	pinToNode(&spec, "n2")
	for i, term := range spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchExpressions) != 1 || len(term.MatchFields) != 1 || term.MatchFields[0].Values[0] != "n2" {
			t.Errorf("term %d: %+v, want its expression and metadata.name in [n2]", i, term)
		}
	}
	if got := targetNode(&corev1.Pod{Spec: corev1.PodSpec{NodeName: "n3", Affinity: spec.Affinity}}); got != "n3" {
		t.Errorf("targetNode of a pod bound to n3 = %q", got)
	}
}

// A rolling update deletes old pods only while at most maxUnavailable
// nodes are without an available pod, counting nodes with no pod, a
// terminating one, an unavailable new one, or an unavailable old one.
func TestDaemonSetRollingUpdate(t *testing.T) {
	now := time.Now()
	pod := func(name, hash string, ready, terminating bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: hash}}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}}
		}
		if terminating {
			p.DeletionTimestamp = &metav1.Time{Time: now}
		}
		return p
	}
	nodes := func(names ...string) []*corev1.Node {
		var out []*corev1.Node
		for _, n := range names {
			out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		return out
	}
	two := intstr.FromInt32(2)
	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
		Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &two},
	}}}
	for _, tc := range []struct {
		name   string
		byNode map[string][]*corev1.Pod
		want   []string
	}{
		{"all old and available", map[string][]*corev1.Pod{
			"a": {pod("a1", "old", true, false)}, "b": {pod("b1", "old", true, false)}, "c": {pod("c1", "old", true, false)}, "d": {pod("d1", "old", true, false)},
		}, []string{"a1", "b1"}},
		{"one terminating, one new not ready", map[string][]*corev1.Pod{
			"a": {pod("a1", "old", true, true)}, "b": {pod("b2", "new", false, false)}, "c": {pod("c1", "old", true, false)}, "d": {pod("d1", "old", true, false)},
		}, nil},
		{"a node without a pod", map[string][]*corev1.Pod{
			"b": {pod("b2", "new", true, false)}, "c": {pod("c1", "old", true, false)}, "d": {pod("d1", "old", true, false)},
		}, []string{"c1"}},
		{"an old pod not ready goes first, and counts", map[string][]*corev1.Pod{
			"a": {pod("a1", "old", true, false)}, "b": {pod("b1", "old", false, false)}, "c": {pod("c1", "old", true, false)}, "d": {pod("d1", "old", true, false)},
		}, []string{"b1", "a1"}},
	} {
		d := &daemonSetSync{ds: ds, hash: "new", nodes: nodes("a", "b", "c", "d"), byNode: tc.byNode, now: now}
		var got []string
		create, remove := d.rollingUpdate()
		if len(create) > 0 {
			t.Errorf("%s: creates on %v, want nothing without surge", tc.name, create)
		}
		for _, p := range remove {
			got = append(got, p.Name)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: deletes %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: deletes %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}

// With maxSurge, a node's new pod comes beside its old one, on at most
// maxSurge nodes at once, and the old goes once the new is available.
func TestDaemonSetSurge(t *testing.T) {
	now := time.Now()
	pod := func(name, hash string, ready bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: hash}}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}}
		}
		return p
	}
	two, zero := intstr.FromInt32(2), intstr.FromInt32(0)
	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
		Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxSurge: &two, MaxUnavailable: &zero},
	}}}
	var nodes []*corev1.Node
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	d := &daemonSetSync{ds: ds, hash: "new", nodes: nodes, now: now, byNode: map[string][]*corev1.Pod{
		"a": {pod("a1", "old", true)},
		"b": {pod("b1", "old", true), pod("b2", "new", false)},
		"c": {pod("c1", "old", true), pod("c2", "new", true)},
		"d": {pod("d1", "old", true)},
		"e": {pod("e1", "old", false)},
	}}
	create, remove := d.rollingUpdate()
	var removed []string
	for _, p := range remove {
		removed = append(removed, p.Name)
	}
	// e at once (its old pod is not available), a as the one surge left
	// (b is surging), and c's old pod goes.
	if fmt.Sprint(create) != "[e a]" || fmt.Sprint(removed) != "[c1]" {
		t.Errorf("creates on %v, deletes %v; want [e a], [c1]", create, removed)
	}
	if extra := d.extraPods(d.byNode["c"]); len(extra) != 1 || extra[0].Name != "c1" {
		t.Errorf("extra pods of c: %v, want c1", extra)
	}
	if extra := d.extraPods(d.byNode["b"]); len(extra) != 0 {
		t.Errorf("extra pods of b: %v, want none while the new one is not available", extra)
	}
}
