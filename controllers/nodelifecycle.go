package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

const (
	// nodeEvictionPeriod is how often the zones' queues are tried,
	// kube's NodeEvictionPeriod.
	nodeEvictionPeriod = 100 * time.Millisecond
	// taintRetry is how soon a node whose taint could not be written is
	// tried again.
	taintRetry = 50 * time.Millisecond
	// labelExcludeDisruption keeps a node out of its zone's count.
	labelExcludeDisruption = "node.kubernetes.io/exclude-disruption"
)

// zoneState is what share of a zone's nodes are Ready.
type zoneState string

const (
	zoneInitial           zoneState = "Initial"
	zoneNormal            zoneState = "Normal"
	zoneFullDisruption    zoneState = "FullDisruption"
	zonePartialDisruption zoneState = "PartialDisruption"
)

// nodeHealth is what the monitor last saw of a node, and when it last saw
// a heartbeat, by its own clock: the node's clock is not trusted to be
// the controller's.
type nodeHealth struct {
	probe time.Time
	ready *corev1.NodeCondition
	renew *metav1.MicroTime
}

// nodeLifecycleController is kube's node lifecycle controller: it
// watches every node's heartbeats, turns the conditions of a node that
// stopped sending them Unknown, and taints the node
// node.kubernetes.io/unreachable (or not-ready) NoExecute, which the
// taint eviction controller then evicts its pods for. The NoExecute
// taints go on through one rate-limited queue per zone, and stop when
// every zone is down (the fault is then more likely the control
// plane's than the nodes'). It also taints nodes NoSchedule by their
// conditions, as kube does, and marks the pods of a node that stopped
// being Ready not ready.
//
// Left out of kube's: the reconciliation of the beta OS and arch
// labels, and its metrics.
type nodeLifecycleController struct {
	client     kubernetes.Interface
	nodes      corelisters.NodeLister
	leases     coordlisters.LeaseLister
	podsOnNode func(node string) ([]*corev1.Pod, error)
	cfg        NodeLifecycleConfig
	now        func() time.Time
	recorder   record.EventRecorder
	logger     *slog.Logger

	// health, zoneStates and podsToMark are the monitor's, one
	// goroutine's: health by node name; podsToMark are the nodes whose
	// pods are still to be marked not ready.
	health     map[string]*nodeHealth
	zoneStates map[string]zoneState
	podsToMark map[string]bool

	// tainters, by zone, is guarded by mu; zones are added, never
	// removed, as kube's.
	mu       sync.Mutex
	tainters map[string]*taintQueue

	// noSchedule syncs each node's NoSchedule taints with its
	// conditions.
	noSchedule *worker
}

func newNodeLifecycleController(c *controllerContext) (runner, error) {
	cfg := c.nodeLifecycle.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	nodes := c.informers.Core().V1().Nodes()
	leases := c.informers.Coordination().V1().Leases()
	pods := c.informers.Core().V1().Pods()
	podsOnNode, err := podsByNode(pods.Informer())
	if err != nil {
		return nil, err
	}
	broadcaster := record.NewBroadcaster()
	nc := &nodeLifecycleController{
		client:     c.client,
		nodes:      nodes.Lister(),
		leases:     leases.Lister(),
		podsOnNode: podsOnNode,
		cfg:        cfg,
		now:        time.Now,
		recorder:   broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "node-controller"}),
		logger:     c.logger.With("controller", "nodelifecycle"),
		health:     map[string]*nodeHealth{},
		zoneStates: map[string]zoneState{},
		podsToMark: map[string]bool{},
		tainters:   map[string]*taintQueue{},
	}
	nc.noSchedule = newWorker("nodelifecycle", c.logger, nc.syncNoSchedule)
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    nc.noSchedule.enqueue,
		UpdateFunc: func(_, obj any) { nc.noSchedule.enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	synced := []cache.InformerSynced{nodes.Informer().HasSynced, leases.Informer().HasSynced, pods.Informer().HasSynced}
	return func(ctx context.Context, workers int) {
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
		defer broadcaster.Shutdown()
		if !cache.WaitForNamedCacheSync("nodelifecycle", ctx.Done(), synced...) {
			return
		}
		var wg sync.WaitGroup
		wg.Go(func() { nc.noSchedule.run(ctx, workers) })
		wg.Go(func() { wait.UntilWithContext(ctx, nc.taintPass, nodeEvictionPeriod) })
		wg.Go(func() { wait.UntilWithContext(ctx, nc.monitor, nc.cfg.NodeMonitorPeriod) })
		wg.Wait()
	}, nil
}

