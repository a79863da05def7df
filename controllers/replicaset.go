package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// burstReplicas is the most pods one sync of a ReplicaSet creates or
// deletes; the rest wait for the next sync. kube's default.
const burstReplicas = 500

// replicaSetKind is what a ReplicaSet's pods name as their controller.
var replicaSetKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// replicaSetController keeps each ReplicaSet's pods at its replicas, as
// kube's ReplicaSetController does. A sync of one ReplicaSet:
//
//  1. claims the active pods of its namespace (claimPods): keeps those
//     it controls that its selector matches, adopts orphans that it
//     matches and releases those it controls that it no longer matches;
//  2. unless writes of an earlier sync are still unobserved by the
//     informer (expectations), creates or deletes pods to reach
//     spec.replicas (manageReplicas);
//  3. writes the status those pods give (replicaSetStatus).
type replicaSetController struct {
	client       kubernetes.Interface
	replicaSets  appslisters.ReplicaSetLister
	pods         corelisters.PodLister
	expectations *expectations
	w            *worker
	logger       *slog.Logger
	now          func() time.Time
}

func newReplicaSetController(c *controllerContext) (runner, error) {
	rsInformer := c.informers.Apps().V1().ReplicaSets()
	podInformer := c.informers.Core().V1().Pods()
	rsc := &replicaSetController{
		client:       c.client,
		replicaSets:  rsInformer.Lister(),
		pods:         podInformer.Lister(),
		expectations: newExpectations(time.Now),
		logger:       c.logger.With("controller", "replicaset"),
		now:          time.Now,
	}
	rsc.w = newWorker("replicaset", c.logger, rsc.sync)
	if _, err := rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    rsc.w.enqueue,
		UpdateFunc: func(_, cur any) { rsc.w.enqueue(cur) },
		DeleteFunc: rsc.w.enqueue, // the sync finds it gone and forgets it
	}); err != nil {
		return nil, err
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    rsc.addPod,
		UpdateFunc: rsc.updatePod,
		DeleteFunc: rsc.deletePod,
	}); err != nil {
		return nil, err
	}
	synced := []cache.InformerSynced{rsInformer.Informer().HasSynced, podInformer.Informer().HasSynced}
	return func(ctx context.Context, workers int) { rsc.w.run(ctx, workers, synced...) }, nil
}

