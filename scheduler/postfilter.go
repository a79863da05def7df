package scheduler

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// What kube's PostFilter plugins say of a pod that fits nowhere, in their
// words: DynamicResources, then DefaultPreemption.
const (
	reasonNoClaimsToDeallocate = "no new claims to deallocate"
	reasonPreemptionNever      = "not eligible due to preemptionPolicy=Never."
	reasonNoVictims            = "No preemption victims found for incoming pod"
	reasonPreemptionNotHelpful = "Preemption is not helpful for scheduling"
)

// nodeFailure is a node the filters refused, and why.
type nodeFailure struct {
	n            *nodeInfo
	why          []string
	unresolvable bool
}

// diagnosis is what a cycle in which the pod fit nowhere found: every
// node refused, by a filter or, for those its required node affinity
// does not name, before any filter (preFiltered).
type diagnosis struct {
	numNodes int
	failed   []nodeFailure
	// preFiltered counts the nodes left out by name, with reasonNotNamed.
	preFiltered int
	// preFilterMsg, if set, refuses every node at once.
	preFilterMsg string
}

// fitError is a pod that fits on no node, and why: kube's message, the
// nodes counted by reason, then what the PostFilter plugins add.
type fitError struct {
	numNodes int
	// reasons counts the nodes by each reason they gave.
	reasons      map[string]int
	preFilterMsg string
	// postFilterMsg is what kube's PostFilter plugins say; "" for none.
	postFilterMsg string
}

func (e *fitError) Error() string {
	if e.numNodes == 0 {
		return "no nodes available to schedule pods"
	}
	msg := fmt.Sprintf("0/%d nodes are available:", e.numNodes)
	if e.preFilterMsg != "" {
		msg += " " + e.preFilterMsg + "."
	} else if len(e.reasons) > 0 {
		var parts []string
		for reason, n := range e.reasons {
			parts = append(parts, fmt.Sprintf("%d %s", n, reason))
		}
		// kube sorts the strings, counts and all.
		slices.Sort(parts)
		msg += " " + strings.Join(parts, ", ") + "."
	}
	if e.postFilterMsg != "" {
		msg += " " + e.postFilterMsg
	}
	return msg
}

// fitError is the error of a cycle that found d: the filters' reasons,
// and what DynamicResources and DefaultPreemption would add, when the
// profile has them.
func (p *Profile) fitError(c *podCycle, d *diagnosis) *fitError {
	e := &fitError{numNodes: d.numNodes, reasons: map[string]int{}, preFilterMsg: d.preFilterMsg}
	for _, f := range d.failed {
		for _, r := range f.why {
			e.reasons[r]++
		}
	}
	if d.preFiltered > 0 {
		e.reasons[reasonNotNamed] += d.preFiltered
	}
	var post []string
	// A pod without resource claims has none to free; trustplane does
	// not allocate claims, and says nothing of a pod that has some.
	if p.dynamicResources && len(c.pod.Spec.ResourceClaims) == 0 {
		post = append(post, reasonNoClaimsToDeallocate)
	}
	if p.preemption {
		msg, found := p.preemptionMessage(c, d)
		if found {
			// kube would evict pods and nominate a node; trustplane does
			// not preempt, and says nothing of the PostFilter plugins,
			// as kube's message did when preemption succeeded before it
			// named the node it found.
			return e
		}
		post = append(post, "preemption: "+msg)
	}
	e.postFilterMsg = strings.Join(post, ", ")
	return e
}

// preemptionMessage is what kube's DefaultPreemption says when it finds
// no node where evicting pods of lower priority would make room for the
// pod: a message of its own, counting for each node refused in a way
// eviction could lift why it still refuses once those pods are gone, and
// the other nodes as not helped. found: there is such a node.
func (p *Profile) preemptionMessage(c *podCycle, d *diagnosis) (msg string, found bool) {
	if pp := c.pod.Spec.PreemptionPolicy; pp != nil && *pp == corev1.PreemptNever {
		return reasonPreemptionNever, false
	}
	inner := &fitError{numNodes: d.numNodes, reasons: map[string]int{}}
	tried := 0
	if d.preFilterMsg == "" {
		priority := corev1helpers.PodPriority(c.pod)
		for _, f := range d.failed {
			if f.unresolvable {
				continue
			}
			tried++
			var victims []*podInfo
			for _, q := range f.n.pods {
				if corev1helpers.PodPriority(q.pod) < priority {
					victims = append(victims, q)
				}
			}
			if len(victims) == 0 {
				inner.reasons[reasonNoVictims]++
				continue
			}
			why := p.filtersWithout(c, f.n, victims)
			if len(why) == 0 {
				return "", true
			}
			for _, r := range why {
				inner.reasons[r]++
			}
		}
	}
	if rest := d.numNodes - tried; rest > 0 {
		inner.reasons[reasonPreemptionNotHelpful] += rest
	}
	return inner.Error(), false
}

// filtersWithout runs the filters on node n as if victims were gone from
// it, the cluster-wide state (affinity, spreading) counted again when the
// victims may have counted in it.
func (p *Profile) filtersWithout(c *podCycle, n *nodeInfo, victims []*podInfo) []string {
	m := n
	for _, v := range victims {
		m = m.withoutPod(v.pod.UID)
	}
	countsPods := len(c.affinity) > 0 || len(c.antiAffinity) > 0 || c.spread != nil ||
		slices.ContainsFunc(victims, func(v *podInfo) bool { return len(v.antiAffinity) > 0 })
	if !countsPods {
		why, _ := p.runFilters(c, m)
		return why
	}
	nodes := slices.Clone(c.nodes)
	if i := slices.Index(nodes, n); i >= 0 {
		nodes[i] = m
	}
	dry := newPodCycle(c.podInfo, nodes, c.nsLabels)
	dry.spreadSelector, dry.spreadDefaults = c.spreadSelector, c.spreadDefaults
	p.prepareFilters(dry)
	why, _ := p.runFilters(dry, m)
	return why
}
