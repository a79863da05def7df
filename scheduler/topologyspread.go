package scheduler

import (
	"math"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// Reasons of PodTopologySpread, kube's words.
const (
	reasonSpread             = "node(s) didn't match pod topology spread constraints"
	reasonSpreadMissingLabel = reasonSpread + " (missing required label)"
)

// spreadConstraint is a topology spread constraint of the pod being
// scheduled, compiled, with the API's defaults filled in.
type spreadConstraint struct {
	maxSkew     int
	topologyKey string
	// selector is the constraint's labelSelector and the pod's own
	// values of its matchLabelKeys.
	selector labels.Selector
	// minDomains: with fewer eligible domains, the global minimum is 0.
	minDomains int
	// honorAffinity, honorTaints: a node that the pod's node affinity
	// (or selector) refuses, or whose taints it does not tolerate, is
	// not an eligible domain (nodeAffinityPolicy, by default Honor;
	// nodeTaintsPolicy, by default Ignore).
	honorAffinity, honorTaints bool
}

// spreadConstraints are the constraints of list with action, for pod. A
// selector that does not parse (validation refuses those) selects
// nothing.
func spreadConstraints(list []corev1.TopologySpreadConstraint, pod *corev1.Pod, action corev1.UnsatisfiableConstraintAction) []spreadConstraint {
	var out []spreadConstraint
	for _, tsc := range list {
		if tsc.WhenUnsatisfiable != action {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector)
		if err != nil {
			sel = labels.Nothing()
		}
		// kube-apiserver 1.34 merges matchLabelKeys into the selector
		// when a pod is created; ours does not, so the scheduler does, as
		// kube's did before. Merged twice, a requirement is only repeated.
		sel = withPodLabels(sel, pod.Labels, tsc.MatchLabelKeys, selection.In)
		c := spreadConstraint{
			maxSkew:       int(tsc.MaxSkew),
			topologyKey:   tsc.TopologyKey,
			selector:      sel,
			minDomains:    1,
			honorAffinity: tsc.NodeAffinityPolicy == nil || *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor,
			honorTaints:   tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor,
		}
		if tsc.MinDomains != nil {
			c.minDomains = int(*tsc.MinDomains)
		}
		out = append(out, c)
	}
	return out
}

// hasTopologyKeys: the node has a value for every constraint's key.
func hasTopologyKeys(node *corev1.Node, constraints []spreadConstraint) bool {
	for _, sc := range constraints {
		if _, ok := node.Labels[sc.topologyKey]; !ok {
			return false
		}
	}
	return true
}

// eligible: the node's domain counts for the constraint, by its node
// inclusion policies.
func (sc spreadConstraint) eligible(c *podCycle, node *corev1.Node) bool {
	if sc.honorAffinity {
		if ok, err := c.requiredAffinity.Match(node); !ok || err != nil {
			return false
		}
	}
	if sc.honorTaints {
		if _, untolerated := untoleratedTaint(c.pod, node); untolerated {
			return false
		}
	}
	return true
}

// countMatching counts the pods that the selector selects in namespace
// ns, those being deleted aside (kubernetes/kubernetes#87621).
func countMatching(pods []*podInfo, sel labels.Selector, ns string) int {
	n := 0
	for _, p := range pods {
		if p.pod.DeletionTimestamp == nil && p.pod.Namespace == ns && sel.Matches(labels.Set(p.pod.Labels)) {
			n++
		}
	}
	return n
}

// spreadState is what PodTopologySpread's filter compares a node
// against: for each DoNotSchedule constraint, the matching pods of each
// eligible domain, and the global minimum the skew is measured from.
type spreadState struct {
	constraints []spreadConstraint
	counts      []map[string]int
	minMatch    []int
}

func prepareTopologySpread(c *podCycle) {
	constraints, _ := c.spreadConstraints(corev1.DoNotSchedule)
	if len(constraints) == 0 {
		c.spread = nil
		return
	}
	s := &spreadState{constraints: constraints, counts: make([]map[string]int, len(constraints)), minMatch: make([]int, len(constraints))}
	for i := range constraints {
		s.counts[i] = map[string]int{}
	}
	for _, n := range c.nodes {
		if !hasTopologyKeys(n.node, constraints) {
			continue
		}
		for i, sc := range constraints {
			if sc.eligible(c, n.node) {
				s.counts[i][n.node.Labels[sc.topologyKey]] += countMatching(n.pods, sc.selector, c.pod.Namespace)
			}
		}
	}
	for i, sc := range constraints {
		// With too few domains, as if the missing ones had none.
		if len(s.counts[i]) < sc.minDomains {
			continue
		}
		lowest := math.MaxInt
		for _, n := range s.counts[i] {
			lowest = min(lowest, n)
		}
		s.minMatch[i] = lowest
	}
	c.spread = s
}

// topologySpread refuses a node without every topology key, or where the
// pod would make its domain's matching pods exceed the global minimum by
// more than maxSkew.
func topologySpread(c *podCycle, n *nodeInfo) []string {
	s := c.spread
	if s == nil {
		return nil
	}
	for i, sc := range s.constraints {
		v, ok := n.node.Labels[sc.topologyKey]
		if !ok {
			return []string{reasonSpreadMissingLabel}
		}
		self := 0
		if sc.selector.Matches(labels.Set(c.pod.Labels)) {
			self = 1
		}
		if s.counts[i][v]+self-s.minMatch[i] > sc.maxSkew {
			return []string{reasonSpread}
		}
	}
	return nil
}

// spreadScoreState is what PodTopologySpread's score reads: the
// ScheduleAnyway constraints; for those not by host, the matching pods of
// each domain that a feasible node is in; the weight of each, larger for
// a topology of more domains; and the feasible nodes left unscored for
// lacking a topology key.
type spreadScoreState struct {
	constraints []spreadConstraint
	counts      []map[string]int
	weights     []float64
	ignored     map[string]bool
}

// spreadDefaulting is PodTopologySpreadArgs: how a pod without spread
// constraints of its own is spread, among the pods that share a Service
// or a controller with it: kube's System defaults (systemDefaultConstraints),
// or a List of constraints, without selectors, of the configuration's.
type spreadDefaulting struct {
	list        bool
	constraints []corev1.TopologySpreadConstraint
}

// spreadConstraints are the pod's constraints with action, or, when it
// has none, the defaults, among the pods its spreadSelector selects.
// requireAll: a node without a topology key of theirs is refused or not
// scored, as always but for kube's System defaults, which still spread a
// node without a zone by host.
func (c *podCycle) spreadConstraints(action corev1.UnsatisfiableConstraintAction) (constraints []spreadConstraint, requireAll bool) {
	if len(c.pod.Spec.TopologySpreadConstraints) > 0 {
		return spreadConstraints(c.pod.Spec.TopologySpreadConstraints, c.pod, action), true
	}
	if c.spreadSelector == nil || !c.spreadDefaults.list && action != corev1.ScheduleAnyway {
		return nil, true
	}
	if c.spreadDefaults.list && len(spreadConstraints(c.spreadDefaults.constraints, c.pod, action)) == 0 {
		return nil, true
	}
	sel := c.spreadSelector(c.pod)
	if sel.Empty() {
		return nil, true
	}
	if !c.spreadDefaults.list {
		return systemDefaultConstraints(sel), false
	}
	constraints = spreadConstraints(c.spreadDefaults.constraints, c.pod, action)
	for i := range constraints {
		constraints[i].selector = sel
	}
	return constraints, true
}

// systemDefaultConstraints are how kube spreads a pod without
// constraints of its own (PodTopologySpread's System defaulting): among
// the pods sel selects, by host with maxSkew 3 and by zone with maxSkew
// 5, ScheduleAnyway.
func systemDefaultConstraints(sel labels.Selector) []spreadConstraint {
	return []spreadConstraint{
		{maxSkew: 3, topologyKey: corev1.LabelHostname, selector: sel, minDomains: 1, honorAffinity: true},
		{maxSkew: 5, topologyKey: corev1.LabelTopologyZone, selector: sel, minDomains: 1, honorAffinity: true},
	}
}

// spreadSelectors find the pods that a pod is spread among by default:
// those its Services select, and those of its controller (a ReplicaSet
// or StatefulSet), as kube's DefaultSelector. (kube's counts a
// ReplicationController too; trustplane serves none.)
type spreadSelectors struct {
	services     corelisters.ServiceLister
	replicaSets  appslisters.ReplicaSetLister
	statefulSets appslisters.StatefulSetLister
}

// selector is the pods that pod is spread among by default; empty for
// none. Services select the pod with all their labels, so that merging
// theirs and the controller's cannot conflict.
func (l spreadSelectors) selector(pod *corev1.Pod) labels.Selector {
	set := labels.Set{}
	if services, err := l.services.Services(pod.Namespace).List(labels.Everything()); err == nil {
		for _, svc := range services {
			// A Service without a selector selects nothing.
			if svc.Spec.Selector != nil && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
				set = labels.Merge(set, svc.Spec.Selector)
			}
		}
	}
	sel := set.AsSelector()
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return sel
	}
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return sel
	}
	var of *metav1.LabelSelector
	switch gv.WithKind(owner.Kind) {
	case appsv1.SchemeGroupVersion.WithKind("ReplicaSet"):
		if rs, err := l.replicaSets.ReplicaSets(pod.Namespace).Get(owner.Name); err == nil {
			of = rs.Spec.Selector
		}
	case appsv1.SchemeGroupVersion.WithKind("StatefulSet"):
		if ss, err := l.statefulSets.StatefulSets(pod.Namespace).Get(owner.Name); err == nil {
			of = ss.Spec.Selector
		}
	}
	if of != nil {
		if other, err := metav1.LabelSelectorAsSelector(of); err == nil {
			if reqs, ok := other.Requirements(); ok {
				sel = sel.Add(reqs...)
			}
		}
	}
	return sel
}