// monitor is one pass over every node, in this order: its health is
// brought up to date (its conditions turned Unknown when its heartbeats
// stopped), its NoExecute taint is queued or removed by the Ready
// condition seen before the pass, its pods are marked not ready if it
// stopped being Ready, and last the zones' rates are set by what share
// of their nodes are Ready.
func (nc *nodeLifecycleController) monitor(ctx context.Context) {
	nodes, err := nc.nodes.List(labels.Everything())
	if err != nil {
		nc.logger.Error("list nodes", "err", err)
		return
	}
	present := map[string]bool{}
	for _, n := range nodes {
		present[n.Name] = true
	}
	for name := range nc.health {
		if !present[name] {
			delete(nc.health, name)
			delete(nc.podsToMark, name)
		}
	}
	readyByZone := map[string][]*corev1.NodeCondition{}
	for _, n := range nodes {
		node := n.DeepCopy()
		zone := zoneOf(node)
		nc.ensureZone(zone)
		if _, known := nc.health[node.Name]; !known {
			// As kube: a node first seen starts untainted, its grace
			// counted from now.
			if err := nc.markReachable(ctx, node); err != nil {
				logRetry(nc.logger, "remove the NoExecute taints of a new node", err, "node", node.Name)
			}
		}
		observed, current, err := nc.updateHealth(ctx, node)
		if err != nil {
			// Its taints wait for the next pass, as kube's.
			logRetry(nc.logger, "update node health", err, "node", node.Name)
			continue
		}
		if _, excluded := node.Labels[labelExcludeDisruption]; !excluded {
			readyByZone[zone] = append(readyByZone[zone], current)
		}
		if current == nil {
			continue
		}
		nc.taintByReadiness(ctx, node, observed)
		if current.Status == corev1.ConditionTrue || (observed.Status != corev1.ConditionTrue && !nc.podsToMark[node.Name]) {
			delete(nc.podsToMark, node.Name)
			continue
		}
		if observed.Status == corev1.ConditionTrue {
			nc.logger.Info("node is not ready", "node", node.Name, "ready", current.Status)
			nc.recorder.Eventf(&corev1.ObjectReference{Kind: "Node", Name: node.Name, UID: node.UID}, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", node.Name)
		}
		if err := nc.markPodsNotReady(ctx, node.Name); err != nil {
			logRetry(nc.logger, "mark the pods of a node not ready", err, "node", node.Name)
			nc.podsToMark[node.Name] = true
			continue
		}
		delete(nc.podsToMark, node.Name)
	}
	nc.handleDisruption(ctx, readyByZone, nodes)
}

// updateHealth takes in a node's heartbeats and, once none came for the
// grace period, turns its conditions Unknown. It returns the Ready
// condition as it was (observed) and as it is now (current, nil for a
// node that never posted one and is still within its startup grace), as
// kube's tryUpdateNodeHealth.
func (nc *nodeLifecycleController) updateHealth(ctx context.Context, node *corev1.Node) (corev1.NodeCondition, *corev1.NodeCondition, error) {
	now := nc.now()
	h := nc.health[node.Name]
	current := nodeCondition(&node.Status, corev1.NodeReady)
	grace := nc.cfg.NodeMonitorGracePeriod
	var observed corev1.NodeCondition
	if current == nil {
		observed = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: node.CreationTimestamp}
		grace = nc.cfg.NodeStartupGracePeriod
		if h == nil {
			h = &nodeHealth{probe: node.CreationTimestamp.Time}
		}
	} else {
		observed = *current
	}
	switch {
	case h == nil:
		h = &nodeHealth{probe: now}
	case (h.ready == nil) != (current == nil):
		h.probe = now
	case h.ready != nil && !h.ready.LastHeartbeatTime.Equal(&current.LastHeartbeatTime):
		h.probe = now
	}
	h.ready = current.DeepCopy()
	// A renewed Lease is a heartbeat too, the one a node sends most
	// often.
	if l, err := nc.leases.Leases(corev1.NamespaceNodeLease).Get(node.Name); err == nil && l.Spec.RenewTime != nil &&
		(h.renew == nil || h.renew.Before(l.Spec.RenewTime)) {
		h.renew = l.Spec.RenewTime.DeepCopy()
		h.probe = now
	}
	nc.health[node.Name] = h
	if !now.After(h.probe.Add(grace)) {
		return observed, current, nil
	}
	setConditionsUnknown(node, metav1.NewTime(now))
	current = nodeCondition(&node.Status, corev1.NodeReady)
	if equality.Semantic.DeepEqual(current, &observed) {
		return observed, current, nil
	}
	updated, err := nc.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		return observed, current, err
	}
	nc.logger.Info("node stopped posting its status", "node", node.Name, "since", h.probe)
	// The node as written, so that its taints are written over this
	// version, not the one before.
	*node = *updated
	current = nodeCondition(&node.Status, corev1.NodeReady)
	h.ready = current.DeepCopy()
	return observed, current, nil
}

