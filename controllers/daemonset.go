package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
)

// daemonSetKind is what a DaemonSet's pods and revisions name as their
// controller.
var daemonSetKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// daemonSetController runs one pod of each DaemonSet on every node that
// the set's pods fit, as kube's DaemonSetsController does. A sync of one
// DaemonSet:
//
//  1. finds or records the ControllerRevision of its template (shared
//     with the StatefulSet controller, revisions.go); pods carry its hash
//     in the controller-revision-hash label;
//  2. claims its pods (claimPods) and groups them by their node: the
//     node they are bound to, or the one their node affinity names
//     (created pods are pinned to their node by a required matchFields
//     on metadata.name, and placed by the scheduler);
//  3. unless writes of an earlier sync are still unobserved by the
//     informer (expectations), creates a pod on each node that should
//     run one and has none, deletes the pods of nodes that should not
//     keep them or that are gone, failed pods, and all but the oldest of
//     several on one node (manage); and if it had nothing of that to do,
//     rolls out the template (rollingUpdate);
//  4. writes the status.
//
// A node's eligibility is kube's: the pod's nodeSelector and required
// node affinity match it, and it has no NoSchedule or NoExecute taint
// the pod does not tolerate, with the tolerations kube gives daemon pods
// (daemonTolerations). A pod on a node that becomes ineligible by a
// NoSchedule taint alone keeps running, as on kube; one it no longer
// matches, or NoExecute tainted, is deleted.
//
// Like the ReplicaSet controller, it adopts the orphan pods its
// selector matches and releases those it no longer matches (claimPods).
type daemonSetController struct {
	client       kubernetes.Interface
	sets         appslisters.DaemonSetLister
	pods         corelisters.PodLister
	nodes        corelisters.NodeLister
	revisions    appslisters.ControllerRevisionLister
	expectations *expectations
	// failedBackoff paces the replacement of failed pods, per set and
	// node.
	failedBackoff *flowcontrol.Backoff
	w             *worker
	logger        *slog.Logger
	now           func() time.Time
}

func newDaemonSetController(c *controllerContext) (runner, error) {
	setInformer := c.informers.Apps().V1().DaemonSets()
	podInformer := c.informers.Core().V1().Pods()
	nodeInformer := c.informers.Core().V1().Nodes()
	revInformer := c.informers.Apps().V1().ControllerRevisions()
	dsc := &daemonSetController{
		client:       c.client,
		sets:         setInformer.Lister(),
		pods:         podInformer.Lister(),
		nodes:        nodeInformer.Lister(),
		revisions:    revInformer.Lister(),
		expectations: newExpectations(time.Now),
		// kube's: from a second to 15 minutes.
		failedBackoff: flowcontrol.NewBackOff(time.Second, 15*time.Minute),
		logger:        c.logger.With("controller", "daemonset"),
		now:           time.Now,
	}
	dsc.w = newWorker("daemonset", c.logger, dsc.sync)
	if _, err := setInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    dsc.w.enqueue,
		UpdateFunc: func(_, cur any) { dsc.w.enqueue(cur) },
		DeleteFunc: dsc.w.enqueue, // the sync finds it gone and forgets it
	}); err != nil {
		return nil, err
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			pod := obj.(*corev1.Pod)
			if pod.DeletionTimestamp != nil {
				dsc.podDeleted(pod)
				return
			}
			if ds := dsc.owner(pod); ds != nil {
				dsc.expectations.creationObserved(key(ds))
				dsc.w.enqueue(ds)
				return
			}
			dsc.enqueueAdopters(pod)
		},
		UpdateFunc: func(_, cur any) {
			pod := cur.(*corev1.Pod)
			if pod.DeletionTimestamp != nil {
				// Observed as deleted now, not once its grace period is
				// over: the node's count must not wait for it.
				dsc.podDeleted(pod)
				return
			}
			if ds := dsc.owner(pod); ds != nil {
				dsc.w.enqueue(ds)
				return
			}
			dsc.enqueueAdopters(pod)
		},
		DeleteFunc: dsc.podDeleted,
	}); err != nil {
		return nil, err
	}
	// A node added, gone or changed may change where every set runs.
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { dsc.enqueueAll() },
		UpdateFunc: func(oldObj, curObj any) {
			old, cur := oldObj.(*corev1.Node), curObj.(*corev1.Node)
			if !labels.Equals(old.Labels, cur.Labels) || !equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) {
				dsc.enqueueAll()
			}
		},
		DeleteFunc: func(any) { dsc.enqueueAll() },
	}); err != nil {
		return nil, err
	}
	synced := []cache.InformerSynced{setInformer.Informer().HasSynced, podInformer.Informer().HasSynced,
		nodeInformer.Informer().HasSynced, revInformer.Informer().HasSynced}
	return func(ctx context.Context, workers int) {
		// Forget the backoff of nodes whose pods stopped failing.
		go wait.Until(dsc.failedBackoff.GC, time.Minute, ctx.Done())
		dsc.w.run(ctx, workers, synced...)
	}, nil
}

