package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// statefulSetKind is what a StatefulSet's pods and revisions name as
// their controller.
var statefulSetKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// The labels kube's StatefulSet controller gives each pod: its own name
// (a Service can select one pod by it) and its ordinal.
const (
	statefulSetPodNameLabel  = appsv1.StatefulSetPodNameLabel
	statefulSetPodIndexLabel = appsv1.PodIndexLabel
)

// statefulSetController runs each StatefulSet's pods, as kube's
// StatefulSetController does: pods named <set>-<ordinal>, one per
// ordinal from spec.ordinals.start, each made from the template of one
// ControllerRevision of the set and labelled with its name. A sync of
// one StatefulSet:
//
//  1. finds or records the revision of the current template (the update
//     revision) and the one the set last finished rolling out (the
//     current revision);
//  2. takes the pods it controls that its selector matches, by ordinal;
//  3. makes them match the spec (statefulSetUpdate): creates the missing
//     ordinals, deletes failed pods and those beyond replicas (highest
//     ordinal first), and, under RollingUpdate, deletes the pods of an
//     old revision from the highest ordinal down to the partition, one
//     at a time, each replaced and Ready before the next;
//  4. writes the status, and deletes revisions beyond
//     revisionHistoryLimit that no pod uses.
//
// Under OrderedReady, one pod changes at a time and only while every pod
// of a lower ordinal is Running and Ready; Parallel creates and deletes
// at once. Pods are found by name, so a cache that lags cannot make the
// controller create a pod twice: the second create is refused as the
// name is taken.
//
// It adopts no orphans: a pod without a controller whose name an ordinal
// needs blocks that ordinal until it is deleted.
type statefulSetController struct {
	client    kubernetes.Interface
	sets      appslisters.StatefulSetLister
	pods      corelisters.PodLister
	revisions appslisters.ControllerRevisionLister
	w         *worker
	logger    *slog.Logger
	now       func() time.Time
}

func newStatefulSetController(c *controllerContext) (runner, error) {
	setInformer := c.informers.Apps().V1().StatefulSets()
	podInformer := c.informers.Core().V1().Pods()
	revInformer := c.informers.Apps().V1().ControllerRevisions()
	ssc := &statefulSetController{
		client:    c.client,
		sets:      setInformer.Lister(),
		pods:      podInformer.Lister(),
		revisions: revInformer.Lister(),
		logger:    c.logger.With("controller", "statefulset"),
		now:       time.Now,
	}
	ssc.w = newWorker("statefulset", c.logger, ssc.sync)
	if _, err := setInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ssc.w.enqueue,
		UpdateFunc: func(_, cur any) { ssc.w.enqueue(cur) },
	}); err != nil {
		return nil, err
	}
	// A pod or revision event wakes the set that controls it.
	owned := cache.ResourceEventHandlerFuncs{
		AddFunc:    ssc.enqueueOwner,
		UpdateFunc: func(_, cur any) { ssc.enqueueOwner(cur) },
		DeleteFunc: ssc.enqueueOwner,
	}
	if _, err := podInformer.Informer().AddEventHandler(owned); err != nil {
		return nil, err
	}
	if _, err := revInformer.Informer().AddEventHandler(owned); err != nil {
		return nil, err
	}
	synced := []cache.InformerSynced{setInformer.Informer().HasSynced, podInformer.Informer().HasSynced, revInformer.Informer().HasSynced}
	return func(ctx context.Context, workers int) { ssc.w.run(ctx, workers, synced...) }, nil
}

func (ssc *statefulSetController) enqueueOwner(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != statefulSetKind.Kind || ref.APIVersion != statefulSetKind.GroupVersion().String() {
		return
	}
	set, err := ssc.sets.StatefulSets(o.GetNamespace()).Get(ref.Name)
	if err != nil || set.UID != ref.UID {
		return
	}
	ssc.w.enqueue(set)
}

