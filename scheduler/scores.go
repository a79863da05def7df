package scheduler

import (
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// maxNodeScore is the most a score gives a node, after normalizing.
const maxNodeScore = 100

// A scorer ranks the nodes that fit: score gives each its raw score,
// normalize (if set) brings them to 0..maxNodeScore over all of them, and
// the weight multiplies the result. prepare, if set, runs once per cycle
// first; it returns false when the scorer has nothing to say about this
// pod, which counts as 0 on every node.
type scorer struct {
	name      string
	weight    int64
	prepare   func(c *podCycle) bool
	score     func(c *podCycle, n *nodeInfo) int64
	normalize func(scores []int64)
}

// pluginArgs are the plugins' arguments (a KubeSchedulerConfiguration's
// pluginConfig) that trustplane takes.
type pluginArgs struct {
	addedAffinity addedAffinity
	interPod      interPodAffinityArgs
	fit           fitScoring
	balanced      balancedScoring
	spread        spreadDefaulting
}

// defaultPluginArgs are kube's defaults.
func defaultPluginArgs() pluginArgs {
	return pluginArgs{interPod: interPodAffinityArgs{hardPodAffinityWeight: 1}, fit: defaultFitScoring(), balanced: defaultBalancedScoring()}
}

// defaultWeights are kube's default profile's score weights.
func defaultWeights() map[string]int64 {
	return map[string]int64{
		"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "PodTopologySpread": 2,
		"InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1,
	}
}

// scorers are kube's default profile's, in its order, with the weights
// given; those without a weight do not run.
func scorers(weights map[string]int64, args pluginArgs) []scorer {
	all := []scorer{
		{name: "TaintToleration", score: taintTolerationScore, normalize: func(s []int64) { normalizeScores(s, true) }},
		{name: "NodeAffinity", prepare: func(c *podCycle) bool { return c.preferredAffinity != nil || args.addedAffinity.preferred != nil },
			score: args.addedAffinity.score, normalize: func(s []int64) { normalizeScores(s, false) }},
		{name: "NodeResourcesFit", score: args.fit.score},
		{name: "PodTopologySpread", prepare: prepareTopologySpreadScore, score: topologySpreadScore, normalize: normalizeTopologySpread},
		interPodAffinityScorer(args.interPod),
		{name: "NodeResourcesBalancedAllocation", prepare: args.balanced.requestsSomething, score: args.balanced.score},
		{name: "ImageLocality", prepare: countImageNodes, score: imageLocalityScore},
	}
	var out []scorer
	for _, s := range all {
		if w := weights[s.name]; w > 0 {
			s.weight = w
			out = append(out, s)
		}
	}
	return out
}

// normalizeScores scales scores to 0..maxNodeScore, the highest raw score
// getting maxNodeScore, or, reversed, the lowest; all zero stays zero,
// reversed all maxNodeScore (kube's DefaultNormalizeScore).
func normalizeScores(scores []int64, reverse bool) {
	var most int64
	for _, s := range scores {
		most = max(most, s)
	}
	for i, s := range scores {
		switch {
		case most == 0 && reverse:
			scores[i] = maxNodeScore
		case most == 0:
		case reverse:
			scores[i] = maxNodeScore - maxNodeScore*s/most
		default:
			scores[i] = maxNodeScore * s / most
		}
	}
}

// taintTolerationScore counts the PreferNoSchedule taints the pod does not
// tolerate; fewer is better.
func taintTolerationScore(c *podCycle, n *nodeInfo) int64 {
	var count int64
	for i := range n.node.Spec.Taints {
		t := &n.node.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectPreferNoSchedule {
			continue
		}
		tolerated := false
		for _, tol := range c.pod.Spec.Tolerations {
			if (tol.Effect == "" || tol.Effect == corev1.TaintEffectPreferNoSchedule) && corev1helpers.TolerationsTolerateTaint(klog.Background(), []corev1.Toleration{tol}, t, false) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			count++
		}
	}
	return count
}

// addedAffinity is NodeAffinityArgs' addedAffinity: node affinity every
// pod of the profile has besides its own.
type addedAffinity struct {
	required  *nodeaffinity.NodeSelector
	preferred *nodeaffinity.PreferredSchedulingTerms
}

// score is the sum of the weights of the preferred terms the node
// matches, the pod's and the profile's.
func (a addedAffinity) score(c *podCycle, n *nodeInfo) int64 {
	var sum int64
	if a.preferred != nil {
		sum += a.preferred.Score(n.node)
	}
	if c.preferredAffinity != nil {
		sum += c.preferredAffinity.Score(n.node)
	}
	return sum
}

// fitScoring is NodeResourcesFit's scoring strategy (kube's
// ScoringStrategy): LeastAllocated favours the nodes with the most left
// of the resources once the pod is on them, MostAllocated those with the
// least, each resource counting by its weight.
type fitScoring struct {
	mostAllocated bool
	resources     []resourceWeight
}

type resourceWeight struct {
	name   corev1.ResourceName
	weight int64
}

// defaultFitScoring is kube's: LeastAllocated, cpu and memory alike.
func defaultFitScoring() fitScoring {
	return fitScoring{resources: []resourceWeight{{corev1.ResourceCPU, 1}, {corev1.ResourceMemory, 1}}}
}

func (fs fitScoring) score(c *podCycle, n *nodeInfo) int64 {
	var sum, weights int64
	for _, r := range fs.resources {
		allocatable, requested := allocatableAndRequested(c, n, r.name, true)
		if allocatable == 0 {
			continue
		}
		var score int64
		switch {
		case fs.mostAllocated:
			score = min(requested, allocatable) * maxNodeScore / allocatable
		case requested <= allocatable:
			score = (allocatable - requested) * maxNodeScore / allocatable
		}
		sum += score * r.weight
		weights += r.weight
	}
	if weights == 0 {
		return 0
	}
	return sum / weights
}

// allocatableAndRequested are what the node has of a resource and what
// would be asked of it with the pod there; with nonZero, cpu and memory
// requests not given count as the defaults, so that empty pods spread
// too. An extended resource the pod does not ask for is not scored
// (0, 0), as kube's.
func allocatableAndRequested(c *podCycle, n *nodeInfo, name corev1.ResourceName, nonZero bool) (allocatable, requested int64) {
	used, want := n.requested, c.requests
	if nonZero {
		used, want = n.nonZeroRequested, c.nonZero
	}
	switch name {
	case corev1.ResourceCPU:
		return n.allocatable.milliCPU, used.milliCPU + want.milliCPU
	case corev1.ResourceMemory:
		return n.allocatable.memory, used.memory + want.memory
	case corev1.ResourceEphemeralStorage:
		return n.allocatable.ephemeral, n.requested.ephemeral + c.requests.ephemeral
	}
	asked := c.requests.scalar[name]
	has, ok := n.allocatable.scalar[name]
	if asked == 0 || !ok {
		return 0, 0
	}
	return has, n.requested.scalar[name] + asked
}

// podRequest is what the pod asks of a resource, as given.
func podRequest(c *podCycle, name corev1.ResourceName) int64 {
	switch name {
	case corev1.ResourceCPU:
		return c.requests.milliCPU
	case corev1.ResourceMemory:
		return c.requests.memory
	case corev1.ResourceEphemeralStorage:
		return c.requests.ephemeral
	}
	return c.requests.scalar[name]
}

// balancedScoring is NodeResourcesBalancedAllocation's resources (kube's
// NodeResourcesBalancedAllocationArgs, cpu and memory by default).
type balancedScoring struct {
	resources []corev1.ResourceName
}

func defaultBalancedScoring() balancedScoring {
	return balancedScoring{resources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}}
}