// owner is the DaemonSet that controls pod, if the cache holds it with
// the UID the pod names.
func (dsc *daemonSetController) owner(pod *corev1.Pod) *appsv1.DaemonSet {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != daemonSetKind.Kind || ref.APIVersion != daemonSetKind.GroupVersion().String() {
		return nil
	}
	ds, err := dsc.sets.DaemonSets(pod.Namespace).Get(ref.Name)
	if err != nil || ds.UID != ref.UID {
		return nil
	}
	return ds
}

func (dsc *daemonSetController) podDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if ds := dsc.owner(pod); ds != nil {
		dsc.expectations.deletionObserved(key(ds), key(pod))
		dsc.w.enqueue(ds)
	}
}

// enqueueAdopters enqueues, for an orphan pod, the sets of its
// namespace whose selector matches it, which adopt it.
func (dsc *daemonSetController) enqueueAdopters(pod *corev1.Pod) {
	if metav1.GetControllerOf(pod) != nil {
		return
	}
	all, err := dsc.sets.DaemonSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range all {
		sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			dsc.w.enqueue(ds)
		}
	}
}

func (dsc *daemonSetController) enqueueAll() {
	all, err := dsc.sets.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range all {
		dsc.w.enqueue(ds)
	}
}

func (dsc *daemonSetController) sync(ctx context.Context, k string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(k)
	if err != nil {
		return nil
	}
	ds, err := dsc.sets.DaemonSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// Its pods and revisions go with it, by the garbage collector.
		dsc.expectations.forget(k)
		return nil
	}
	if err != nil {
		return err
	}
	if ds.DeletionTimestamp != nil {
		return nil
	}
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || selector.Empty() {
		dsc.logger.Warn("daemonset: invalid selector; not syncing", "daemonset", k, "err", err)
		return nil
	}
	revs, err := ownedRevisions(dsc.revisions, ds)
	if err != nil {
		return err
	}
	owner := revisionOwner{
		obj:            ds,
		kind:           daemonSetKind,
		template:       &ds.Spec.Template,
		collisionCount: ds.Status.CollisionCount,
		historyLimit:   ds.Spec.RevisionHistoryLimit,
		saveCollision: func(ctx context.Context, n int32) error {
			next := ds.DeepCopy()
			next.Status.CollisionCount = &n
			_, err := dsc.client.AppsV1().DaemonSets(namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
			return err
		},
	}
	_, update, err := revisionsOf(ctx, dsc.client, owner, revs)
	if err != nil {
		return err
	}
	// Every pod of the namespace: one it controls that the selector no
	// longer matches is released.
	all, err := dsc.pods.Pods(namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	claim := podClaim{client: dsc.client, owner: ds, kind: daemonSetKind, get: func(ctx context.Context) (metav1.Object, error) {
		return dsc.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	}}
	owned, err := claim.claimPods(ctx, selector, all)
	if err != nil {
		return err
	}
	nodes, err := dsc.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	byNode := map[string][]*corev1.Pod{}
	for _, p := range owned {
		if n := targetNode(p); n != "" {
			byNode[n] = append(byNode[n], p)
		}
	}
	for _, pods := range byNode {
		// The one kept of several, and the one the status counts, first:
		// kube's order, bound pods before those not yet scheduled, then
		// the oldest. Creation times are in seconds: within one, by name.
		slices.SortFunc(pods, func(a, b *corev1.Pod) int {
			if ab, bb := a.Spec.NodeName != "", b.Spec.NodeName != ""; ab != bb {
				if ab {
					return -1
				}
				return 1
			}
			if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
	}
	d := &daemonSetSync{dsc: dsc, ds: ds, hash: update.Labels[revisionHashLabel], nodes: nodes, byNode: byNode, now: dsc.now()}
	var syncErr error
	if dsc.expectations.satisfied(k) {
		syncErr = d.manage(ctx, k)
	}
	if err := dsc.writeStatus(ctx, ds, d.status()); err != nil {
		syncErr = errors.Join(syncErr, err)
	}
	if d.waitFor > 0 {
		dsc.w.queue.AddAfter(k, d.waitFor)
	}
	if syncErr != nil {
		return syncErr
	}
	// Pods carry their revision's hash, not its name.
	inUse := map[string]bool{}
	for _, pods := range byNode {
		for _, p := range pods {
			inUse[podRevision(p)] = true
		}
	}
	live := map[string]bool{update.Name: true}
	for _, r := range revs {
		if inUse[r.Labels[revisionHashLabel]] {
			live[r.Name] = true
		}
	}
	return truncateHistory(ctx, dsc.client, owner, revs, live)
}

// writeStatus writes status, if it is new, to ds.
func (dsc *daemonSetController) writeStatus(ctx context.Context, ds *appsv1.DaemonSet, status appsv1.DaemonSetStatus) error {
	if equality.Semantic.DeepEqual(ds.Status, status) {
		return nil
	}
	sets := dsc.client.AppsV1().DaemonSets(ds.Namespace)
	return writeSetStatus(ctx, "daemonset", ds, func(d *appsv1.DaemonSet) *appsv1.DaemonSet {
		next := d.DeepCopy()
		next.Status = status
		next.Status.CollisionCount = d.Status.CollisionCount
		return next
	}, sets.Get, sets.UpdateStatus)
}

// daemonSetSync is one sync's work on one set's pods.
type daemonSetSync struct {
	dsc *daemonSetController
	ds  *appsv1.DaemonSet
	// hash is the current template's, as pods carry it.
	hash   string
	nodes  []*corev1.Node
	byNode map[string][]*corev1.Pod // the set's pods by node, oldest first
	now    time.Time
	// waitFor, when set, is when a pod becomes available with time.
	waitFor time.Duration
	// fit memoizes daemonPodFits by node name.
	fit map[string][2]bool
}

// fits is daemonPodFits of node, computed once per sync.
func (d *daemonSetSync) fits(node *corev1.Node) (shouldRun, shouldContinue bool) {
	if f, ok := d.fit[node.Name]; ok {
		return f[0], f[1]
	}
	shouldRun, shouldContinue = daemonPodFits(node, d.ds)
	if d.fit == nil {
		d.fit = map[string][2]bool{}
	}
	d.fit[node.Name] = [2]bool{shouldRun, shouldContinue}
	return shouldRun, shouldContinue
}

// requeueAfter asks for the sync to come back after wait, or sooner if
// already asked.
func (d *daemonSetSync) requeueAfter(wait time.Duration) {
	if d.waitFor == 0 || wait < d.waitFor {
		d.waitFor = max(wait, time.Second)
	}
}

// available reports whether p has been ready for minReadySeconds; when
// it is ready but not yet for long enough, the sync is asked to come
// back then.
func (d *daemonSetSync) available(p *corev1.Pod) bool {
	if podTerminating(p) || !podReady(p) {
		return false
	}
	mrs := d.ds.Spec.MinReadySeconds
	if podAvailable(p, mrs, d.now) {
		return true
	}
	c := podReadyCondition(p)
	d.requeueAfter(c.LastTransitionTime.Add(time.Duration(mrs)*time.Second + time.Second).Sub(d.now))
	return false
}

// manage creates and deletes pods so that each node that should run
// one has one, and no other node any; then, if that took nothing,
// rolls the template out.
func (d *daemonSetSync) manage(ctx context.Context, k string) error {
	var create []string
	var remove []*corev1.Pod
	known := map[string]bool{}
	for _, node := range d.nodes {
		known[node.Name] = true
		shouldRun, shouldContinue := d.fits(node)
		pods := d.byNode[node.Name]
		switch {
		case shouldRun && len(pods) == 0:
			create = append(create, node.Name)
		case shouldContinue:
			var running []*corev1.Pod
			for _, p := range pods {
				switch {
				case podTerminating(p):
				case podFinished(p):
					// Replaced once gone, by a later sync; but a node
					// whose pods keep failing (a kubelet that refuses
					// them) gets them at a backing-off pace, kube's.
					backoffKey := k + "/" + node.Name
					if d.dsc.failedBackoff.IsInBackOffSinceUpdate(backoffKey, d.now) {
						d.requeueAfter(d.dsc.failedBackoff.Get(backoffKey))
						continue
					}
					d.dsc.failedBackoff.Next(backoffKey, d.now)
					remove = append(remove, p)
				default:
					running = append(running, p)
				}
			}
			remove = append(remove, d.extraPods(running)...)
		default:
			for _, p := range pods {
				if !podTerminating(p) {
					remove = append(remove, p)
				}
			}
		}
	}
	// Pods of nodes that are gone: there is no node agent to stop them,
	// nor a pod garbage collector here to remove them.
	for name, pods := range d.byNode {
		if known[name] {
			continue
		}
		for _, p := range pods {
			if !podTerminating(p) {
				remove = append(remove, p)
			}
		}
	}
	if len(create) == 0 && len(remove) == 0 {
		if d.ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
			// OnDelete: a pod takes the new template when someone
			// deletes it.
			return nil
		}
		if create, remove = d.rollingUpdate(); len(create) == 0 && len(remove) == 0 {
			return nil
		}
	}
	create = create[:min(len(create), burstReplicas)]
	remove = remove[:min(len(remove), burstReplicas)]
	removeKeys := make([]string, len(remove))
	for i, p := range remove {
		removeKeys[i] = key(p)
	}
	// Before the writes: the informer may see them before this returns.
	d.dsc.expectations.expect(k, len(create), removeKeys)
	return errors.Join(d.deletePods(ctx, k, remove), d.createPods(ctx, k, create))
}

// rollingUpdate is the nodes to create a pod on and the old pods to
// delete now under RollingUpdate. With maxSurge, see surge. Without, it
// deletes old pods so that no more than maxUnavailable of the nodes that
// run the set are without an available pod (each gets its new pod from
// manage once the old is gone): kube's rollingUpdate, but for one thing. kube replaces an old pod that is not available without
// counting its node as unavailable, which lets one more node than
// maxUnavailable go without while it replaces both; here that node
// counts.
func (d *daemonSetSync) rollingUpdate() (create []string, remove []*corev1.Pod) {
	maxSurge, maxUnavailable := d.budget()
	if maxSurge > 0 {
		return d.surge(maxSurge)
	}
	unavailable := 0
	var broken, candidates []*corev1.Pod
	for _, node := range d.nodes {
		shouldRun, shouldContinue := d.fits(node)
		if !shouldContinue {
			continue
		}
		var live []*corev1.Pod
		terminating := false
		for _, p := range d.byNode[node.Name] {
			if podTerminating(p) {
				terminating = true
				continue
			}
			live = append(live, p)
		}
		switch {
		case len(live) == 0:
			if shouldRun || terminating {
				unavailable++
			}
		case len(live) > 1:
			// manage deletes the extra ones first.
			unavailable++
		case podRevision(live[0]) == d.hash:
			if !d.available(live[0]) {
				unavailable++
			}
		case !d.available(live[0]):
			unavailable++
			broken = append(broken, live[0])
		default:
			candidates = append(candidates, live[0])
		}
	}
	return nil, append(broken, candidates[:min(len(candidates), max(maxUnavailable-unavailable, 0))]...)
}

// surge is the rolling update with maxSurge, kube's: a node's new pod is
// created beside its old one, at most maxSurge nodes at a time (at once
// where the old pod is not available), and the old pod deleted once the
// new one is available. maxUnavailable does not apply: no node loses
// its available pod before it has another.
func (d *daemonSetSync) surge(maxSurge int) (create []string, remove []*corev1.Pod) {
	surging := 0
	var broken, candidates []string
	for _, node := range d.nodes {
		if _, shouldContinue := d.fits(node); !shouldContinue {
			continue
		}
		var oldPod, newPod *corev1.Pod
		extra := false
		for _, p := range d.byNode[node.Name] {
			switch {
			case podTerminating(p):
			case podRevision(p) == d.hash && newPod == nil:
				newPod = p
			case podRevision(p) != d.hash && oldPod == nil:
				oldPod = p
			default:
				extra = true
			}
		}
		switch {
		case extra:
			// manage deletes the extra ones first.
			surging++
		case oldPod == nil:
			// Updated, or manage creates its pod.
		case newPod == nil && !d.available(oldPod):
			broken = append(broken, node.Name)
		case newPod == nil:
			candidates = append(candidates, node.Name)
		case !d.available(newPod):
			surging++
		default:
			remove = append(remove, oldPod)
		}
	}
	return append(broken, candidates[:min(len(candidates), max(maxSurge-surging, 0))]...), remove
}

// extraPods are the pods of running, one node's (in the order sync
// sorts them), that manage deletes. Without surge, all but the first.
// With it, a node may hold one pod of the current template and one of
// an old one, as surge makes it: the first of each is kept, and the old
// one deleted too once it is not ready or the new one is available.
func (d *daemonSetSync) extraPods(running []*corev1.Pod) []*corev1.Pod {
	if len(running) <= 1 {
		return nil
	}
	if maxSurge, _ := d.budget(); maxSurge == 0 || d.ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return running[1:]
	}
	var extra []*corev1.Pod
	var newPod, oldPod *corev1.Pod
	for _, p := range running {
		switch {
		case podRevision(p) == d.hash && newPod == nil:
			newPod = p
		case podRevision(p) != d.hash && oldPod == nil:
			oldPod = p
		default:
			extra = append(extra, p)
		}
	}
	if newPod != nil && oldPod != nil && (!podReady(oldPod) || d.available(newPod)) {
		extra = append(extra, oldPod)
	}
	return extra
}

// budget is spec.updateStrategy.rollingUpdate's maxSurge and
// maxUnavailable of the nodes that should run the set, percentages
// rounded up; when both are 0, maxUnavailable is 1, as kube's.
func (d *daemonSetSync) budget() (maxSurge, maxUnavailable int) {
	desired := 0
	for _, node := range d.nodes {
		if shouldRun, _ := d.fits(node); shouldRun {
			desired++
		}
	}
	surge, unavailable := intstr.FromInt32(0), intstr.FromInt32(1)
	if ru := d.ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			surge = *ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			unavailable = *ru.MaxUnavailable
		}
	}
	// Validation refuses what does not scale; read as 0, then 1 below.
	maxSurge, _ = intstr.GetScaledValueFromIntOrPercent(&surge, desired, true)
	maxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(&unavailable, desired, true)
	maxSurge, maxUnavailable = max(maxSurge, 0), max(maxUnavailable, 0)
	if maxSurge == 0 && maxUnavailable == 0 {
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable
}

