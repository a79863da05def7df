package node

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// The Node an agent registers: its labels, its pod range and taints, and
// a kubelet's status: allocatable all of its capacity, its address and
// hostname, and the four conditions a healthy kubelet posts. Posted
// again, the conditions keep their transition times, and a node
// lifecycle controller's Unknown is a status that differs.
func TestNodeStatus(t *testing.T) {
	_, cidr, err := net.ParseCIDR("10.244.1.0/24")
	if err != nil {
		t.Fatal(err)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	taint := corev1.Taint{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}
	clock := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	a := &agent{clock: clock, c: &Config{
		Name: "n1", Capacity: capacity, Labels: map[string]string{"pool": "infra"}, Taints: []corev1.Taint{taint},
		Address: net.ParseIP("192.0.2.10"), PodCIDR: cidr, KubeletVersion: "v1.37.0",
	}}
	n := a.node()

	wantLabels := map[string]string{corev1.LabelHostname: "n1", corev1.LabelOSStable: runtime.GOOS, corev1.LabelArchStable: runtime.GOARCH, "pool": "infra"}
	if diff := cmp.Diff(wantLabels, n.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	wantSpec := corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24"}, Taints: []corev1.Taint{taint}}
	if diff := cmp.Diff(wantSpec, n.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	s := n.Status
	if !apiequality.Semantic.DeepEqual(s.Capacity, capacity) || !apiequality.Semantic.DeepEqual(s.Allocatable, capacity) {
		t.Errorf("capacity %v, allocatable %v; want both %v", s.Capacity, s.Allocatable, capacity)
	}
	wantAddresses := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}, {Type: corev1.NodeHostName, Address: "n1"}}
	if diff := cmp.Diff(wantAddresses, s.Addresses); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	if s.Phase != corev1.NodeRunning || s.NodeInfo.KubeletVersion != "v1.37.0" || s.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("phase %s, kubelet %q on port %d", s.Phase, s.NodeInfo.KubeletVersion, s.DaemonEndpoints.KubeletEndpoint.Port)
	}
	registered := metav1.NewTime(clock.Now())
	cond := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, message string, heartbeat, transition metav1.Time) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: status, Reason: reason, Message: message, LastHeartbeatTime: heartbeat, LastTransitionTime: transition}
	}
	healthy := func(heartbeat, transition, readySince metav1.Time) []corev1.NodeCondition {
		return []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available", heartbeat, transition),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure", heartbeat, transition),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available", heartbeat, transition),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status", heartbeat, readySince),
		}
	}
	if diff := cmp.Diff(healthy(registered, registered, registered), s.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	// What it reports is its own: the Node's resources are copies.
	s.Capacity[corev1.ResourcePods] = resource.MustParse("1")
	s.Allocatable[corev1.ResourcePods] = resource.MustParse("1")
	if got := a.c.Capacity[corev1.ResourcePods]; got.Value() != 110 {
		t.Errorf("a change to the Node's resources reached the configuration: pods %s", &got)
	}

	// A minute on, the node marked Unknown meanwhile: heartbeats are new,
	// the pressure conditions keep their transition, Ready makes a new
	// one; the status differs from the Node's, and once posted does not.
	clock.Step(time.Minute)
	now := metav1.NewTime(clock.Now())
	old := a.status(nil)
	old.Conditions = healthy(registered, registered, registered)
	old.Conditions[3].Status, old.Conditions[3].Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
	if !statusDiffers(&old, a.status(&old)) {
		t.Error("a Node marked Unknown does not differ from the node's status")
	}
	next := a.status(&old)
	if diff := cmp.Diff(healthy(now, registered, now), next.Conditions); diff != "" {
		t.Errorf("conditions a minute on (-want +got):\n%s", diff)
	}
	clock.Step(time.Minute)
	if statusDiffers(&next, a.status(&next)) {
		t.Error("the status posted differs a minute later, heartbeats aside")
	}
}