// setConditionsUnknown turns the conditions the kubelet posts Unknown,
// with kube's reasons and messages; NetworkUnavailable, which the
// control plane owns, is left alone.
func setConditionsUnknown(node *corev1.Node, now metav1.Time) {
	for _, t := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		c := nodeCondition(&node.Status, t)
		switch {
		case c == nil:
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
				Type: t, Status: corev1.ConditionUnknown,
				Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.",
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: now,
			})
		case c.Status != corev1.ConditionUnknown:
			c.Status = corev1.ConditionUnknown
			c.Reason = "NodeStatusUnknown"
			c.Message = "Kubelet stopped posting node status."
			c.LastTransitionTime = now
		}
	}
}

// nodeCondition is the condition of type t, in place; nil when there is
// none.
func nodeCondition(s *corev1.NodeStatus, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// taintByReadiness acts on the Ready condition seen before this pass, as
// kube's processTaintBaseEviction: a node not Ready is queued for its
// NoExecute taint, or has it swapped at once if it bears the other one;
// a Ready node loses both.
func (nc *nodeLifecycleController) taintByReadiness(ctx context.Context, node *corev1.Node, observed corev1.NodeCondition) {
	var want, other corev1.Taint
	switch observed.Status {
	case corev1.ConditionTrue:
		if err := nc.markReachable(ctx, node); err != nil {
			logRetry(nc.logger, "remove the NoExecute taints of a ready node", err, "node", node.Name)
		}
		return
	case corev1.ConditionFalse:
		want, other = notReadyTaint, unreachableTaint
	default:
		want, other = unreachableTaint, notReadyTaint
	}
	if hasTaint(node.Spec.Taints, other) {
		// Already tainted: the rate was paid.
		if err := nc.swapTaints(ctx, node, []corev1.Taint{want}, []corev1.Taint{other}); err != nil {
			logRetry(nc.logger, "swap the NoExecute taints of a node", err, "node", node.Name)
		}
		return
	}
	if hasTaint(node.Spec.Taints, want) {
		return
	}
	nc.mu.Lock()
	q := nc.tainters[zoneOf(node)]
	nc.mu.Unlock()
	if q.add(node.Name, nc.now()) {
		nc.logger.Info("node queued for a NoExecute taint", "node", node.Name, "taint", want.Key)
	}
}

// markReachable removes both NoExecute taints and takes the node out of
// its zone's queue.
func (nc *nodeLifecycleController) markReachable(ctx context.Context, node *corev1.Node) error {
	if err := nc.swapTaints(ctx, node, nil, []corev1.Taint{unreachableTaint, notReadyTaint}); err != nil {
		return err
	}
	nc.mu.Lock()
	q := nc.tainters[zoneOf(node)]
	nc.mu.Unlock()
	if q != nil {
		q.remove(node.Name)
	}
	return nil
}

// ensureZone gives a zone first seen its queue, at the healthy rate.
func (nc *nodeLifecycleController) ensureZone(zone string) {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	if _, ok := nc.tainters[zone]; ok {
		return
	}
	nc.tainters[zone] = newTaintQueue(nc.cfg.NodeEvictionRate)
}

// taintPass takes from each zone's queue the nodes its rate allows and
// taints each by its Ready condition now: a node Ready again is let go.
func (nc *nodeLifecycleController) taintPass(ctx context.Context) {
	nc.mu.Lock()
	queues := make([]*taintQueue, 0, len(nc.tainters))
	for _, q := range nc.tainters {
		queues = append(queues, q)
	}
	nc.mu.Unlock()
	for _, q := range queues {
		for {
			name, ok := q.next(nc.now())
			if !ok {
				break
			}
			if !nc.taintNoExecute(ctx, name) {
				q.add(name, nc.now().Add(taintRetry))
			}
		}
	}
}

// taintNoExecute gives a node the NoExecute taint of its Ready
// condition, and reports whether it is done with.
func (nc *nodeLifecycleController) taintNoExecute(ctx context.Context, name string) bool {
	node, err := nc.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		return false
	}
	ready := nodeCondition(&node.Status, corev1.NodeReady)
	if ready == nil {
		return false
	}
	var add, remove corev1.Taint
	switch ready.Status {
	case corev1.ConditionFalse:
		add, remove = notReadyTaint, unreachableTaint
	case corev1.ConditionUnknown:
		add, remove = unreachableTaint, notReadyTaint
	default:
		return true
	}
	if err := nc.swapTaints(ctx, node, []corev1.Taint{add}, []corev1.Taint{remove}); err != nil {
		logRetry(nc.logger, "taint a node", err, "node", name, "taint", add.Key)
		return false
	}
	nc.logger.Info("node tainted", "node", name, "taint", add.Key+":"+string(add.Effect))
	return true
}