// createPods creates a pod on each node named, in batches of 1, 2,
// 4, ... that stop at the first refusal; the creations not made are
// not expected.
func (d *daemonSetSync) createPods(ctx context.Context, k string, nodes []string) error {
	var next atomic.Int32
	done, unknown, err := slowStartBatch(len(nodes), func() error {
		pod := d.newPod(nodes[next.Add(1)-1])
		_, err := d.dsc.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	for range len(nodes) - done - unknown {
		d.dsc.expectations.creationObserved(k)
	}
	if err != nil {
		return fmt.Errorf("create pods of daemonset %s: %w", key(d.ds), err)
	}
	return nil
}

// deletePods deletes pods, each the pod the sync judged and not one
// re-created under its name since (the UID precondition).
func (d *daemonSetSync) deletePods(ctx context.Context, k string, pods []*corev1.Pod) error {
	var errs []error
	for _, p := range pods {
		err := d.dsc.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
		if err == nil || outcomeUnknown(err) {
			continue
		}
		// Not deleted by this call: there is no deletion to wait for.
		d.dsc.expectations.deletionObserved(k, key(p))
		if !apierrors.IsNotFound(err) {
			// A conflict is retried too: the server answers one when
			// the pod is written meanwhile (bound, its status set),
			// not only when its UID differs, which the informer
			// shows by the retry.
			errs = append(errs, fmt.Errorf("delete pod %s of daemonset %s: %w", p.Name, key(d.ds), err))
		}
	}
	return errors.Join(errs...)
}

// newPod is the set's pod for node: its template, with the daemon
// tolerations and a required node affinity to node alone, which the
// scheduler honours.
func (d *daemonSetSync) newPod(node string) *corev1.Pod {
	tmpl := d.ds.Spec.Template.DeepCopy()
	lbls := map[string]string{}
	for k, v := range tmpl.Labels {
		lbls[k] = v
	}
	lbls[appsv1.ControllerRevisionHashLabelKey] = d.hash
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    d.ds.Name + "-",
			Namespace:       d.ds.Namespace,
			Labels:          lbls,
			Annotations:     tmpl.Annotations,
			Finalizers:      tmpl.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d.ds, daemonSetKind)},
		},
		Spec: tmpl.Spec,
	}
	addDaemonTolerations(&pod.Spec)
	pinToNode(&pod.Spec, node)
	return pod
}

// status is kube's updateDaemonSetStatus: per node that should run the
// set, whether it has a pod, and whether its oldest is ready, available
// and of the current template.
func (d *daemonSetSync) status() appsv1.DaemonSetStatus {
	s := appsv1.DaemonSetStatus{
		ObservedGeneration: d.ds.Generation,
		CollisionCount:     d.ds.Status.CollisionCount,
		Conditions:         d.ds.Status.Conditions,
	}
	for _, node := range d.nodes {
		shouldRun, _ := d.fits(node)
		pods := d.byNode[node.Name]
		if !shouldRun {
			if len(pods) > 0 {
				s.NumberMisscheduled++
			}
			continue
		}
		s.DesiredNumberScheduled++
		if len(pods) == 0 {
			continue
		}
		s.CurrentNumberScheduled++
		p := pods[0]
		if podReady(p) && !podTerminating(p) {
			s.NumberReady++
			if d.available(p) {
				s.NumberAvailable++
			}
		}
		if podRevision(p) == d.hash {
			s.UpdatedNumberScheduled++
		}
	}
	s.NumberUnavailable = s.DesiredNumberScheduled - s.NumberAvailable
	return s
}