// requestsSomething: BalancedAllocation says nothing of a pod that asks
// for none of its resources, which would otherwise pile such pods onto
// one node (kubernetes/kubernetes#129138).
func (b balancedScoring) requestsSomething(c *podCycle) bool {
	for _, name := range b.resources {
		if podRequest(c, name) != 0 {
			return true
		}
	}
	return false
}

// score favours the nodes whose resources would be used in the same
// proportion once the pod is on them: 100 less the standard deviation of
// the fractions used, in percent, requests counted as given.
func (b balancedScoring) score(c *podCycle, n *nodeInfo) int64 {
	var fractions []float64
	var total float64
	for _, name := range b.resources {
		allocatable, requested := allocatableAndRequested(c, n, name, false)
		if allocatable == 0 {
			continue
		}
		f := min(float64(requested)/float64(allocatable), 1)
		fractions = append(fractions, f)
		total += f
	}
	var std float64
	switch len(fractions) {
	case 0, 1:
	case 2:
		std = math.Abs(fractions[0]-fractions[1]) / 2
	default:
		mean := total / float64(len(fractions))
		var sum float64
		for _, f := range fractions {
			sum += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sum / float64(len(fractions)))
	}
	return int64((1 - std) * maxNodeScore)
}

// ImageLocality's bounds: images below the first count as absent, and a
// container's image scores at most the second (kube's thresholds).
const (
	imageMinThreshold          = 23 << 20
	imageMaxContainerThreshold = 1000 << 20
)

// countImageNodes counts the nodes that hold each of the pod's images;
// when none holds any, every node scores 0.
func countImageNodes(c *podCycle) bool {
	c.imageNodes = map[string]int{}
	found := false
	for _, ctrs := range [][]corev1.Container{c.pod.Spec.InitContainers, c.pod.Spec.Containers} {
		for _, ctr := range ctrs {
			name := normalizedImageName(ctr.Image)
			if _, done := c.imageNodes[name]; done {
				continue
			}
			count := 0
			for _, n := range c.nodes {
				if _, ok := n.images[name]; ok {
					count++
				}
			}
			c.imageNodes[name] = count
			found = found || count > 0
		}
	}
	return found
}

// imageLocalityScore favours nodes that already hold the pod's images,
// by their size, scaled by how many nodes hold them, so that pods are not
// all drawn to the one node that has an image.
func imageLocalityScore(c *podCycle, n *nodeInfo) int64 {
	if len(n.images) == 0 {
		return 0
	}
	var sum int64
	containers := 0
	for _, ctrs := range [][]corev1.Container{c.pod.Spec.InitContainers, c.pod.Spec.Containers} {
		for _, ctr := range ctrs {
			containers++
			name := normalizedImageName(ctr.Image)
			if size, ok := n.images[name]; ok {
				sum += int64(float64(size) * float64(c.imageNodes[name]) / float64(len(c.nodes)))
			}
		}
	}
	most := int64(imageMaxContainerThreshold * containers)
	sum = min(max(sum, imageMinThreshold), most)
	return maxNodeScore * (sum - imageMinThreshold) / (most - imageMinThreshold)
}

// normalizedImageName is name with the tag latest when it has neither tag
// nor digest, as node status reports images.
func normalizedImageName(name string) string {
	if strings.LastIndex(name, ":") <= strings.LastIndex(name, "/") {
		name += ":latest"
	}
	return name
}