// handleDisruption sets each zone's rate by its state, as kube's: a
// healthy zone at NodeEvictionRate; a partly disrupted one slower, or
// not at all if small; and when every zone is wholly down, none at all,
// every NoExecute taint this controller gave removed, until a node is
// Ready again.
func (nc *nodeLifecycleController) handleDisruption(ctx context.Context, readyByZone map[string][]*corev1.NodeCondition, nodes []*corev1.Node) {
	newStates := map[string]zoneState{}
	allFull := true
	for zone, conds := range readyByZone {
		_, s := zoneStateOf(conds, nc.cfg.UnhealthyZoneThreshold)
		if s != zoneFullDisruption {
			allFull = false
		}
		newStates[zone] = s
		if _, ok := nc.zoneStates[zone]; !ok {
			nc.zoneStates[zone] = zoneInitial
		}
	}
	wasAllFull := true
	for zone, s := range nc.zoneStates {
		if _, ok := readyByZone[zone]; !ok {
			delete(nc.zoneStates, zone)
			continue
		}
		if s != zoneFullDisruption {
			wasAllFull = false
		}
	}
	switch {
	case allFull && wasAllFull:
		return
	case allFull:
		nc.logger.Warn("no node is ready: NoExecute taints stop until one is")
		for _, n := range nodes {
			if err := nc.markReachable(ctx, n); err != nil {
				logRetry(nc.logger, "remove the NoExecute taints of a node", err, "node", n.Name)
			}
		}
		for zone := range nc.zoneStates {
			nc.setRate(zone, 0)
			nc.zoneStates[zone] = zoneFullDisruption
		}
	case wasAllFull:
		nc.logger.Info("a node is ready again: NoExecute taints resume")
		// Every node's grace starts over: their heartbeats were not
		// seen while the control plane was cut off from them.
		now := nc.now()
		for _, h := range nc.health {
			h.probe = now
		}
		for zone := range nc.zoneStates {
			nc.setZoneRate(zone, len(readyByZone[zone]), newStates[zone])
			nc.zoneStates[zone] = newStates[zone]
		}
	default:
		for zone, s := range nc.zoneStates {
			if s == newStates[zone] {
				continue
			}
			nc.logger.Info("zone changed state", "zone", zone, "state", newStates[zone])
			nc.setZoneRate(zone, len(readyByZone[zone]), newStates[zone])
			nc.zoneStates[zone] = newStates[zone]
		}
	}
}

