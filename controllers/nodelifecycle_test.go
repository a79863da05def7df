package controllers

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	"k8s.io/client-go/tools/cache"
)

func readyConds(statuses ...corev1.ConditionStatus) []*corev1.NodeCondition {
	var out []*corev1.NodeCondition
	for _, s := range statuses {
		if s == "" {
			out = append(out, nil)
			continue
		}
		out = append(out, &corev1.NodeCondition{Type: corev1.NodeReady, Status: s})
	}
	return out
}

func TestZoneStateOf(t *testing.T) {
	const T, F, U = corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown
	for _, tc := range []struct {
		name     string
		ready    []*corev1.NodeCondition
		wantDown int
		want     zoneState
	}{
		{"all ready", readyConds(T, T, T), 0, zoneNormal},
		{"one of two down", readyConds(T, U), 1, zoneNormal},
		{"none ready", readyConds(U, F, ""), 3, zoneFullDisruption},
		{"two of three down: not more than two", readyConds(T, U, U), 2, zoneNormal},
		{"three of five down: over 0.55", readyConds(T, T, U, F, ""), 3, zonePartialDisruption},
		{"three of six down: under 0.55", readyConds(T, T, T, U, U, U), 3, zoneNormal},
	} {
		down, got := zoneStateOf(tc.ready, 0.55)
		if down != tc.wantDown || got != tc.want {
			t.Errorf("%s: %d down, %s; want %d, %s", tc.name, down, got, tc.wantDown, tc.want)
		}
	}
}

func TestSetConditionsUnknown(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	heartbeat := metav1.NewTime(created.Add(time.Minute))
	now := metav1.NewTime(created.Add(time.Hour))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: heartbeat, LastTransitionTime: heartbeat},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: heartbeat, LastTransitionTime: heartbeat},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionUnknown, Reason: "Before", LastHeartbeatTime: heartbeat, LastTransitionTime: heartbeat},
		{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, LastHeartbeatTime: heartbeat, LastTransitionTime: heartbeat},
	}}}
	setConditionsUnknown(node, now)
	stopped := func(t corev1.NodeConditionType) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.", LastHeartbeatTime: heartbeat, LastTransitionTime: now}
	}
	want := []corev1.NodeCondition{
		stopped(corev1.NodeReady),
		stopped(corev1.NodeMemoryPressure),
		// Unknown already: untouched.
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionUnknown, Reason: "Before", LastHeartbeatTime: heartbeat, LastTransitionTime: heartbeat},
		// The control plane's: untouched.
		{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, LastHeartbeatTime: heartbeat, LastTransitionTime: heartbeat},
		// Never posted.
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionUnknown, Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.", LastHeartbeatTime: created, LastTransitionTime: now},
	}
	if diff := cmp.Diff(want, node.Status.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
}

func TestSwappedTaints(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stamp := metav1.NewTime(now)
	own := corev1.Taint{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}
	unreachableNoSchedule := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}
	stamped := unreachableTaint
	stamped.TimeAdded = &stamp
	for _, tc := range []struct {
		name        string
		have        []corev1.Taint
		add, remove []corev1.Taint
		want        []corev1.Taint
		wantChange  bool
	}{
		{name: "add NoExecute, stamped", have: []corev1.Taint{own}, add: []corev1.Taint{unreachableTaint}, remove: []corev1.Taint{notReadyTaint},
			want: []corev1.Taint{own, stamped}, wantChange: true},
		{name: "present: no change", have: []corev1.Taint{own, stamped}, add: []corev1.Taint{unreachableTaint}, want: []corev1.Taint{own, stamped}},
		{name: "swap", have: []corev1.Taint{notReadyTaint, own}, add: []corev1.Taint{unreachableTaint}, remove: []corev1.Taint{notReadyTaint},
			want: []corev1.Taint{own, stamped}, wantChange: true},
		{name: "remove by key and effect only", have: []corev1.Taint{unreachableNoSchedule, stamped}, remove: []corev1.Taint{unreachableTaint, notReadyTaint},
			want: []corev1.Taint{unreachableNoSchedule}, wantChange: true},
		{name: "NoSchedule not stamped", add: []corev1.Taint{unreachableNoSchedule}, want: []corev1.Taint{unreachableNoSchedule}, wantChange: true},
	} {
		before := slices.Clone(tc.have)
		got, changed := swappedTaints(tc.have, tc.add, tc.remove, now)
		if diff := cmp.Diff(tc.want, got); diff != "" || changed != tc.wantChange {
			t.Errorf("%s: changed %v (want %v), taints (-want +got):\n%s", tc.name, changed, tc.wantChange, diff)
		}
		if !slices.EqualFunc(before, tc.have, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) }) {
			t.Errorf("%s: the node's own taints were changed in place", tc.name)
		}
	}
}

