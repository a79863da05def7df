package controllers

import (
	"context"
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// The reasons of a Deployment's conditions, kube's, which `kubectl
// rollout status` and people's scripts read.
const (
	newRSReason              = "NewReplicaSetCreated"
	foundNewRSReason         = "FoundNewReplicaSet"
	newRSAvailableReason     = "NewReplicaSetAvailable"
	rsUpdatedReason          = "ReplicaSetUpdated"
	failedRSCreateReason     = "ReplicaSetCreateError"
	timedOutReason           = "ProgressDeadlineExceeded"
	pausedDeployReason       = "DeploymentPaused"
	resumedDeployReason      = "DeploymentResumed"
	minimumReplicasAvailable = "MinimumReplicasAvailable"
	minimumReplicasUnavail   = "MinimumReplicasUnavailable"
)

func newDeploymentCondition(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string) appsv1.DeploymentCondition {
	now := metav1.Now()
	return appsv1.DeploymentCondition{Type: t, Status: status, Reason: reason, Message: message, LastUpdateTime: now, LastTransitionTime: now}
}

func deploymentCondition(s appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// setDeploymentCondition puts c in s, unless one of its type with the
// same status and reason is there; a condition whose status stays keeps
// its transition time.
func setDeploymentCondition(s *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	current := deploymentCondition(*s, c.Type)
	if current != nil && current.Status == c.Status && current.Reason == c.Reason {
		return
	}
	if current != nil && current.Status == c.Status {
		c.LastTransitionTime = current.LastTransitionTime
	}
	removeDeploymentCondition(s, c.Type)
	s.Conditions = append(s.Conditions, c)
}

func removeDeploymentCondition(s *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var kept []appsv1.DeploymentCondition
	for _, c := range s.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	s.Conditions = kept
}

// hasProgressDeadline: kube takes MaxInt32 seconds for none.
func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// deploymentComplete: every replica updated and available, and no old
// one left, for the latest spec.
func deploymentComplete(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	return s.UpdatedReplicas == *d.Spec.Replicas && s.Replicas == *d.Spec.Replicas &&
		s.AvailableReplicas == *d.Spec.Replicas && s.ObservedGeneration >= d.Generation
}

// deploymentProgressing: the new status is further on than d's.
func deploymentProgressing(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	old := d.Status
	return s.UpdatedReplicas > old.UpdatedReplicas ||
		s.Replicas-s.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		s.ReadyReplicas > old.ReadyReplicas || s.AvailableReplicas > old.AvailableReplicas
}

// deploymentTimedOut: no progress for progressDeadlineSeconds since the
// Progressing condition was last updated.
func deploymentTimedOut(d *appsv1.Deployment, s *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := deploymentCondition(*s, appsv1.DeploymentProgressing)
	switch {
	case c == nil, c.Reason == newRSAvailableReason:
		return false
	case c.Reason == timedOutReason:
		return true
	}
	deadline := time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second
	return c.LastUpdateTime.Add(deadline).Before(now)
}

// calculateStatus is d's status from its ReplicaSets: the counts, and
// the Available condition; the other conditions are kept.
func calculateStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus {
	available := availableReplicas(allRSs)
	s := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            statusReplicas(allRSs),
		UpdatedReplicas:     statusReplicas([]*appsv1.ReplicaSet{newRS}),
		ReadyReplicas:       readyReplicas(allRSs),
		AvailableReplicas:   available,
		UnavailableReplicas: max(specReplicas(allRSs)-available, 0),
		CollisionCount:      d.Status.CollisionCount,
	}
	s.Conditions = append(s.Conditions, d.Status.Conditions...)
	if available >= *d.Spec.Replicas-maxUnavailable(d) {
		setDeploymentCondition(&s, newDeploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, minimumReplicasAvailable, "Deployment has minimum availability."))
	} else {
		setDeploymentCondition(&s, newDeploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, minimumReplicasUnavail, "Deployment does not have minimum availability."))
	}
	return s
}

// syncDeploymentStatus writes the status calculated from the
// ReplicaSets, if it changed, without judging progress.
func (dc *deploymentController) syncDeploymentStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	s := calculateStatus(allRSs, newRS, d)
	if equality.Semantic.DeepEqual(d.Status, s) {
		return nil
	}
	d.Status = s
	return dc.updateStatus(ctx, d)
}