// prepareTopologySpreadScore counts for the ScheduleAnyway constraints,
// or, for a pod without constraints of its own, the default ones; false,
// the score says nothing, when there are none.
func prepareTopologySpreadScore(c *podCycle) bool {
	constraints, requireAll := c.spreadConstraints(corev1.ScheduleAnyway)
	if len(constraints) == 0 {
		return false
	}
	s := &spreadScoreState{constraints: constraints, counts: make([]map[string]int, len(constraints)), weights: make([]float64, len(constraints)), ignored: map[string]bool{}}
	for i := range constraints {
		s.counts[i] = map[string]int{}
	}
	for _, n := range c.feasible {
		if requireAll && !hasTopologyKeys(n.node, constraints) {
			s.ignored[n.name] = true
			continue
		}
		for i, sc := range constraints {
			if sc.topologyKey != corev1.LabelHostname {
				s.counts[i][n.node.Labels[sc.topologyKey]] = 0
			}
		}
	}
	for i, sc := range constraints {
		domains := len(s.counts[i])
		if sc.topologyKey == corev1.LabelHostname {
			domains = len(c.feasible) - len(s.ignored)
		}
		s.weights[i] = math.Log(float64(domains + 2))
	}
	// Pods count on every node, feasible or not, in the domains of the
	// feasible ones; pods by host are counted on the node scored.
	for _, n := range c.nodes {
		if requireAll && !hasTopologyKeys(n.node, constraints) {
			continue
		}
		for i, sc := range constraints {
			// Without the key, the domain "", as kube counts it.
			v := n.node.Labels[sc.topologyKey]
			if _, ok := s.counts[i][v]; !ok || sc.topologyKey == corev1.LabelHostname || !sc.eligible(c, n.node) {
				continue
			}
			s.counts[i][v] += countMatching(n.pods, sc.selector, c.pod.Namespace)
		}
	}
	c.spreadScore = s
	return true
}

