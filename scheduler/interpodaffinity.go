package scheduler

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
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

// compileTerms compiles the terms of pod; a term whose selector does not
// parse (validation refuses those) selects nothing. The pod's values of
// a term's matchLabelKeys are required of the pods it selects, and those
// of its mismatchLabelKeys refused: kube-apiserver merges them into the
// selector when the pod is created, ours does not (merged twice, a
// requirement is only repeated).
func compileTerms(terms []corev1.PodAffinityTerm, pod *corev1.Pod) []affinityTerm {
	var out []affinityTerm
	for _, t := range terms {
		sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
		if err != nil {
			sel = labels.Nothing()
		}
		sel = withPodLabels(sel, pod.Labels, t.MatchLabelKeys, selection.In)
		sel = withPodLabels(sel, pod.Labels, t.MismatchLabelKeys, selection.NotIn)
		at := affinityTerm{selector: sel, namespaces: sets.New(t.Namespaces...), topologyKey: t.TopologyKey}
		if t.NamespaceSelector != nil {
			if at.nsSelector, err = metav1.LabelSelectorAsSelector(t.NamespaceSelector); err != nil {
				at.nsSelector = labels.Nothing()
			}
		} else if len(t.Namespaces) == 0 {
			// Neither: the pod's own namespace.
			at.namespaces.Insert(pod.Namespace)
		}
		out = append(out, at)
	}
	return out
}

// podAffinityTerms are pod's required and preferred pod (anti-)affinity
// terms, compiled.
func podAffinityTerms(pod *corev1.Pod) (affinity, antiAffinity []affinityTerm, preferred, preferredAnti []weightedTerm) {
	a := pod.Spec.Affinity
	if a == nil {
		return nil, nil, nil, nil
	}
	if pa := a.PodAffinity; pa != nil {
		affinity = compileTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pod)
		preferred = compileWeighted(pa.PreferredDuringSchedulingIgnoredDuringExecution, pod)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		antiAffinity = compileTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pod)
		preferredAnti = compileWeighted(pa.PreferredDuringSchedulingIgnoredDuringExecution, pod)
	}
	return affinity, antiAffinity, preferred, preferredAnti
}

// withPodLabels adds to sel, for each of keys that podLabels have, that
// a pod's label be (op In) or not be (op NotIn) the same.
func withPodLabels(sel labels.Selector, podLabels map[string]string, keys []string, op selection.Operator) labels.Selector {
	for _, key := range keys {
		v, ok := podLabels[key]
		if !ok {
			continue
		}
		if req, err := labels.NewRequirement(key, op, []string{v}); err == nil {
			sel = sel.Add(*req)
		}
	}
	return sel
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

// weightedTerm is a preferred pod (anti-)affinity term, compiled, with
// its weight.
type weightedTerm struct {
	affinityTerm
	weight int64
}

func compileWeighted(terms []corev1.WeightedPodAffinityTerm, pod *corev1.Pod) []weightedTerm {
	var out []weightedTerm
	for _, t := range terms {
		out = append(out, weightedTerm{affinityTerm: compileTerms([]corev1.PodAffinityTerm{t.PodAffinityTerm}, pod)[0], weight: int64(t.Weight)})
	}
	return out
}

// interPodAffinityArgs are kube's InterPodAffinityArgs.
type interPodAffinityArgs struct {
	// hardPodAffinityWeight is what an existing pod's required affinity
	// term that the incoming pod matches adds to the existing pod's
	// domain (1 by default; 0 ignores such terms).
	hardPodAffinityWeight int64
	// ignorePreferredTermsOfExistingPods: a pod without preferred terms
	// of its own is not scored at all, whatever the existing pods prefer.
	ignorePreferredTermsOfExistingPods bool
}

// domainScores are InterPodAffinity's raw scores by topology key and
// value: each node scores the sum over the keys of its domains' scores.
type domainScores map[string]map[string]int64

func (d domainScores) add(node *corev1.Node, key string, w int64) {
	v, ok := node.Labels[key]
	if !ok {
		return
	}
	if d[key] == nil {
		d[key] = map[string]int64{}
	}
	d[key][v] += w
}

// addMatching adds, for each of terms that selects pod, its weight
// (sign 1) or its opposite (sign -1) to the node's domain.
func (d domainScores) addMatching(node *corev1.Node, terms []weightedTerm, sign int64, pod *corev1.Pod, nsLabels func(string) labels.Set) {
	for _, t := range terms {
		if t.matches(pod, nsLabels) {
			d.add(node, t.topologyKey, sign*t.weight)
		}
	}
}

// interPodAffinityScorer is InterPodAffinity's score with args: a node
// gains the weight of each preferred affinity term of the incoming pod
// for each pod in its domain that the term selects, and loses that of
// each preferred anti-affinity term; and symmetrically for the terms of
// the existing pods that select the incoming pod, their required
// affinity terms counting hardPodAffinityWeight. Normalized from the
// lowest to the highest, as kube's.
func interPodAffinityScorer(args interPodAffinityArgs) scorer {
	prepare := func(c *podCycle) bool {
		own := len(c.preferred) > 0 || len(c.preferredAnti) > 0
		if args.ignorePreferredTermsOfExistingPods && !own {
			return false
		}
		scores := domainScores{}
		for _, n := range c.nodes {
			if len(n.node.Labels) == 0 {
				continue
			}
			// Without terms of its own, only the pods with terms can say
			// anything of the incoming pod.
			pods := n.affinityPods
			if own {
				pods = n.pods
			}
			for _, p := range pods {
				scores.addMatching(n.node, c.preferred, 1, p.pod, c.nsLabels)
				scores.addMatching(n.node, c.preferredAnti, -1, p.pod, c.nsLabels)
				if args.hardPodAffinityWeight > 0 {
					for _, t := range p.affinity {
						if t.matches(c.pod, c.nsLabels) {
							scores.add(n.node, t.topologyKey, args.hardPodAffinityWeight)
						}
					}
				}
				scores.addMatching(n.node, p.preferred, 1, c.pod, c.nsLabels)
				scores.addMatching(n.node, p.preferredAnti, -1, c.pod, c.nsLabels)
			}
		}
		if len(scores) == 0 {
			return false
		}
		c.affinityScores = scores
		return true
	}
	score := func(c *podCycle, n *nodeInfo) int64 {
		var sum int64
		for key, values := range c.affinityScores {
			if v, ok := n.node.Labels[key]; ok {
				sum += values[v]
			}
		}
		return sum
	}
	return scorer{name: "InterPodAffinity", prepare: prepare, score: score, normalize: normalizeMinMax}
}

// normalizeMinMax scales scores, which may be negative, to
// 0..maxNodeScore from the lowest to the highest; all equal are all 0.
func normalizeMinMax(scores []int64) {
	lowest, highest := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range scores {
		lowest, highest = min(lowest, s), max(highest, s)
	}
	for i, s := range scores {
		scores[i] = 0
		if highest > lowest {
			scores[i] = int64(float64(maxNodeScore) * (float64(s-lowest) / float64(highest-lowest)))
		}
	}
}