func (ssc *statefulSetController) sync(ctx context.Context, k string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(k)
	if err != nil {
		return nil
	}
	set, err := ssc.sets.StatefulSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// Its pods and revisions go with it, by the garbage collector.
		return nil
	}
	if err != nil {
		return err
	}
	if set.DeletionTimestamp != nil {
		return nil
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || selector.Empty() {
		ssc.logger.Warn("statefulset: invalid selector; not syncing", "statefulset", k, "err", err)
		return nil
	}
	revs, err := ownedRevisions(ssc.revisions, set)
	if err != nil {
		return err
	}
	owner := revisionOwner{
		obj:            set,
		kind:           statefulSetKind,
		template:       &set.Spec.Template,
		collisionCount: set.Status.CollisionCount,
		current:        set.Status.CurrentRevision,
		historyLimit:   set.Spec.RevisionHistoryLimit,
		saveCollision: func(ctx context.Context, n int32) error {
			next := set.DeepCopy()
			next.Status.CollisionCount = &n
			_, err := ssc.client.AppsV1().StatefulSets(namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
			return err
		},
	}
	current, update, err := revisionsOf(ctx, ssc.client, owner, revs)
	if err != nil {
		return err
	}
	all, err := ssc.pods.Pods(namespace).List(selector)
	if err != nil {
		return err
	}
	var pods []*corev1.Pod
	for _, p := range all {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == set.UID {
			if _, ok := ordinalOf(set, p); ok {
				pods = append(pods, p)
			}
		}
	}
	u := &statefulSetUpdate{ssc: ssc, set: set, current: current, update: update, now: ssc.now()}
	syncErr := u.run(ctx, pods)
	if err := ssc.writeStatus(ctx, set, u.status(pods)); err != nil {
		return errors.Join(syncErr, err)
	}
	if u.waitFor > 0 {
		ssc.w.queue.AddAfter(k, u.waitFor)
	}
	if syncErr != nil {
		return syncErr
	}
	live := map[string]bool{current.Name: true, update.Name: true}
	for _, p := range pods {
		live[podRevision(p)] = true
	}
	return truncateHistory(ctx, ssc.client, owner, revs, live)
}

// writeStatus writes status, if it is new, to set.
func (ssc *statefulSetController) writeStatus(ctx context.Context, set *appsv1.StatefulSet, status appsv1.StatefulSetStatus) error {
	if equality.Semantic.DeepEqual(set.Status, status) {
		return nil
	}
	sets := ssc.client.AppsV1().StatefulSets(set.Namespace)
	return writeSetStatus(ctx, "statefulset", set, func(s *appsv1.StatefulSet) *appsv1.StatefulSet {
		next := s.DeepCopy()
		next.Status = status
		next.Status.CollisionCount = s.Status.CollisionCount
		return next
	}, sets.Get, sets.UpdateStatus)
}

// statefulSetUpdate is one sync's work on one set's pods.
type statefulSetUpdate struct {
	ssc             *statefulSetController
	set             *appsv1.StatefulSet
	current, update *appsv1.ControllerRevision
	now             time.Time
	// waitFor, when set, is when a pod becomes available with time.
	waitFor time.Duration
}

// ordinalOf is the ordinal in pod's name, if it is <set>-<ordinal>.
func ordinalOf(set *appsv1.StatefulSet, pod *corev1.Pod) (int, bool) {
	rest, ok := strings.CutPrefix(pod.Name, set.Name+"-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

// setReplicas is spec.replicas, which the server defaults to 1: a set
// read without it is taken to want none rather than to crash.
func setReplicas(set *appsv1.StatefulSet) int32 {
	if set.Spec.Replicas == nil {
		return 0
	}
	return *set.Spec.Replicas
}

func podTerminating(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }

func podFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// healthy is kube's isRunningAndAvailable: the pod is Running, not being
// deleted, and has been Ready for minReadySeconds. When it is Ready but
// not yet for long enough, the sync is asked to come back then.
func (u *statefulSetUpdate) healthy(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || podTerminating(p) || !podReady(p) {
		return false
	}
	mrs := u.set.Spec.MinReadySeconds
	if podAvailable(p, mrs, u.now) {
		return true
	}
	c := podReadyCondition(p)
	wait := c.LastTransitionTime.Add(time.Duration(mrs)*time.Second + time.Second).Sub(u.now)
	if u.waitFor == 0 || wait < u.waitFor {
		u.waitFor = max(wait, time.Second)
	}
	return false
}

// run brings the pods to the spec, kube's updateStatefulSet without
// volumes: what one call does, and where it stops to wait, is the
// ordering guarantee.
func (u *statefulSetUpdate) run(ctx context.Context, pods []*corev1.Pod) error {
	set := u.set
	ordered := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	start, replicas := startOrdinal(set), int(setReplicas(set))
	slots := make([]*corev1.Pod, replicas)
	var condemned []*corev1.Pod
	for _, p := range pods {
		ord, _ := ordinalOf(set, p)
		if ord >= start && ord < start+replicas {
			slots[ord-start] = p
		} else {
			condemned = append(condemned, p)
		}
	}
	// Highest ordinal first, as they are deleted.
	slices.SortFunc(condemned, func(a, b *corev1.Pod) int {
		x, _ := ordinalOf(set, a)
		y, _ := ordinalOf(set, b)
		return y - x
	})

	// Ordinals in order: replace what failed, create what is missing,
	// and under OrderedReady stop at the first that is not healthy.
	var create []*corev1.Pod
	for i, p := range slots {
		ord := start + i
		if p != nil && podFinished(p) && !podTerminating(p) {
			if err := u.deletePod(ctx, p); err != nil {
				return err
			}
			if ordered {
				return nil
			}
			continue
		}
		if p == nil {
			pod, err := u.newPod(ord)
			if err != nil {
				return err
			}
			if ordered {
				return u.createPods(ctx, []*corev1.Pod{pod})
			}
			create = append(create, pod)
			continue
		}
		if ordered && !u.healthy(p) {
			return nil
		}
	}
	if err := u.createPods(ctx, create); err != nil {
		return err
	}

	// Beyond replicas: highest ordinal first. Under OrderedReady one at a
	// time, each gone before the next, and only while the pods that stay
	// are healthy (the loop above returned otherwise).
	for _, p := range condemned {
		if podTerminating(p) {
			if ordered {
				return nil
			}
			continue
		}
		if err := u.deletePod(ctx, p); err != nil {
			return err
		}
		if ordered {
			return nil
		}
	}
	if set.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		// OnDelete: a pod takes the new template when someone deletes it.
		return nil
	}
	// The rolling update, from the highest ordinal down to the partition:
	// one pod at a time, whatever the pod management policy, waiting
	// for each replacement to be healthy.
	partition := 0
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		partition = int(*ru.Partition)
	}
	for i := len(slots) - 1; i >= partition && i >= 0; i-- {
		p := slots[i]
		if p == nil {
			return nil
		}
		if podRevision(p) != u.update.Name && !podTerminating(p) {
			return u.deletePod(ctx, p)
		}
		if !u.healthy(p) {
			return nil
		}
	}
	return nil
}

// newPod is the pod of ordinal ord: of the current revision below the
// partition (RollingUpdate), of the update revision otherwise, as kube's
// newVersionedStatefulSetPod.
func (u *statefulSetUpdate) newPod(ord int) (*corev1.Pod, error) {
	set := u.set
	rev := u.update
	if ru := set.Spec.UpdateStrategy.RollingUpdate; set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		ru != nil && ru.Partition != nil && ord < startOrdinal(set)+int(*ru.Partition) {
		rev = u.current
	}
	tmpl, err := revisionTemplate(rev)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s-%d", set.Name, ord)
	lbls := map[string]string{}
	for k, v := range tmpl.Labels {
		lbls[k] = v
	}
	lbls[statefulSetPodNameLabel] = name
	lbls[statefulSetPodIndexLabel] = strconv.Itoa(ord)
	lbls[appsv1.ControllerRevisionHashLabelKey] = rev.Name
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       set.Namespace,
			Labels:          lbls,
			Annotations:     tmpl.Annotations,
			Finalizers:      tmpl.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, statefulSetKind)},
		},
		Spec: tmpl.Spec,
	}
	// Its stable network identity: <pod>.<serviceName>.
	pod.Spec.Hostname = name
	pod.Spec.Subdomain = set.Spec.ServiceName
	return pod, nil
}