// owner is the ReplicaSet that ref names, if it is one the cache holds
// with the same UID (a ReplicaSet of that name re-created is another).
func (rsc *replicaSetController) owner(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref == nil || ref.Kind != replicaSetKind.Kind || ref.APIVersion != replicaSetKind.GroupVersion().String() {
		return nil
	}
	rs, err := rsc.replicaSets.ReplicaSets(namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

// enqueueSelecting enqueues the ReplicaSets whose selector matches pod,
// which may adopt it.
func (rsc *replicaSetController) enqueueSelecting(pod *corev1.Pod) {
	all, err := rsc.replicaSets.ReplicaSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, rs := range all {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		rsc.w.enqueue(rs)
	}
}

func (rsc *replicaSetController) addPod(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		// Seen first while being deleted (after a relist): for the
		// expectations, a deletion.
		rsc.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if rs := rsc.owner(pod.Namespace, ref); rs != nil {
			rsc.expectations.creationObserved(key(rs))
			rsc.w.enqueue(rs)
		}
		return
	}
	rsc.enqueueSelecting(pod)
}

func (rsc *replicaSetController) updatePod(oldObj, curObj any) {
	old, cur := oldObj.(*corev1.Pod), curObj.(*corev1.Pod)
	if old.ResourceVersion == cur.ResourceVersion {
		// A resync: nothing changed.
		return
	}
	labelsChanged := !labels.Equals(old.Labels, cur.Labels)
	if cur.DeletionTimestamp != nil {
		// Being deleted: observed now, not when it is finally gone, so
		// that the replacement is not held up by its grace period.
		rsc.deletePod(cur)
		if labelsChanged {
			rsc.deletePod(old)
		}
		return
	}
	oldRef, curRef := metav1.GetControllerOf(old), metav1.GetControllerOf(cur)
	refChanged := !equality.Semantic.DeepEqual(oldRef, curRef)
	if refChanged && oldRef != nil {
		// Released, or taken: the old owner counts one fewer.
		if rs := rsc.owner(old.Namespace, oldRef); rs != nil {
			rsc.w.enqueue(rs)
		}
	}
	if curRef != nil {
		rs := rsc.owner(cur.Namespace, curRef)
		if rs == nil {
			return
		}
		rsc.w.enqueue(rs)
		if !podReady(old) && podReady(cur) && rs.Spec.MinReadySeconds > 0 {
			// Available minReadySeconds from now; a second more so that
			// the sync does not come a moment too early.
			rsc.w.queue.AddAfter(key(rs), time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if labelsChanged || refChanged {
		rsc.enqueueSelecting(cur)
	}
}

func (rsc *replicaSetController) deletePod(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	rs := rsc.owner(pod.Namespace, metav1.GetControllerOf(pod))
	if rs == nil {
		return
	}
	rsc.expectations.deletionObserved(key(rs), key(pod))
	rsc.w.enqueue(rs)
}

// key is an object's namespace/name, its key in the queue and the
// expectations.
func key(obj metav1.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }

// sync brings the ReplicaSet of key to its replicas and writes its status.
func (rsc *replicaSetController) sync(ctx context.Context, k string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(k)
	if err != nil {
		return nil
	}
	rs, err := rsc.replicaSets.ReplicaSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		rsc.expectations.forget(k)
		return nil
	}
	if err != nil {
		return err
	}
	// Read before the pods are listed: an observation that comes between
	// the two is then in the list, and never missed by both.
	satisfied := rsc.expectations.satisfied(k)
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil || selector.Empty() {
		// Validation refuses such a ReplicaSet; were one stored, it
		// would select every pod of its namespace, or none.
		rsc.logger.Warn("replicaset: invalid selector; not syncing", "replicaset", k, "err", err)
		return nil
	}
	all, err := rsc.pods.Pods(namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	var active []*corev1.Pod
	for _, p := range all {
		if podActive(p) {
			active = append(active, p)
		}
	}
	claim := podClaim{client: rsc.client, owner: rs, kind: replicaSetKind, get: func(ctx context.Context) (metav1.Object, error) {
		return rsc.client.AppsV1().ReplicaSets(rs.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
	}}
	pods, err := claim.claimPods(ctx, selector, active)
	if err != nil {
		return err
	}
	var manageErr error
	managed := satisfied && rs.DeletionTimestamp == nil
	if managed {
		manageErr = rsc.manageReplicas(ctx, k, rs, pods)
	} else if !satisfied {
		// Should the informer never observe what was written, look again
		// once the expectations expire; a key already waiting keeps its
		// earlier time.
		rsc.w.queue.AddAfter(k, expectationsTimeout)
	}
	now := rsc.now()
	status := replicaSetStatus(rs, pods, managed, manageErr, now)
	if !equality.Semantic.DeepEqual(rs.Status, status) {
		next := rs.DeepCopy()
		next.Status = status
		if _, err := rsc.client.AppsV1().ReplicaSets(namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			return errors.Join(manageErr, fmt.Errorf("update status of replicaset %s: %w", k, err))
		}
	}
	if manageErr == nil && rs.Spec.MinReadySeconds > 0 && status.ReadyReplicas == *rs.Spec.Replicas && status.AvailableReplicas != *rs.Spec.Replicas {
		// Ready pods become available with time, not with an event.
		rsc.w.queue.AddAfter(k, time.Duration(rs.Spec.MinReadySeconds)*time.Second)
	}
	return manageErr
}

// manageReplicas creates or deletes pods of rs, which controls pods, to
// reach spec.replicas, at most burstReplicas at a time. What it writes is
// expected first, so that the syncs that come before the informer has
// seen it do not write it again.
func (rsc *replicaSetController) manageReplicas(ctx context.Context, k string, rs *appsv1.ReplicaSet, pods []*corev1.Pod) error {
	diff := len(pods) - int(*rs.Spec.Replicas)
	switch {
	case diff < 0:
		n := min(-diff, burstReplicas)
		rsc.expectations.expectCreations(k, n)
		template := podFromTemplate(rs)
		created, unknown, err := slowStartBatch(n, func() error {
			_, err := rsc.client.CoreV1().Pods(rs.Namespace).Create(ctx, template.DeepCopy(), metav1.CreateOptions{})
			return err
		})
		// A refused create, or one never tried, is never observed; one
		// whose outcome is unknown may be, and stays expected: at worst
		// the ReplicaSet waits out the expectations, and never holds
		// more pods than it should.
		for range n - created - unknown {
			rsc.expectations.creationObserved(k)
		}
		if err != nil {
			return fmt.Errorf("create pods of replicaset %s: %w", k, err)
		}
	case diff > 0:
		victims := podsToDelete(pods, min(diff, burstReplicas))
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i] = key(p)
		}
		rsc.expectations.expectDeletions(k, keys)
		errs := make([]error, len(victims))
		var wg sync.WaitGroup
		for i, p := range victims {
			wg.Go(func() {
				// The UID precondition: the pod ranked, not one re-created
				// under its name since.
				err := rsc.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
				if err != nil {
					// The informer will not see this deletion.
					rsc.expectations.deletionObserved(k, keys[i])
					if !apierrors.IsNotFound(err) {
						errs[i] = err
					}
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("delete pods of replicaset %s: %w", k, err)
		}
	}
	return nil
}

// slowStartBatch calls create n times, in batches of 1, 2, 4, ... run
// concurrently, and stops after the first batch in which one fails: when
// every create is refused (a quota, an admission policy), one request
// finds it out, not n. It returns how many succeeded, how many failed
// without it being known whether the pod was created (a timeout, a lost
// connection), and the first error.
func slowStartBatch(n int, create func() error) (succeeded, unknown int, err error) {
	remaining := n
	for batch := 1; remaining > 0; batch *= 2 {
		size := min(batch, remaining)
		errs := make([]error, size)
		var wg sync.WaitGroup
		for i := range size {
			wg.Go(func() { errs[i] = create() })
		}
		wg.Wait()
		for _, e := range errs {
			if e == nil {
				succeeded++
				continue
			}
			if outcomeUnknown(e) {
				unknown++
			}
			if err == nil {
				err = e
			}
		}
		if err != nil {
			return succeeded, unknown, err
		}
		remaining -= size
	}
	return succeeded, unknown, nil
}

// outcomeUnknown reports whether a failed write may have been done all
// the same: the server answered that it timed out (504, as when etcd
// is slow to commit), or did not answer. Any other status it answered
// (403, 409, 422, 500 ...) means it did not write.
func outcomeUnknown(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}

// podFromTemplate is a new pod of rs: its template, named after it,
// controlled by it.
func podFromTemplate(rs *appsv1.ReplicaSet) *corev1.Pod {
	t := rs.Spec.Template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    rs.Name + "-",
			Namespace:       rs.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, replicaSetKind)},
		},
		Spec: t.Spec,
	}
}

// podActive reports whether pod counts towards a ReplicaSet's replicas:
// neither finished nor being deleted.
func podActive(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && pod.DeletionTimestamp == nil
}

// podReadyCondition is pod's Ready condition, or nil.
func podReadyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func podReady(pod *corev1.Pod) bool {
	c := podReadyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// podAvailable reports whether pod has been ready for minReadySeconds
// at now.
func podAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := podReadyCondition(pod)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	return !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).Before(now)
}
