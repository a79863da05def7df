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
	// Unset, a node is given 40 s without a heartbeat, kube's
	// --node-monitor-grace-period.
	if got := (NodeLifecycleConfig{}).withDefaults().NodeMonitorGracePeriod; got != 40*time.Second {
		t.Errorf("default grace period %s, want 40s", got)
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
