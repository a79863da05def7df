package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Reasons of InterPodAffinity, kube's words.
const (
	reasonAffinity             = "node(s) didn't match pod affinity rules"
	reasonAntiAffinity         = "node(s) didn't match pod anti-affinity rules"
	reasonExistingAntiAffinity = "node(s) didn't satisfy existing pods anti-affinity rules"
)

// affinityTerm is a required pod (anti-)affinity term, compiled: the pods
// it selects, in which namespaces, and the topology that groups nodes.
type affinityTerm struct {
	selector    labels.Selector
	namespaces  sets.Set[string]
	nsSelector  labels.Selector // nil: only namespaces
	topologyKey string
}

// compileTerms compiles the terms of a pod in namespace ns; a term whose
// selector does not parse (validation refuses those) selects nothing.
func compileTerms(terms []corev1.PodAffinityTerm, ns string) []affinityTerm {
	var out []affinityTerm
	for _, t := range terms {
		sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
		if err != nil {
			sel = labels.Nothing()
		}
		at := affinityTerm{selector: sel, namespaces: sets.New(t.Namespaces...), topologyKey: t.TopologyKey}
		if t.NamespaceSelector != nil {
			if at.nsSelector, err = metav1.LabelSelectorAsSelector(t.NamespaceSelector); err != nil {
				at.nsSelector = labels.Nothing()
			}
		} else if len(t.Namespaces) == 0 {
			// Neither: the pod's own namespace.
			at.namespaces.Insert(ns)
		}
		out = append(out, at)
	}
	return out
}

func requiredTerms(pod *corev1.Pod) (affinity, antiAffinity []affinityTerm) {
	a := pod.Spec.Affinity
	if a == nil {
		return nil, nil
	}
	if a.PodAffinity != nil {
		affinity = compileTerms(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, pod.Namespace)
	}
	if a.PodAntiAffinity != nil {
		antiAffinity = compileTerms(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, pod.Namespace)
	}
	return affinity, antiAffinity
}

// matches: the term selects pod, whose namespace has nsLabels.
func (t affinityTerm) matches(pod *corev1.Pod, nsLabels func(string) labels.Set) bool {
	if !t.namespaces.Has(pod.Namespace) && (t.nsSelector == nil || !t.nsSelector.Matches(nsLabels(pod.Namespace))) {
		return false
	}
	return t.selector.Matches(labels.Set(pod.Labels))
}

// topologyPair is one topology domain: the nodes whose label key is value.
type topologyPair struct{ key, value string }

// affinityState is what InterPodAffinity's filter compares a node
// against, counted once per cycle over the pods of every node.
type affinityState struct {
	affinity, antiAffinity []affinityTerm
	// affinityCounts, antiAffinityCounts: pods matching the incoming
	// pod's terms, per domain; existingAntiCounts: pods whose own
	// anti-affinity refuses the incoming pod, per domain.
	affinityCounts, antiAffinityCounts, existingAntiCounts map[topologyPair]int
	// firstOfGroup: no pod matches the affinity terms anywhere, and the
	// pod matches them itself: it may go anywhere, or no group could
	// ever start.
	firstOfGroup bool
}

func prepareInterPodAffinity(c *podCycle) {
	s := &affinityState{
		affinity: c.affinity, antiAffinity: c.antiAffinity,
		affinityCounts: map[topologyPair]int{}, antiAffinityCounts: map[topologyPair]int{}, existingAntiCounts: map[topologyPair]int{},
	}
	c.interPod = s
	for _, n := range c.nodes {
		// Existing pods whose anti-affinity refuses this one.
		for _, p := range n.antiAffinityPods {
			for _, t := range p.antiAffinity {
				if v, ok := n.node.Labels[t.topologyKey]; ok && t.matches(c.pod, c.nsLabels) {
					s.existingAntiCounts[topologyPair{t.topologyKey, v}]++
				}
			}
		}
		if len(c.affinity) == 0 && len(c.antiAffinity) == 0 {
			continue
		}
		for _, p := range n.pods {
			if len(c.affinity) > 0 && allMatch(c.affinity, p.pod, c.nsLabels) {
				for _, t := range c.affinity {
					if v, ok := n.node.Labels[t.topologyKey]; ok {
						s.affinityCounts[topologyPair{t.topologyKey, v}]++
					}
				}
			}
			for _, t := range c.antiAffinity {
				if v, ok := n.node.Labels[t.topologyKey]; ok && t.matches(p.pod, c.nsLabels) {
					s.antiAffinityCounts[topologyPair{t.topologyKey, v}]++
				}
			}
		}
	}
	s.firstOfGroup = len(c.affinity) > 0 && len(s.affinityCounts) == 0 && allMatch(c.affinity, c.pod, c.nsLabels)
}

func allMatch(terms []affinityTerm, pod *corev1.Pod, nsLabels func(string) labels.Set) bool {
	for _, t := range terms {
		if !t.matches(pod, nsLabels) {
			return false
		}
	}
	return true
}

// interPodAffinity refuses a node in a domain where, for an affinity
// term, no pod the pod needs runs; where a pod its anti-affinity refuses
// runs; or where an existing pod's anti-affinity refuses it.
func interPodAffinity(c *podCycle, n *nodeInfo) []string {
	s := c.interPod
	// In kube's order, which decides the reason a node gives.
	for _, t := range s.affinity {
		v, ok := n.node.Labels[t.topologyKey]
		if !ok || s.affinityCounts[topologyPair{t.topologyKey, v}] == 0 && !s.firstOfGroup {
			return []string{reasonAffinity}
		}
	}
	for _, t := range s.antiAffinity {
		if v, ok := n.node.Labels[t.topologyKey]; ok && s.antiAffinityCounts[topologyPair{t.topologyKey, v}] > 0 {
			return []string{reasonAntiAffinity}
		}
	}
	for pair, count := range s.existingAntiCounts {
		if count > 0 && n.node.Labels[pair.key] == pair.value {
			return []string{reasonExistingAntiAffinity}
		}
	}
	return nil
}
