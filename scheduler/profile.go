package scheduler

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
)

// Profile is how pods of one scheduler name are placed: which filters
// and scores run, with what weights.
type Profile struct {
	// SchedulerName is the spec.schedulerName of the pods it places.
	SchedulerName string
	// PercentageOfNodesToScore bounds how many feasible nodes a cycle
	// looks for before it scores them, in percent of the nodes; 0 is
	// kube's adaptive default.
	PercentageOfNodesToScore int
	filters                  []filter
	scorers                  []scorer
	// dynamicResources and preemption: kube's DynamicResources and
	// DefaultPreemption are in the profile, and say their part of the
	// message of a pod that fits nowhere (postfilter.go).
	dynamicResources, preemption bool
	// spreadDefaults are how pods without spread constraints are spread.
	spreadDefaults spreadDefaulting
}

// DefaultProfile is kube-scheduler's default profile, for the plugins
// trustplane has.
func DefaultProfile() *Profile {
	return &Profile{
		SchedulerName: DefaultSchedulerName, filters: filters(defaultPluginArgs()), scorers: scorers(defaultWeights(), defaultPluginArgs()),
		dynamicResources: true, preemption: true,
	}
}

// newProfile is the default profile with only the filters named, and
// the scores weighted (those not named do not run).
func newProfile(enabledFilters sets.Set[string], weights map[string]int64, args pluginArgs, postFilters sets.Set[string]) *Profile {
	p := &Profile{
		SchedulerName: DefaultSchedulerName, dynamicResources: postFilters.Has("DynamicResources"), preemption: postFilters.Has("DefaultPreemption"),
		spreadDefaults: args.spread,
	}
	for _, f := range filters(args) {
		if enabledFilters.Has(f.name) {
			p.filters = append(p.filters, f)
		}
	}
	p.scorers = scorers(weights, args)
	return p
}

// kube never looks for fewer feasible nodes than this, nor for fewer than
// this percentage of them.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
)

// feasibleNodesToFind is how many feasible nodes a cycle looks for among
// n: all of a small cluster; of a large one a share that shrinks as it
// grows (50% less 1% per 125 nodes, at least 5%), as kube's, enough to
// place pods well without filtering every node for every pod.
func (p *Profile) feasibleNodesToFind(n int) int {
	if n < minFeasibleNodesToFind || p.PercentageOfNodesToScore >= 100 {
		return n
	}
	pct := p.PercentageOfNodesToScore
	if pct <= 0 {
		pct = max(50-n/125, minFeasibleNodesPercentageToFind)
	}
	return max(n*pct/100, minFeasibleNodesToFind)
}

// prepareFilters runs the filters' preparations for the cycle.
func (p *Profile) prepareFilters(c *podCycle) {
	for _, f := range p.filters {
		if f.prepare != nil {
			f.prepare(c)
		}
	}
}

// runFilters returns why the node does not fit the pod: the reasons of
// the first filter that refuses it, none when it fits; and whether
// evicting pods from the node could not lift the refusal.
func (p *Profile) runFilters(c *podCycle, n *nodeInfo) (why []string, unresolvable bool) {
	for _, f := range p.filters {
		if why := f.filter(c, n); len(why) > 0 {
			return why, f.unresolvable != nil && f.unresolvable(c, n, why)
		}
	}
	return nil, false
}

// scores: the profile runs the score named.
func (p *Profile) scores(name string) bool {
	return slices.ContainsFunc(p.scorers, func(s scorer) bool { return s.name == name })
}

// hasFilter: the profile runs the filter named.
func (p *Profile) hasFilter(name string) bool {
	return slices.ContainsFunc(p.filters, func(f filter) bool { return f.name == name })
}

// score is each feasible node's weighted sum of the normalized scores.
func (p *Profile) score(c *podCycle, feasible []*nodeInfo) []int64 {
	c.feasible = feasible
	total := make([]int64, len(feasible))
	raw := make([]int64, len(feasible))
	for _, s := range p.scorers {
		if s.weight == 0 || s.prepare != nil && !s.prepare(c) {
			continue
		}
		for i, n := range feasible {
			raw[i] = s.score(c, n)
		}
		if s.normalize != nil {
			s.normalize(raw)
		}
		for i := range total {
			total[i] += raw[i] * s.weight
		}
	}
	return total
}
