package scheduler

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// The reasons a node does not fit, in kube-scheduler's words: they make
// up the FailedScheduling message ("0/3 nodes are available: 1 node(s)
// were unschedulable, 2 Insufficient cpu.").
const (
	reasonNodeName      = "node(s) didn't match the requested node name"
	reasonUnschedulable = "node(s) were unschedulable"
	reasonNodeAffinity  = "node(s) didn't match Pod's node affinity/selector"
	// A profile's added affinity (NodeAffinityArgs) refuses before the
	// pod's own.
	reasonEnforcedAffinity = "node(s) didn't match scheduler-enforced node affinity"
	reasonNodePorts        = "node(s) didn't have free ports for the requested pod ports"
	reasonTooManyPods      = "Too many pods"
	reasonInsufficientFmt  = "Insufficient %s"
	// Since kube 1.35 the taint is not named: its value may be private.
	reasonUntoleratedTaint = "node(s) had untolerated taint(s)"
	// The nodes that a pod's required node affinity to node names leaves
	// out are not filtered, as kube's NodeAffinity PreFilter has it.
	reasonNotNamed          = "node(s) didn't satisfy plugin(s) [NodeAffinity]"
	reasonNodeNamesConflict = "pod affinity terms conflict"
)

// A filter says why a node cannot take the pod of a cycle: nil when it
// can. prepare, if set, runs once per cycle before the filter, over every
// node, for what the filter compares against the whole cluster.
// unresolvable says whether a refusal is one that evicting pods from the
// node would not lift (kube's UnschedulableAndUnresolvable), which
// preemption does not try; nil when that is never so.
type filter struct {
	name         string
	prepare      func(c *podCycle)
	filter       func(c *podCycle, n *nodeInfo) []string
	unresolvable func(c *podCycle, n *nodeInfo, why []string) bool
}

// always is unresolvable for every refusal: the node itself refuses.
func always(*podCycle, *nodeInfo, []string) bool { return true }

// filters are kube's default profile's, in its order; a node's reasons
// are those of the first filter it fails, as kube reports them.
func filters(args pluginArgs) []filter {
	nodeAffinity := podNodeAffinity
	if added := args.addedAffinity.required; added != nil {
		nodeAffinity = func(c *podCycle, n *nodeInfo) []string {
			if !added.Match(n.node) {
				return []string{reasonEnforcedAffinity}
			}
			return podNodeAffinity(c, n)
		}
	}
	return []filter{
		{name: "NodeUnschedulable", filter: nodeUnschedulable, unresolvable: always},
		{name: "NodeName", filter: nodeName, unresolvable: always},
		{name: "TaintToleration", filter: taintToleration, unresolvable: always},
		{name: "NodeAffinity", filter: nodeAffinity, unresolvable: always},
		{name: "NodePorts", filter: nodePorts},
		{name: "NodeResourcesFit", filter: nodeResourcesFit, unresolvable: requestsBeyondAllocatable},
		{name: "PodTopologySpread", prepare: prepareTopologySpread, filter: topologySpread, unresolvable: func(_ *podCycle, _ *nodeInfo, why []string) bool {
			return why[0] == reasonSpreadMissingLabel
		}},
		{name: "InterPodAffinity", prepare: prepareInterPodAffinity, filter: interPodAffinity, unresolvable: func(_ *podCycle, _ *nodeInfo, why []string) bool {
			// No pod it needs in the domain: evicting pods adds none.
			return why[0] == reasonAffinity
		}},
	}
}

// podCycle is the pod being scheduled, with what the filters and scores
// read of it computed once, and the nodes of the snapshot it is scheduled
// against.
type podCycle struct {
	*podInfo
	nodes            []*nodeInfo
	requiredAffinity nodeaffinity.RequiredNodeAffinity
	// preferredAffinity is nil when the pod prefers nothing.
	preferredAffinity *nodeaffinity.PreferredSchedulingTerms
	// imageNodes is how many nodes hold each of the pod's images.
	imageNodes map[string]int
	// nsLabels are the labels of a namespace, for namespace selectors.
	nsLabels func(namespace string) labels.Set
	interPod *affinityState
	// spread is nil when the pod has no DoNotSchedule constraint.
	spread *spreadState
	// feasible are the nodes the pod fits on, which the scores rank.
	feasible    []*nodeInfo
	spreadScore *spreadScoreState
	// nodeNames are the only nodes the pod's required node affinity
	// admits by name (matchFields metadata.name In, in every term); nil
	// when it names none, empty when its terms conflict.
	nodeNames sets.Set[string]
	// spreadSelector, if set, is the pods a pod without spread
	// constraints is spread among by default (spreadSelectors).
	spreadSelector func(*corev1.Pod) labels.Selector
	// spreadDefaults are the profile's (PodTopologySpreadArgs).
	spreadDefaults spreadDefaulting
	// affinityScores are InterPodAffinity's, by domain.
	affinityScores domainScores
}

func newPodCycle(info *podInfo, nodes []*nodeInfo, nsLabels func(string) labels.Set) *podCycle {
	c := &podCycle{podInfo: info, nodes: nodes, nsLabels: nsLabels, requiredAffinity: nodeaffinity.GetRequiredNodeAffinity(info.pod)}
	if a := info.pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		// Invalid terms were refused by validation; any left match nothing.
		c.preferredAffinity, _ = nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	c.nodeNames = requiredNodeNames(info.pod)
	return c
}