func TestConditionTaints(t *testing.T) {
	for _, tc := range []struct {
		t      corev1.NodeConditionType
		s      corev1.ConditionStatus
		want   string
		wantOK bool
	}{
		{corev1.NodeReady, corev1.ConditionTrue, "", false},
		{corev1.NodeReady, corev1.ConditionFalse, corev1.TaintNodeNotReady, true},
		{corev1.NodeReady, corev1.ConditionUnknown, corev1.TaintNodeUnreachable, true},
		{corev1.NodeMemoryPressure, corev1.ConditionTrue, corev1.TaintNodeMemoryPressure, true},
		{corev1.NodeMemoryPressure, corev1.ConditionUnknown, "", false},
		{corev1.NodeDiskPressure, corev1.ConditionTrue, corev1.TaintNodeDiskPressure, true},
		{corev1.NodePIDPressure, corev1.ConditionTrue, corev1.TaintNodePIDPressure, true},
		{corev1.NodeNetworkUnavailable, corev1.ConditionTrue, corev1.TaintNodeNetworkUnavailable, true},
	} {
		got, ok := conditionTaintKey(tc.t, tc.s)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s=%s: %q %v, want %q %v", tc.t, tc.s, got, ok, tc.want, tc.wantOK)
		}
		if ok && !isNoScheduleConditionKey(got) {
			t.Errorf("%s is not a key the controller owns", got)
		}
	}
	if isNoScheduleConditionKey("team") {
		t.Error("a taint of the user's own is the controller's to remove")
	}
}

func TestNodeLifecycleConfig(t *testing.T) {
	got := NodeLifecycleConfig{NodeMonitorGracePeriod: 3 * time.Second}.withDefaults()
	want := NodeLifecycleConfig{NodeMonitorPeriod: 5 * time.Second, NodeMonitorGracePeriod: 3 * time.Second, NodeStartupGracePeriod: time.Minute,
		NodeEvictionRate: 0.1, SecondaryNodeEvictionRate: 0.01, LargeClusterSizeThreshold: 50, UnhealthyZoneThreshold: 0.55}
	if got != want {
		t.Errorf("withDefaults: %+v, want %+v", got, want)
	}
	if err := want.validate(); err != nil {
		t.Errorf("kube's defaults: %v", err)
	}
	err := NodeLifecycleConfig{NodeMonitorPeriod: -time.Second, NodeEvictionRate: -1, UnhealthyZoneThreshold: 2}.validate()
	for _, flag := range []string{"--node-monitor-period -1s", "--node-eviction-rate -1", "--unhealthy-zone-threshold 2"} {
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("validate: %v, want it to name %s", err, flag)
		}
	}
}

// queued are the nodes in q, in order.
func queued(q *taintQueue) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for _, p := range q.pending {
		out = append(out, p.name)
	}
	return out
}

func TestTaintQueue(t *testing.T) {
	now := time.Now()
	q := newTaintQueue(1000)
	for _, n := range []string{"a", "b", "a", "c"} {
		q.add(n, now)
	}
	if got := queued(q); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("queued %q, want each once, in order", got)
	}
	if !q.remove("b") || q.remove("b") {
		t.Error("remove: b was not removed once")
	}
	q.add("later", now.Add(time.Hour))
	// A zero rate takes nothing, whatever is due.
	q.setRate(0)
	if n, ok := q.next(now); ok {
		t.Errorf("at rate 0, next gave %s", n)
	}
	q.setRate(1000)
	var got []string
	for {
		// A token bucket of 1000/s, burst 1: a token comes every
		// millisecond; the loop ends at the first node not due.
		n, ok := q.next(now)
		if ok {
			got = append(got, n)
			continue
		}
		if names := queued(q); len(names) == 1 && names[0] == "later" {
			break
		}
	}
	if !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("taken %q, want a, c; later is not due", got)
	}

	// At 0.1/s, burst 1, the first node goes at once and the next not
	// within the same instant: a partition taints one node, then waits.
	slow := newTaintQueue(0.1)
	slow.add("x", now)
	slow.add("y", now)
	if n, ok := slow.next(now); !ok || n != "x" {
		t.Errorf("first of a slow queue: %q %v, want x", n, ok)
	}
	if n, ok := slow.next(now); ok {
		t.Errorf("second of a slow queue at once: %s, want none", n)
	}
}

