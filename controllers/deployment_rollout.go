package controllers

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// replicaSetsAndSyncRevision splits rsList into the new ReplicaSet (the
// one of d's template, nil if there is none and create is false) and
// the old ones, and gives the new one the next revision.
func (dc *deploymentController) replicaSetsAndSyncRevision(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	newRS, oldRSs := splitReplicaSets(d, rsList)
	newRS, err := dc.newReplicaSet(ctx, d, newRS, oldRSs, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, oldRSs, nil
}

// newReplicaSet brings existing, the ReplicaSet of d's template, up to
// date (revision, annotations, minReadySeconds), or creates it if there
// is none and create is set, as kube's getNewReplicaSet does.
func (dc *deploymentController) newReplicaSet(ctx context.Context, d *appsv1.Deployment, existing *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	newRevision := strconv.FormatInt(maxRevision(oldRSs)+1, 10)
	if existing != nil {
		rs := existing.DeepCopy()
		annotationsChanged := setNewReplicaSetAnnotations(d, rs, newRevision, true)
		if annotationsChanged || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			return dc.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
		}
		if err := dc.setRevision(ctx, d, rs.Annotations[revisionAnnotation]); err != nil {
			return nil, err
		}
		if hasProgressDeadline(d) && deploymentCondition(d.Status, appsv1.DeploymentProgressing) == nil {
			setDeploymentCondition(&d.Status, newDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue,
				foundNewRSReason, fmt.Sprintf("Found new replica set %q", rs.Name)))
			if err := dc.updateStatus(ctx, d); err != nil {
				return nil, err
			}
		}
		return rs, nil
	}
	if !create {
		return nil, nil
	}

	hash, err := podTemplateHash(&d.Spec.Template, d.Status.CollisionCount)
	if err != nil {
		return nil, err
	}
	template := *d.Spec.Template.DeepCopy()
	template.Labels = withLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels = withLabel(selector.MatchLabels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, deploymentKind)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        new(int32),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        template,
		},
	}
	replicas := newRSNewReplicas(d, append(slices.Clone(oldRSs), rs), rs)
	rs.Spec.Replicas = &replicas
	setNewReplicaSetAnnotations(d, rs, newRevision, false)

	created, err := dc.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	alreadyExists := false
	switch {
	case apierrors.IsAlreadyExists(err):
		alreadyExists = true
		// Ours already, made by an earlier sync whose informer event
		// has not arrived: take it. Anything else under the name is a
		// collision of hashes: count it, so that the next hash differs.
		found, getErr := dc.replicaSets.ReplicaSets(d.Namespace).Get(rs.Name)
		if getErr != nil {
			return nil, getErr
		}
		if ref := metav1.GetControllerOf(found); ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &found.Spec.Template) {
			created, err = found, nil
			break
		}
		if d.Status.CollisionCount == nil {
			d.Status.CollisionCount = new(int32)
		}
		*d.Status.CollisionCount++
		if updateErr := dc.updateStatus(ctx, d); updateErr != nil {
			return nil, updateErr
		}
		return nil, fmt.Errorf("replica set %s: hash collision, collisionCount now %d", rs.Name, *d.Status.CollisionCount)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if hasProgressDeadline(d) {
			setDeploymentCondition(&d.Status, newDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, failedRSCreateReason, msg))
			_ = dc.updateStatus(ctx, d)
		}
		dc.recorder.Event(d, corev1.EventTypeWarning, failedRSCreateReason, msg)
		return nil, err
	}
	if !alreadyExists && replicas > 0 {
		dc.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, replicas)
	}
	if err := dc.setRevision(ctx, d, newRevision); err != nil {
		return nil, err
	}
	if !alreadyExists && hasProgressDeadline(d) {
		setDeploymentCondition(&d.Status, newDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue,
			newRSReason, fmt.Sprintf("Created new replica set %q", created.Name)))
		if err := dc.updateStatus(ctx, d); err != nil {
			return nil, err
		}
	}
	return created, nil
}