// syncRolloutStatus writes the status of a rollout: the counts and the
// Progressing condition, which turns False (ProgressDeadlineExceeded)
// once the rollout has made no progress for progressDeadlineSeconds.
func (dc *deploymentController) syncRolloutStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	s := calculateStatus(allRSs, newRS, d)
	if !hasProgressDeadline(d) {
		removeDeploymentCondition(&s, appsv1.DeploymentProgressing)
	}
	current := deploymentCondition(d.Status, appsv1.DeploymentProgressing)
	complete := s.Replicas == s.UpdatedReplicas && current != nil && current.Reason == newRSAvailableReason
	if hasProgressDeadline(d) && !complete {
		name := ""
		if newRS != nil {
			name = newRS.Name
		}
		switch {
		case deploymentComplete(d, &s):
			setDeploymentCondition(&s, newDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue,
				newRSAvailableReason, fmt.Sprintf("ReplicaSet %q has successfully progressed.", name)))
		case deploymentProgressing(d, &s):
			c := newDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue,
				rsUpdatedReason, fmt.Sprintf("ReplicaSet %q is progressing.", name))
			// Progress renews the condition's update time, which the
			// deadline counts from, even if its reason stays.
			if current != nil {
				if current.Status == corev1.ConditionTrue {
					c.LastTransitionTime = current.LastTransitionTime
				}
				removeDeploymentCondition(&s, appsv1.DeploymentProgressing)
			}
			setDeploymentCondition(&s, c)
		case deploymentTimedOut(d, &s, time.Now()):
			setDeploymentCondition(&s, newDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse,
				timedOutReason, fmt.Sprintf("ReplicaSet %q has timed out progressing.", name)))
		}
	}
	if c := replicaFailure(allRSs, newRS); c != nil {
		setDeploymentCondition(&s, *c)
	} else {
		removeDeploymentCondition(&s, appsv1.DeploymentReplicaFailure)
	}
	if equality.Semantic.DeepEqual(d.Status, s) {
		// Nothing changed: look again when the deadline passes.
		dc.requeueStuck(d)
		return nil
	}
	d.Status = s
	return dc.updateStatus(ctx, d)
}

// requeueStuck syncs d again once its progress deadline has passed, for
// nothing else may happen to wake it.
func (dc *deploymentController) requeueStuck(d *appsv1.Deployment) {
	c := deploymentCondition(d.Status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || c == nil || c.Reason == newRSAvailableReason || c.Reason == timedOutReason {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(d)
	if err != nil {
		return
	}
	after := c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(time.Now())
	if after < time.Second {
		dc.w.queue.AddRateLimited(key)
		return
	}
	dc.w.queue.AddAfter(key, after)
}

// replicaFailure is the ReplicaFailure condition of the new ReplicaSet,
// or else of an old one, as the Deployment's.
func replicaFailure(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	var ordered []*appsv1.ReplicaSet
	if newRS != nil {
		ordered = append(ordered, newRS)
	}
	for _, rs := range allRSs {
		if rs != nil && rs != newRS {
			ordered = append(ordered, rs)
		}
	}
	for _, rs := range ordered {
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				return &appsv1.DeploymentCondition{
					Type: appsv1.DeploymentReplicaFailure, Status: c.Status, Reason: c.Reason, Message: c.Message,
					LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime,
				}
			}
		}
	}
	return nil
}

// checkPausedConditions marks the Progressing condition Unknown when d
// is paused (DeploymentPaused) and when it resumes (DeploymentResumed),
// so that a pause does not count against the progress deadline.
func (dc *deploymentController) checkPausedConditions(ctx context.Context, d *appsv1.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	c := deploymentCondition(d.Status, appsv1.DeploymentProgressing)
	if c != nil && c.Reason == timedOutReason {
		// A timed-out rollout stays reported as one.
		return nil
	}
	paused := c != nil && c.Reason == pausedDeployReason
	switch {
	case d.Spec.Paused && !paused:
		setDeploymentCondition(&d.Status, newDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, pausedDeployReason, "Deployment is paused"))
	case !d.Spec.Paused && paused:
		setDeploymentCondition(&d.Status, newDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, resumedDeployReason, "Deployment is resumed"))
	default:
		return nil
	}
	return dc.updateStatus(ctx, d)
}
