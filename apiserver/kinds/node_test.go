package kinds

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

func validNode() *corev1.Node {
	n := &corev1.Node{}
	n.Name = "node-1"
	n.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}
	DefaultNode(n)
	return n
}

func TestDefaultNode(t *testing.T) {
	n := &corev1.Node{}
	n.Spec.PodCIDR = "10.244.1.0/24"
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0001"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	DefaultNode(n)
	if got := n.Status.Allocatable.Cpu().String(); got != "1m" {
		t.Errorf("allocatable cpu = %s, want 1m (copied from capacity, rounded)", got)
	}
	if got := n.Status.Capacity.Cpu().String(); got != "1m" {
		t.Errorf("capacity cpu = %s, want 1m", got)
	}
	if diff := cmp.Diff([]string{"10.244.1.0/24"}, n.Spec.PodCIDRs); diff != "" {
		t.Errorf("podCIDRs (-want +got):\n%s", diff)
	}
	n.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("7Gi")
	if n.Status.Capacity.Memory().String() != "8Gi" {
		t.Error("allocatable shares its map with capacity")
	}
	once := n.DeepCopy()
	DefaultNode(n)
	if !equality.Semantic.DeepEqual(once, n) {
		t.Errorf("second DefaultNode changed the node:\n%s", cmp.Diff(once, n))
	}
	DefaultNode(nil)
}

func TestValidateNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(n *corev1.Node)
		want   []string
	}{
		{"valid", func(n *corev1.Node) {}, nil},
		{"dual-stack pod CIDRs", func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.1.0/24", "fd00:1::/64"} }, nil},
		{"taint effect unknown", func(n *corev1.Node) { n.Spec.Taints[0].Effect = "NoRun" },
			[]string{e("metadata.taints[0].effect", notSupported)}},
		{"taint effect missing", func(n *corev1.Node) { n.Spec.Taints[0].Effect = "" },
			[]string{e("metadata.taints[0].effect", required)}},
		{"taint key not a qualified name", func(n *corev1.Node) { n.Spec.Taints[0].Key = "bad key" },
			[]string{e("metadata.taints[0].key", invalid)}},
		{"taint value invalid", func(n *corev1.Node) { n.Spec.Taints[0].Value = "a b" },
			[]string{e("metadata.taints[0].value", invalid)}},
		{"taint repeated", func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, n.Spec.Taints[0]) },
			[]string{e("metadata.taints[1]", duplicate)}},
		{"pod CIDR invalid", func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.1.0/33"} },
			[]string{e("spec.podCIDRs[0]", invalid)}},
		{"two IPv4 pod CIDRs", func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.1.0/24", "10.244.2.0/24"} },
			[]string{e("spec.podCIDRs", invalid)}},
		{"negative capacity", func(n *corev1.Node) { n.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("-1") },
			[]string{e("status.capacity.cpu", invalid)}},
		{"fractional pods", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("1500m") },
			[]string{e("status.allocatable.pods", invalid)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := validNode()
			tc.mutate(n)
			checkErrs(t, ValidateNode(n, nil), tc.want...)
		})
	}
}

func TestValidateNodeUpdate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		old    func(n *corev1.Node)
		mutate func(n *corev1.Node)
		want   []string
	}{
		{"unschedulable and taints change", nil, func(n *corev1.Node) {
			n.Spec.Unschedulable = true
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule})
		}, nil},
		{"pod CIDR assigned", nil, func(n *corev1.Node) {
			n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.1.0/24", []string{"10.244.1.0/24"}
		}, nil},
		{"pod CIDR changed", func(n *corev1.Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.1.0/24", []string{"10.244.1.0/24"} },
			func(n *corev1.Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.2.0/24", []string{"10.244.2.0/24"} },
			[]string{e("spec.podCIDRs", forbidden)}},
		{"pod CIDR removed", func(n *corev1.Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.1.0/24", []string{"10.244.1.0/24"} },
			func(n *corev1.Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = "", nil },
			[]string{e("spec.podCIDRs", forbidden)}},
		{"providerID set", nil, func(n *corev1.Node) { n.Spec.ProviderID = "kind://node-1" }, nil},
		{"providerID changed", func(n *corev1.Node) { n.Spec.ProviderID = "kind://node-1" },
			func(n *corev1.Node) { n.Spec.ProviderID = "kind://node-2" },
			[]string{e("spec.providerID", forbidden)}},
		{"externalID changed", nil, func(n *corev1.Node) { n.Spec.DoNotUseExternalID = "x" },
			[]string{e("spec.externalID", forbidden)}},
		{"address repeated", nil, func(n *corev1.Node) {
			a := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.168.0.10"}
			n.Status.Addresses = []corev1.NodeAddress{a, a}
		}, []string{e("status.addresses[1]", duplicate)}},
		{"configSource without a reference", nil, func(n *corev1.Node) { n.Spec.ConfigSource = &corev1.NodeConfigSource{} },
			[]string{e("spec.configSource", invalid)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := validNode()
			if tc.old != nil {
				tc.old(old)
			}
			n := old.DeepCopy()
			tc.mutate(n)
			checkErrs(t, ValidateNode(n, old), tc.want...)
		})
	}
}

func TestNodeFields(t *testing.T) {
	n := validNode()
	n.Spec.Unschedulable = true
	want := map[string]string{"metadata.name": "node-1", "spec.unschedulable": "true"}
	if diff := cmp.Diff(want, map[string]string(NodeFields(n))); diff != "" {
		t.Errorf("NodeFields (-want +got):\n%s", diff)
	}
}
