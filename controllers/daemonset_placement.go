package controllers

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Where a DaemonSet's pods go: which nodes are eligible, and how a pod
// is pinned to its node.

// daemonTolerations are the tolerations kube's DaemonSet controller
// gives every daemon pod, so that a daemon keeps running on a node that
// is not ready, unreachable, under pressure or cordoned: daemons are
// often what makes a node work again.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// addDaemonTolerations adds the daemon tolerations that spec lacks, and
// for a pod of the host's network, node.kubernetes.io/network-unavailable
// as kube does.
func addDaemonTolerations(spec *corev1.PodSpec) {
	add := daemonTolerations
	if spec.HostNetwork {
		add = append(add[:len(add):len(add)], corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	for _, t := range add {
		found := false
		for _, have := range spec.Tolerations {
			if have.MatchToleration(&t) {
				found = true
				break
			}
		}
		if !found {
			spec.Tolerations = append(spec.Tolerations, t)
		}
	}
}

// daemonPodFits is kube's NodeShouldRunDaemonPod for ds's pod on node:
// shouldRun, a pod should be created there; shouldContinue, a pod there
// may stay. Both need the pod's nodeName (if set), nodeSelector and
// required node affinity to match the node; shouldRun also needs every
// NoSchedule and NoExecute taint tolerated, shouldContinue only the
// NoExecute ones.
func daemonPodFits(node *corev1.Node, ds *appsv1.DaemonSet) (shouldRun, shouldContinue bool) {
	spec := ds.Spec.Template.Spec.DeepCopy()
	addDaemonTolerations(spec)
	pod := &corev1.Pod{Spec: *spec}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return false, false
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok || err != nil {
		return false, false
	}
	untolerated := func(effects ...corev1.TaintEffect) bool {
		_, found := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
			for _, e := range effects {
				if t.Effect == e {
					return true
				}
			}
			return false
		}, false)
		return found
	}
	return !untolerated(corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute), !untolerated(corev1.TaintEffectNoExecute)
}

// pinToNode makes the pod's required node affinity select node alone,
// by a matchFields on metadata.name in each term (kube's
// ReplaceDaemonSetPodNodeNameNodeAffinity): the scheduler then binds it
// there, after its own checks of the node's resources.
func pinToNode(spec *corev1.PodSpec, node string) {
	req := corev1.NodeSelectorRequirement{Key: metav1NameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{req}}},
		}
		return
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchFields = []corev1.NodeSelectorRequirement{req}
	}
}

// metav1NameField is the one field a node selector term may match.
const metav1NameField = "metadata.name"

// targetNode is the node pod runs on, or, before it is bound, the one
// its node affinity pins it to; "" if neither.
func targetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == metav1NameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}