// requiredNodeNames are the nodes that a pod's required node affinity
// admits by name, as kube's NodeAffinity PreFilter finds them (a
// DaemonSet's pods name their node so): nil when a term names none, for
// the terms are ORed; the union over the terms of the names each term's
// metadata.name In requirements all allow.
func requiredNodeNames(pod *corev1.Pod) sets.Set[string] {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	var names sets.Set[string]
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		var termNames sets.Set[string]
		for _, r := range t.MatchFields {
			if r.Key != metav1.ObjectNameField || r.Operator != corev1.NodeSelectorOpIn {
				continue
			}
			if termNames == nil {
				termNames = sets.New(r.Values...)
			} else {
				termNames = termNames.Intersection(sets.New(r.Values...))
			}
		}
		if termNames == nil {
			return nil
		}
		names = names.Union(termNames)
	}
	return names
}

func nodeUnschedulable(c *podCycle, n *nodeInfo) []string {
	if !n.node.Spec.Unschedulable {
		return nil
	}
	// Cordoned nodes are tainted so in kube; a pod may tolerate it.
	taint := &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	if corev1helpers.TolerationsTolerateTaint(klog.Background(), c.pod.Spec.Tolerations, taint, false) {
		return nil
	}
	return []string{reasonUnschedulable}
}

func nodeName(c *podCycle, n *nodeInfo) []string {
	if c.pod.Spec.NodeName == "" || c.pod.Spec.NodeName == n.name {
		return nil
	}
	return []string{reasonNodeName}
}

// taintToleration refuses a node with a NoSchedule or NoExecute taint the
// pod does not tolerate; PreferNoSchedule only scores.
func taintToleration(c *podCycle, n *nodeInfo) []string {
	if _, untolerated := untoleratedTaint(c.pod, n.node); untolerated {
		return []string{reasonUntoleratedTaint}
	}
	return nil
}

// untoleratedTaint is the first NoSchedule or NoExecute taint of node
// that pod does not tolerate.
func untoleratedTaint(pod *corev1.Pod, node *corev1.Node) (corev1.Taint, bool) {
	return corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
}

// nodeAffinity is the pod's nodeSelector and its required node affinity.
func podNodeAffinity(c *podCycle, n *nodeInfo) []string {
	if ok, err := c.requiredAffinity.Match(n.node); ok && err == nil {
		return nil
	}
	return []string{reasonNodeAffinity}
}

// hostPort is a port a container takes on its node.
type hostPort struct {
	ip       string
	protocol corev1.Protocol
	port     int32
}

func hostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, ctr := range containers {
			for _, p := range ctr.Ports {
				if p.HostPort <= 0 {
					continue
				}
				hp := hostPort{ip: p.HostIP, protocol: p.Protocol, port: p.HostPort}
				if hp.ip == "" {
					hp.ip = "0.0.0.0"
				}
				if hp.protocol == "" {
					hp.protocol = corev1.ProtocolTCP
				}
				out = append(out, hp)
			}
		}
	}
	return out
}

// conflicts: the same port and protocol, on the same address or one of
// them on every address.
func (p hostPort) conflicts(q hostPort) bool {
	return p.port == q.port && p.protocol == q.protocol && (p.ip == q.ip || p.ip == "0.0.0.0" || q.ip == "0.0.0.0")
}

func nodePorts(c *podCycle, n *nodeInfo) []string {
	for _, want := range c.ports {
		if slices.ContainsFunc(n.usedPorts, want.conflicts) {
			return []string{reasonNodePorts}
		}
	}
	return nil
}

// nodeResourcesFit refuses a node without room left for the pod's
// requests, each resource short a reason of its own, in kube's order: the
// number of pods, cpu, memory, ephemeral storage, then the others.
func nodeResourcesFit(c *podCycle, n *nodeInfo) []string {
	var reasons []string
	if int64(len(n.pods))+1 > n.allowedPods {
		reasons = append(reasons, reasonTooManyPods)
	}
	want, alloc, used := c.requests, n.allocatable, n.requested
	if want.milliCPU > 0 && want.milliCPU > alloc.milliCPU-used.milliCPU {
		reasons = append(reasons, fmt.Sprintf(reasonInsufficientFmt, corev1.ResourceCPU))
	}
	if want.memory > 0 && want.memory > alloc.memory-used.memory {
		reasons = append(reasons, fmt.Sprintf(reasonInsufficientFmt, corev1.ResourceMemory))
	}
	if want.ephemeral > 0 && want.ephemeral > alloc.ephemeral-used.ephemeral {
		reasons = append(reasons, fmt.Sprintf(reasonInsufficientFmt, corev1.ResourceEphemeralStorage))
	}
	var short []string
	for name, v := range want.scalar {
		if v > alloc.scalar[name]-used.scalar[name] {
			short = append(short, fmt.Sprintf(reasonInsufficientFmt, name))
		}
	}
	slices.Sort(short)
	return append(reasons, short...)
}

// requestsBeyondAllocatable: the pod asks for more of a resource than
// the node has at all, which no eviction would free.
func requestsBeyondAllocatable(c *podCycle, n *nodeInfo, _ []string) bool {
	want, alloc := c.requests, n.allocatable
	if want.milliCPU > alloc.milliCPU || want.memory > alloc.memory || want.ephemeral > alloc.ephemeral {
		return true
	}
	for name, v := range want.scalar {
		if v > alloc.scalar[name] {
			return true
		}
	}
	return false
}