// unscored marks a node that a score leaves out before normalizing.
const unscored = -1

// topologySpreadScore is, over the constraints, the matching pods of the
// node's domain, weighted, plus maxSkew-1 so that a larger skew allowed
// blurs the differences; fewer is better.
func topologySpreadScore(c *podCycle, n *nodeInfo) int64 {
	s := c.spreadScore
	if s.ignored[n.name] {
		return unscored
	}
	var score float64
	for i, sc := range s.constraints {
		v, ok := n.node.Labels[sc.topologyKey]
		if !ok {
			continue
		}
		count := s.counts[i][v]
		if sc.topologyKey == corev1.LabelHostname {
			count = countMatching(n.pods, sc.selector, c.pod.Namespace)
		}
		score += float64(count)*s.weights[i] + float64(sc.maxSkew-1)
	}
	return int64(math.Round(score))
}

// normalizeTopologySpread turns the counts around: the fewest get
// maxNodeScore, others less in proportion; unscored nodes get 0.
func normalizeTopologySpread(scores []int64) {
	lowest, highest := int64(math.MaxInt64), int64(0)
	for _, s := range scores {
		if s == unscored {
			continue
		}
		lowest, highest = min(lowest, s), max(highest, s)
	}
	for i, s := range scores {
		switch {
		case s == unscored:
			scores[i] = 0
		case highest == 0:
			scores[i] = maxNodeScore
		default:
			scores[i] = maxNodeScore * (highest + lowest - s) / highest
		}
	}
}
