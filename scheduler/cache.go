package scheduler

import (
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podInfo is a pod with what the filters and scores read of it computed
// once.
type podInfo struct {
	pod               *corev1.Pod
	requests, nonZero resources
	ports             []hostPort
	// affinity and antiAffinity are its required pod (anti-)affinity;
	// preferred and preferredAnti its preferred terms.
	affinity, antiAffinity   []affinityTerm
	preferred, preferredAnti []weightedTerm
}

// scoresAffinity: the pod has terms that InterPodAffinity's score reads
// when another pod is placed (its required anti-affinity only filters).
func (p *podInfo) scoresAffinity() bool {
	return len(p.affinity) > 0 || len(p.preferred) > 0 || len(p.preferredAnti) > 0
}

func newPodInfo(pod *corev1.Pod) *podInfo {
	requests, nonZero := podRequests(pod)
	p := &podInfo{pod: pod, requests: requests, nonZero: nonZero, ports: hostPorts(pod)}
	p.affinity, p.antiAffinity, p.preferred, p.preferredAnti = podAffinityTerms(pod)
	return p
}

// nodeInfo is a node and the pods assigned or assumed on it. A nodeInfo
// is never changed once the cache holds it: a change makes a new one, so
// that a snapshot can be read without a lock while the cache moves on.
type nodeInfo struct {
	name string
	// node is nil while pods name a node the cache has not seen (or no
	// longer sees); such a node is not in snapshots.
	node *corev1.Node
	pods []*podInfo
	// requested is the sum of the pods' requests; nonZeroRequested the
	// same with defaults for requests not given (podRequests).
	requested, nonZeroRequested resources
	allocatable                 resources
	allowedPods                 int64
	// usedPorts are the host ports the pods hold.
	usedPorts []hostPort
	// images are the sizes of the node's images by name.
	images map[string]int64
	// antiAffinityPods are the pods with required anti-affinity, which
	// every cycle checks.
	antiAffinityPods []*podInfo
	// affinityPods are the pods whose terms InterPodAffinity's score
	// reads (scoresAffinity).
	affinityPods []*podInfo
}

func (n *nodeInfo) clone() *nodeInfo {
	c := *n
	c.pods = slices.Clone(n.pods)
	c.requested = n.requested.clone()
	c.nonZeroRequested = n.nonZeroRequested.clone()
	c.usedPorts = slices.Clone(n.usedPorts)
	c.antiAffinityPods = slices.Clone(n.antiAffinityPods)
	c.affinityPods = slices.Clone(n.affinityPods)
	return &c
}

func (n *nodeInfo) withNode(node *corev1.Node) *nodeInfo {
	c := n.clone()
	c.node = node
	c.allocatable = resourcesOf(node.Status.Allocatable)
	c.allowedPods = node.Status.Allocatable.Pods().Value()
	c.images = map[string]int64{}
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			c.images[normalizedImageName(name)] = img.SizeBytes
		}
	}
	return c
}

func (n *nodeInfo) withPod(p *podInfo) *nodeInfo {
	c := n.clone()
	c.pods = append(c.pods, p)
	c.requested.add(p.requests, 1)
	c.nonZeroRequested.add(p.nonZero, 1)
	c.usedPorts = append(c.usedPorts, p.ports...)
	if len(p.antiAffinity) > 0 {
		c.antiAffinityPods = append(c.antiAffinityPods, p)
	}
	if p.scoresAffinity() {
		c.affinityPods = append(c.affinityPods, p)
	}
	return c
}

func (n *nodeInfo) withoutPod(uid types.UID) *nodeInfo {
	i := slices.IndexFunc(n.pods, func(p *podInfo) bool { return p.pod.UID == uid })
	if i < 0 {
		return n
	}
	p := n.pods[i]
	c := n.clone()
	c.pods = slices.Delete(c.pods, i, i+1)
	c.requested.add(p.requests, -1)
	c.nonZeroRequested.add(p.nonZero, -1)
	c.usedPorts = c.usedPorts[:0]
	for _, q := range c.pods {
		c.usedPorts = append(c.usedPorts, q.ports...)
	}
	c.antiAffinityPods = slices.DeleteFunc(c.antiAffinityPods, func(q *podInfo) bool { return q.pod.UID == uid })
	c.affinityPods = slices.DeleteFunc(c.affinityPods, func(q *podInfo) bool { return q.pod.UID == uid })
	return c
}