// rolloutRolling takes one step of a rolling update: scale the new
// ReplicaSet up within maxSurge, or else the old ones down within
// maxUnavailable; the ReplicaSets' next status wakes the next step.
func (dc *deploymentController) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := dc.replicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	allRSs := append(slices.Clone(oldRSs), newRS)

	scaledUp, err := dc.reconcileNewReplicaSet(ctx, allRSs, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return dc.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	scaledDown, err := dc.reconcileOldReplicaSets(ctx, allRSs, activeReplicaSets(oldRSs), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return dc.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	if deploymentComplete(d, &d.Status) {
		if err := dc.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return dc.syncRolloutStatus(ctx, allRSs, newRS, d)
}

func (dc *deploymentController) reconcileNewReplicaSet(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	want := *d.Spec.Replicas
	if *newRS.Spec.Replicas > want {
		scaled, _, err := dc.scaleReplicaSetAndRecordEvent(ctx, newRS, want, d)
		return scaled, err
	}
	if *newRS.Spec.Replicas == want {
		return false, nil
	}
	scaled, _, err := dc.scaleReplicaSetAndRecordEvent(ctx, newRS, newRSNewReplicas(d, allRSs, newRS), d)
	return scaled, err
}

// reconcileOldReplicaSets scales the old ReplicaSets down as far as
// keeps replicas-maxUnavailable available: first the replicas of theirs
// that are not available (taking them costs nothing), then available
// ones, oldest ReplicaSet first.
func (dc *deploymentController) reconcileOldReplicaSets(ctx context.Context, allRSs, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if specReplicas(oldRSs) == 0 {
		return false, nil
	}
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	newRSUnavailable := *newRS.Spec.Replicas - newRS.Status.AvailableReplicas
	// Pods of the new ReplicaSet that are not available yet count
	// against the budget: scaling old ones down for them could leave
	// fewer than minAvailable if they never become available.
	maxScaledDown := specReplicas(allRSs) - minAvailable - newRSUnavailable
	if maxScaledDown <= 0 {
		return false, nil
	}
	oldRSs, cleaned, err := dc.cleanupUnhealthyReplicas(ctx, oldRSs, d, maxScaledDown)
	if err != nil {
		return false, err
	}
	allRSs = append(slices.Clone(oldRSs), newRS)
	scaled, err := dc.scaleDownOldReplicaSetsForRollingUpdate(ctx, allRSs, oldRSs, d)
	if err != nil {
		return false, err
	}
	return cleaned+scaled > 0, nil
}

// cleanupUnhealthyReplicas scales old ReplicaSets down by their
// unavailable replicas, at most maxCleanup in all.
func (dc *deploymentController) cleanupUnhealthyReplicas(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment, maxCleanup int32) ([]*appsv1.ReplicaSet, int32, error) {
	oldRSs = slices.Clone(oldRSs)
	slices.SortFunc(oldRSs, byCreation)
	var total int32
	for i, rs := range oldRSs {
		if total >= maxCleanup {
			break
		}
		replicas := *rs.Spec.Replicas
		if replicas == 0 || replicas == rs.Status.AvailableReplicas {
			continue
		}
		down := min(maxCleanup-total, replicas-rs.Status.AvailableReplicas)
		if down <= 0 {
			// More available than wanted: the status lags the spec.
			continue
		}
		_, updated, err := dc.scaleReplicaSetAndRecordEvent(ctx, rs, replicas-down, d)
		if err != nil {
			return nil, total, err
		}
		total += down
		oldRSs[i] = updated
	}
	return oldRSs, total, nil
}

// scaleDownOldReplicaSetsForRollingUpdate scales old ReplicaSets down,
// oldest first, by as many available replicas as exceed
// replicas-maxUnavailable.
func (dc *deploymentController) scaleDownOldReplicaSetsForRollingUpdate(ctx context.Context, allRSs, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	available := availableReplicas(allRSs)
	if available <= minAvailable {
		return 0, nil
	}
	oldRSs = slices.Clone(oldRSs)
	slices.SortFunc(oldRSs, byCreation)
	budget := available - minAvailable
	var total int32
	for _, rs := range oldRSs {
		if total >= budget {
			break
		}
		replicas := *rs.Spec.Replicas
		if replicas == 0 {
			continue
		}
		down := min(replicas, budget-total)
		if _, _, err := dc.scaleReplicaSetAndRecordEvent(ctx, rs, replicas-down, d); err != nil {
			return total, err
		}
		total += down
	}
	return total, nil
}

// rolloutRecreate scales every old ReplicaSet to zero, waits until they
// report no replicas, then scales the new one up.
func (dc *deploymentController) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	// The new ReplicaSet is not made until the old pods are gone: it
	// would start pods beside them.
	newRS, oldRSs, err := dc.replicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	allRSs := append(slices.Clone(oldRSs), newRS)
	scaledDown := false
	for _, rs := range activeReplicaSets(oldRSs) {
		scaled, _, err := dc.scaleReplicaSetAndRecordEvent(ctx, rs, 0, d)
		if err != nil {
			return err
		}
		scaledDown = scaledDown || scaled
	}
	if scaledDown {
		return dc.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	// Without a pod informer, the old pods are running while their
	// ReplicaSets report replicas.
	for _, rs := range oldRSs {
		if rs.Status.Replicas > 0 {
			return dc.syncRolloutStatus(ctx, allRSs, newRS, d)
		}
	}
	if newRS == nil {
		if newRS, oldRSs, err = dc.replicaSetsAndSyncRevision(ctx, d, rsList, true); err != nil {
			return err
		}
		allRSs = append(slices.Clone(oldRSs), newRS)
	}
	if _, _, err := dc.scaleReplicaSetAndRecordEvent(ctx, newRS, *d.Spec.Replicas, d); err != nil {
		return err
	}
	if deploymentComplete(d, &d.Status) {
		if err := dc.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return dc.syncRolloutStatus(ctx, allRSs, newRS, d)
}

// isScalingEvent reports whether d's replicas changed since its active
// ReplicaSets were last sized for it (their desired-replicas annotation).
func (dc *deploymentController) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, oldRSs, err := dc.replicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range activeReplicaSets(append(oldRSs, newRS)) {
		desired, ok := replicasAnnotation(rs, desiredReplicasAnnotation)
		if ok && desired != *d.Spec.Replicas {
			return true, nil
		}
	}
	return false, nil
}

// syncScale is the sync of a paused Deployment or of a change of its
// replicas: scale without rolling, and report the status.
func (dc *deploymentController) syncScale(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := dc.replicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := dc.scale(ctx, d, newRS, oldRSs); err != nil {
		return err
	}
	if d.Spec.Paused {
		// A paused Deployment keeps its history trimmed too.
		if err := dc.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return dc.syncDeploymentStatus(ctx, append(oldRSs, newRS), newRS, d)
}

// scale sizes the ReplicaSets for d's replicas. With one active
// ReplicaSet (or none) it takes them all; in the middle of a rolling
// update the change is shared among the active ReplicaSets in
// proportion to their sizes, so that a rollout under way neither starts
// over nor exceeds maxSurge.
func (dc *deploymentController) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	if rs := activeOrLatest(newRS, oldRSs); rs != nil {
		if *rs.Spec.Replicas == *d.Spec.Replicas {
			return nil
		}
		_, _, err := dc.scaleReplicaSetAndRecordEvent(ctx, rs, *d.Spec.Replicas, d)
		return err
	}
	if isSaturated(d, newRS) {
		for _, old := range activeReplicaSets(oldRSs) {
			if _, _, err := dc.scaleReplicaSetAndRecordEvent(ctx, old, 0, d); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRollingUpdate(d) {
		return nil
	}
	sizes := proportionalSizes(d, activeReplicaSets(append(slices.Clone(oldRSs), newRS)))
	for _, s := range sizes {
		op := "down"
		if s.replicas > *s.rs.Spec.Replicas {
			op = "up"
		}
		if _, _, err := dc.scaleReplicaSet(ctx, s.rs, s.replicas, d, op); err != nil {
			return err
		}
	}
	return nil
}

type sized struct {
	rs       *appsv1.ReplicaSet
	replicas int32
}

// proportionalSizes are the sizes of the active ReplicaSets allRSs for
// d's replicas plus maxSurge in all, each changed in proportion to its
// share of the size it was made for (its max-replicas annotation); what
// rounding leaves goes to the largest.
func proportionalSizes(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet) []sized {
	allowed := int32(0)
	if *d.Spec.Replicas > 0 {
		allowed = *d.Spec.Replicas + maxSurge(d)
	}
	toAdd := allowed - specReplicas(allRSs)
	allRSs = slices.Clone(allRSs)
	switch {
	case toAdd > 0:
		// Grow the newest of equal ones first.
		slices.SortFunc(allRSs, func(a, b *appsv1.ReplicaSet) int { return bySizeThen(a, b, -1) })
	case toAdd < 0:
		slices.SortFunc(allRSs, func(a, b *appsv1.ReplicaSet) int { return bySizeThen(a, b, 1) })
	}
	out := make([]sized, len(allRSs))
	var added int32
	for i, rs := range allRSs {
		out[i] = sized{rs: rs, replicas: *rs.Spec.Replicas}
		if toAdd != 0 {
			p := proportion(rs, d, toAdd, added)
			out[i].replicas += p
			added += p
		}
	}
	if len(out) > 0 && added != toAdd {
		out[0].replicas = max(out[0].replicas+toAdd-added, 0)
	}
	return out
}

// proportion is how many of toAdd (less added so far) rs takes.
func proportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if rs == nil || *rs.Spec.Replicas == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := replicaSetFraction(rs, d)
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

// replicaSetFraction is how rs's size changes if it keeps its share of
// d's replicas plus maxSurge.
func replicaSetFraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	if *d.Spec.Replicas == 0 {
		return -*rs.Spec.Replicas
	}
	total := *d.Spec.Replicas + maxSurge(d)
	annotated, ok := replicasAnnotation(rs, maxReplicasAnnotation)
	if !ok || annotated == 0 {
		annotated = d.Status.Replicas
	}
	if annotated == 0 {
		return 0
	}
	size := float64(*rs.Spec.Replicas*total) / float64(annotated)
	return int32(math.Round(size)) - *rs.Spec.Replicas
}

func (dc *deploymentController) scaleReplicaSetAndRecordEvent(ctx context.Context, rs *appsv1.ReplicaSet, replicas int32, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	if *rs.Spec.Replicas == replicas {
		return false, rs, nil
	}
	op := "down"
	if *rs.Spec.Replicas < replicas {
		op = "up"
	}
	return dc.scaleReplicaSet(ctx, rs, replicas, d, op)
}

// scaleReplicaSet sets rs's replicas and its annotations of d's size.
func (dc *deploymentController) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, replicas int32, d *appsv1.Deployment, op string) (bool, *appsv1.ReplicaSet, error) {
	resize := *rs.Spec.Replicas != replicas
	if !resize && !replicasAnnotationsNeedUpdate(rs, *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)) {
		return false, rs, nil
	}
	from := *rs.Spec.Replicas
	next := rs.DeepCopy()
	next.Spec.Replicas = &replicas
	setReplicasAnnotations(next, *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d))
	updated, err := dc.client.AppsV1().ReplicaSets(next.Namespace).Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return false, nil, err
	}
	if resize {
		dc.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", op, rs.Name, from, replicas)
	}
	return resize, updated, nil
}

// cleanupDeployment deletes the oldest old ReplicaSets beyond
// revisionHistoryLimit that have scaled down to nothing.
func (dc *deploymentController) cleanupDeployment(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	diff := int32(len(alive)) - *d.Spec.RevisionHistoryLimit
	if diff <= 0 {
		return nil
	}
	slices.SortFunc(alive, byRevision)
	for _, rs := range alive[:diff] {
		// One with replicas, or whose latest size its controller has
		// not seen yet, still has pods.
		if rs.Status.Replicas != 0 || *rs.Spec.Replicas != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		err := dc.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &rs.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete old replica set %s: %w", rs.Name, err)
		}
	}
	return nil
}
