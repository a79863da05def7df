// Package scheduler is trustplane's scheduler: a client-go program that
// assigns pending pods to nodes as kube-scheduler's default profile does.
//
// It watches pods and nodes through informers. Pods that need a node wait
// in a queue ordered by priority; one at a time, each is filtered against
// the nodes (filters.go; pod affinity in interpodaffinity.go, spreading in
// topologyspread.go), the nodes that fit are scored (scores.go), and the
// best is chosen. Which filters and scores run, with what weights, is the
// profile (profile.go), kube's default one or as a
// KubeSchedulerConfiguration changes it (config.go). The pod is then assumed on that node in the cache
// (cache.go) before it is bound through pods/binding, so that the next
// pod's decision already counts it: two pods never overbook a node while
// a binding is in flight. A pod that fits nowhere gets a FailedScheduling
// event with kube's message (postfilter.go: what kube's preemption would
// find, though trustplane does not preempt), its PodScheduled condition
// set to False, and waits until an event that may make it fit (a node
// added or changed, a pod removed, or placed for a pod that waits for
// pods) moves it back, with a backoff between attempts (queue.go).
//
// Instances that share a cluster elect one leader through the Lease
// kube-system/kube-scheduler; only the leader schedules, with a cache
// built afresh each time it starts leading.
//
// It runs as system:kube-scheduler, within that identity's role
// (rbac.schedulerRole): it reads pods, nodes and namespaces (and
// Services, ReplicaSets and StatefulSets, for default spreading), binds pods,
// writes their status and its events and Lease, and reads no Secret. It
// talks to the API server only: it imports neither the server nor etcd
// (DESIGN.md, rule 1; cmd/trustplane's TestClientsReachNoServer).
package scheduler