// cache is the scheduler's view of the cluster: the nodes, the pods
// assigned to them, and the pods assumed on a node between the decision
// and the binding's arrival through the informer. It is safe for
// concurrent use.
type cache struct {
	mu sync.Mutex
	// nodes are by name; guarded by mu, as are names and pods.
	nodes map[string]*nodeInfo
	// names are the nodes that exist, sorted: the order in which the
	// scheduler goes through them.
	names []string
	pods  map[types.UID]*cachedPod
}

type cachedPod struct {
	info *podInfo
	// assumed: the scheduler chose the node and the informer has not yet
	// shown the pod bound there.
	assumed bool
}

func newCache() *cache {
	return &cache{nodes: map[string]*nodeInfo{}, pods: map[types.UID]*cachedPod{}}
}

func (c *cache) nodeInfo(name string) *nodeInfo {
	if n, ok := c.nodes[name]; ok {
		return n
	}
	return &nodeInfo{name: name}
}

func (c *cache) setNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodeInfo(node.Name)
	if n.node == nil {
		i, _ := slices.BinarySearch(c.names, node.Name)
		c.names = slices.Insert(c.names, i, node.Name)
	}
	c.nodes[node.Name] = n.withNode(node)
}

func (c *cache) removeNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodes[name]
	if !ok {
		return
	}
	if i, found := slices.BinarySearch(c.names, name); found {
		c.names = slices.Delete(c.names, i, i+1)
	}
	if len(n.pods) == 0 {
		delete(c.nodes, name)
		return
	}
	// Its pods still count until they are gone, should it come back.
	c.nodes[name] = &nodeInfo{name: name, pods: n.pods, requested: n.requested, nonZeroRequested: n.nonZeroRequested, usedPorts: n.usedPorts, antiAffinityPods: n.antiAffinityPods, affinityPods: n.affinityPods}
}

// addPod records a pod the informer shows assigned to a node; it confirms
// an assumed pod.
func (c *cache) addPod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(pod.UID)
	info := newPodInfo(pod)
	c.pods[pod.UID] = &cachedPod{info: info}
	c.nodes[pod.Spec.NodeName] = c.nodeInfo(pod.Spec.NodeName).withPod(info)
}

// removePod forgets a pod, assumed or not.
func (c *cache) removePod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(uid)
}

func (c *cache) removeLocked(uid types.UID) {
	cp, ok := c.pods[uid]
	if !ok {
		return
	}
	delete(c.pods, uid)
	name := cp.info.pod.Spec.NodeName
	n := c.nodes[name].withoutPod(uid)
	if n.node == nil && len(n.pods) == 0 {
		delete(c.nodes, name)
		return
	}
	c.nodes[name] = n
}

// assume counts pod, whose spec.nodeName is the chosen node, on that node
// until addPod confirms it or removePod forgets it.
func (c *cache) assume(pod *corev1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pods[pod.UID]; ok {
		return fmt.Errorf("pod %s/%s is already in the cache", pod.Namespace, pod.Name)
	}
	info := newPodInfo(pod)
	c.pods[pod.UID] = &cachedPod{info: info, assumed: true}
	c.nodes[pod.Spec.NodeName] = c.nodeInfo(pod.Spec.NodeName).withPod(info)
	return nil
}

// forget drops pod if it is still only assumed: its binding failed.
func (c *cache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp, ok := c.pods[uid]; ok && cp.assumed {
		c.removeLocked(uid)
	}
}

// has reports whether the cache holds the pod, assumed or assigned.
func (c *cache) has(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pods[uid]
	return ok
}

// snapshot is the nodes that exist, in name order, as they are now.
func (c *cache) snapshot() []*nodeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*nodeInfo, len(c.names))
	for i, name := range c.names {
		out[i] = c.nodes[name]
	}
	return out
}