func TestTolerationTime(t *testing.T) {
	secs := func(s int64) *int64 { return &s }
	unreachable := []corev1.Taint{unreachableTaint}
	both := []corev1.Taint{unreachableTaint, notReadyTaint}
	forUnreachable := func(s *int64) corev1.Toleration {
		return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: s}
	}
	everything := corev1.Toleration{Operator: corev1.TolerationOpExists}
	for _, tc := range []struct {
		name         string
		taints       []corev1.Taint
		tolerations  []corev1.Toleration
		wantTolerate bool
		wantWait     time.Duration
	}{
		{name: "none tolerated", taints: unreachable, wantTolerate: false},
		{name: "another key", taints: unreachable, tolerations: []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpExists}}},
		{name: "for a time", taints: unreachable, tolerations: []corev1.Toleration{forUnreachable(secs(2))}, wantTolerate: true, wantWait: 2 * time.Second},
		{name: "forever", taints: unreachable, tolerations: []corev1.Toleration{forUnreachable(nil)}, wantTolerate: true, wantWait: -1},
		{name: "zero seconds is at once", taints: unreachable, tolerations: []corev1.Toleration{forUnreachable(secs(0))}, wantTolerate: true, wantWait: 0},
		{name: "one of two taints untolerated", taints: both, tolerations: []corev1.Toleration{forUnreachable(nil)}},
		{name: "the shortest of the used", taints: both, tolerations: []corev1.Toleration{forUnreachable(secs(30)), everything}, wantTolerate: true, wantWait: 30 * time.Second},
	} {
		ok, used := matchingTolerations(tc.taints, tc.tolerations)
		if ok != tc.wantTolerate {
			t.Errorf("%s: tolerated %v, want %v", tc.name, ok, tc.wantTolerate)
			continue
		}
		if ok {
			if got := minTolerationTime(used); got != tc.wantWait {
				t.Errorf("%s: wait %s, want %s", tc.name, got, tc.wantWait)
			}
		}
	}
}

// A node's grace starts over at each heartbeat the controller sees, by
// its own clock: a Ready condition posted again or a Lease renewed; a
// node that never posted one has the startup grace from its creation.
// (Past the grace, the status write is the end-to-end tests'.)
func TestUpdateHealth(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	leases := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	nc := &nodeLifecycleController{
		leases: coordlisters.NewLeaseLister(leases),
		cfg:    NodeLifecycleConfig{}.withDefaults(),
		now:    func() time.Time { return now },
		health: map[string]*nodeHealth{},
	}
	heartbeat := metav1.NewTime(start.Add(-time.Minute))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(start.Add(-time.Hour))}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: heartbeat},
	}}}
	renew := func(at time.Time) {
		rt := metav1.NewMicroTime(at)
		if err := leases.Add(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: "n"}, Spec: coordinationv1.LeaseSpec{RenewTime: &rt}}); err != nil {
			t.Fatal(err)
		}
	}
	step := func(what string, after time.Duration, wantProbe time.Time) {
		t.Helper()
		now = start.Add(after)
		observed, current, err := nc.updateHealth(t.Context(), node.DeepCopy())
		if err != nil || current == nil || current.Status != corev1.ConditionTrue || observed.Status != corev1.ConditionTrue {
			t.Fatalf("%s: %v, %v, %v; want Ready both", what, observed, current, err)
		}
		if got := nc.health["n"].probe; !got.Equal(wantProbe) {
			t.Errorf("%s: last heartbeat seen at %s, want %s", what, got.Sub(start), wantProbe.Sub(start))
		}
	}
	step("first seen", 0, start)
	step("nothing new", 30*time.Second, start)
	renew(start.Add(time.Second))
	step("Lease renewed", 35*time.Second, start.Add(35*time.Second))
	step("the same renewal again", 60*time.Second, start.Add(35*time.Second))
	node.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(start)
	step("status posted", 70*time.Second, start.Add(70*time.Second))

	// Never posted: Ready is nil while the startup grace (1m) from its
	// creation runs.
	fresh := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fresh", CreationTimestamp: metav1.NewTime(now.Add(-50 * time.Second))}}
	observed, current, err := nc.updateHealth(t.Context(), fresh)
	if err != nil || current != nil || observed.Status != corev1.ConditionUnknown {
		t.Errorf("a node that never posted, within its startup grace: %v, %v, %v; want Unknown observed, none current", observed, current, err)
	}
}