func podRevision(p *corev1.Pod) string { return p.Labels[appsv1.ControllerRevisionHashLabelKey] }

// createPods creates pods, in batches of 1, 2, 4, ... that stop at the
// first refusal. A name already taken is not an error: the informer has
// not yet shown this controller's own pod, or the name is held by a pod
// it does not control, and either way the sync waits for the informer.
func (u *statefulSetUpdate) createPods(ctx context.Context, pods []*corev1.Pod) error {
	var next atomic.Int32
	_, _, err := slowStartBatch(len(pods), func() error {
		p := pods[next.Add(1)-1]
		_, err := u.ssc.client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create pods of statefulset %s: %w", key(u.set), err)
	}
	return nil
}

// deletePod deletes p, the pod the sync judged, not one re-created
// under its name since (the UID precondition).
func (u *statefulSetUpdate) deletePod(ctx context.Context, p *corev1.Pod) error {
	err := u.ssc.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
	if err != nil && !gone(err) {
		return fmt.Errorf("delete pod %s of statefulset %s: %w", p.Name, key(u.set), err)
	}
	return nil
}

// status is kube's computeReplicaStatus, with the rollout completed
// once every pod is of the update revision and ready.
func (u *statefulSetUpdate) status(pods []*corev1.Pod) appsv1.StatefulSetStatus {
	set := u.set
	s := appsv1.StatefulSetStatus{
		ObservedGeneration: set.Generation,
		CurrentRevision:    u.current.Name,
		UpdateRevision:     u.update.Name,
		CollisionCount:     set.Status.CollisionCount,
		Conditions:         set.Status.Conditions,
	}
	for _, p := range pods {
		s.Replicas++
		if p.Status.Phase == corev1.PodRunning && podReady(p) && !podTerminating(p) {
			s.ReadyReplicas++
			if podAvailable(p, set.Spec.MinReadySeconds, u.now) {
				s.AvailableReplicas++
			}
		}
		if podTerminating(p) {
			continue
		}
		switch podRevision(p) {
		case s.CurrentRevision:
			s.CurrentReplicas++
			if s.CurrentRevision == s.UpdateRevision {
				s.UpdatedReplicas++
			}
		case s.UpdateRevision:
			s.UpdatedReplicas++
		}
	}
	if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		s.UpdatedReplicas == s.Replicas && s.ReadyReplicas == s.Replicas && s.Replicas == setReplicas(set) {
		s.CurrentRevision = s.UpdateRevision
		s.CurrentReplicas = s.UpdatedReplicas
	}
	return s
}