func (nc *nodeLifecycleController) setZoneRate(zone string, size int, s zoneState) {
	switch s {
	case zoneNormal, zoneFullDisruption:
		nc.setRate(zone, nc.cfg.NodeEvictionRate)
	case zonePartialDisruption:
		if size > nc.cfg.LargeClusterSizeThreshold {
			nc.setRate(zone, nc.cfg.SecondaryNodeEvictionRate)
		} else {
			nc.setRate(zone, 0)
		}
	}
}

func (nc *nodeLifecycleController) setRate(zone string, qps float32) {
	nc.mu.Lock()
	q := nc.tainters[zone]
	nc.mu.Unlock()
	if q != nil {
		q.setRate(qps)
	}
}

// zoneStateOf is how many of a zone's nodes are not Ready, and the
// zone's state: wholly disrupted with none Ready, partly with more than
// two and at least threshold of them not Ready, normal otherwise.
func zoneStateOf(ready []*corev1.NodeCondition, threshold float32) (int, zoneState) {
	var up, down int
	for _, c := range ready {
		if c != nil && c.Status == corev1.ConditionTrue {
			up++
		} else {
			down++
		}
	}
	switch {
	case up == 0 && down > 0:
		return down, zoneFullDisruption
	case down > 2 && float32(down)/float32(down+up) >= threshold:
		return down, zonePartialDisruption
	default:
		return down, zoneNormal
	}
}

// zoneOf is a node's zone: its region and zone labels, "" for neither.
func zoneOf(node *corev1.Node) string {
	region, zone := node.Labels[corev1.LabelTopologyRegion], node.Labels[corev1.LabelTopologyZone]
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}

// markPodsNotReady turns the Ready condition of the node's pods False,
// as kube's MarkPodsNotReady: Services stop sending them traffic.
func (nc *nodeLifecycleController) markPodsNotReady(ctx context.Context, node string) error {
	pods, err := nc.podsOnNode(node)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range pods {
		i := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady })
		if i < 0 || p.Status.Conditions[i].Status == corev1.ConditionFalse {
			continue
		}
		pod := p.DeepCopy()
		pod.Status.Conditions[i].Status = corev1.ConditionFalse
		pod.Status.Conditions[i].LastTransitionTime = metav1.NewTime(nc.now())
		if _, err := nc.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err))
			}
			continue
		}
		nc.recorder.Event(pod, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	}
	return errors.Join(errs...)
}

// syncNoSchedule gives a node the NoSchedule taints of its conditions
// and of spec.unschedulable, and takes away those it no longer has, as
// kube's doNoScheduleTaintingPass: the scheduler places nothing new on a
// node that is not ready, unreachable or under pressure.
func (nc *nodeLifecycleController) syncNoSchedule(ctx context.Context, name string) error {
	node, err := nc.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var want []corev1.Taint
	for _, c := range node.Status.Conditions {
		if key, ok := conditionTaintKey(c.Type, c.Status); ok {
			want = append(want, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	if node.Spec.Unschedulable {
		want = append(want, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	var stale []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule && isNoScheduleConditionKey(t.Key) && !hasTaint(want, t) {
			stale = append(stale, t)
		}
	}
	return nc.swapTaints(ctx, node, want, stale)
}

// swapTaints writes a node's taints with add added and remove removed.
// The patch carries the resourceVersion it was computed from, so that
// it never undoes a taint written since; on a conflict it is computed
// again from the node as it is now.
func (nc *nodeLifecycleController) swapTaints(ctx context.Context, node *corev1.Node, add, remove []corev1.Taint) error {
	for attempt := 1; ; attempt++ {
		taints, changed := swappedTaints(node.Spec.Taints, add, remove, nc.now())
		if !changed {
			return nil
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": node.ResourceVersion},
			"spec":     map[string]any{"taints": taints},
		})
		if err != nil {
			return err
		}
		_, err = nc.client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if !apierrors.IsConflict(err) || attempt == 3 {
			return err
		}
		if node, err = nc.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); err != nil {
			return err
		}
	}
}
