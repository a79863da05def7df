package controllers

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// replicaSetStatus is the status that pods, the pods rs controls, give
// it at now. When the sync managed rs (managed), its ReplicaFailure
// condition says whether that failed (manageErr); when it did not (the
// expectations were pending), the conditions stay as they are, so that
// they follow the outcome of writes and do not flap with every sync.
func replicaSetStatus(rs *appsv1.ReplicaSet, pods []*corev1.Pod, managed bool, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	s := appsv1.ReplicaSetStatus{
		Replicas:           int32(len(pods)),
		ObservedGeneration: rs.Generation,
		Conditions:         slices.Clone(rs.Status.Conditions),
	}
	// Fully labeled: every label of the template, not only the
	// selector's.
	template := labels.SelectorFromSet(rs.Spec.Template.Labels)
	for _, p := range pods {
		if template.Matches(labels.Set(p.Labels)) {
			s.FullyLabeledReplicas++
		}
		if podReady(p) {
			s.ReadyReplicas++
			if podAvailable(p, rs.Spec.MinReadySeconds, now) {
				s.AvailableReplicas++
			}
		}
	}
	if !managed {
		return s
	}
	i := slices.IndexFunc(s.Conditions, func(c appsv1.ReplicaSetCondition) bool { return c.Type == appsv1.ReplicaSetReplicaFailure })
	switch {
	case manageErr != nil && i < 0:
		reason := "FailedCreate"
		if len(pods) > int(*rs.Spec.Replicas) {
			reason = "FailedDelete"
		}
		s.Conditions = append(s.Conditions, appsv1.ReplicaSetCondition{
			Type:               appsv1.ReplicaSetReplicaFailure,
			Status:             corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now),
			Reason:             reason,
			Message:            manageErr.Error(),
		})
	case manageErr == nil && i >= 0:
		s.Conditions = slices.Delete(s.Conditions, i, i+1)
	}
	return s
}

// podDeletionCost is the annotation by which a pod's owner ranks it for
// deletion: lower goes first. kube's.
const podDeletionCost = "controller.kubernetes.io/pod-deletion-cost"

// podsToDelete returns the n pods of pods to delete first. The ranking is
// kube's (ActivePodsWithRanks) without two refinements: the pods that
// share a node with more of their kin are not preferred, and times are
// compared exactly rather than in logarithmic buckets. First:
//
//  1. a pod not yet scheduled, before one that is;
//  2. Pending, then Unknown, then Running;
//  3. not ready, before ready;
//  4. a lower pod-deletion-cost annotation (default 0);
//  5. of two ready pods, the one ready for the shorter time;
//  6. the one whose containers restarted more;
//  7. the newer one;
//
// and by name, so that the choice does not depend on the cache's order.
func podsToDelete(pods []*corev1.Pod, n int) []*corev1.Pod {
	ranked := slices.Clone(pods)
	slices.SortFunc(ranked, deleteFirst)
	return ranked[:min(n, len(ranked))]
}

// deleteFirst orders a before b (negative) if a should be deleted first.
func deleteFirst(a, b *corev1.Pod) int {
	if c := cmpBool(a.Spec.NodeName != "", b.Spec.NodeName != ""); c != 0 {
		return c
	}
	phase := map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}
	if c := cmp.Compare(phase[a.Status.Phase], phase[b.Status.Phase]); c != 0 {
		return c
	}
	if c := cmpBool(podReady(a), podReady(b)); c != 0 {
		return c
	}
	if c := cmp.Compare(deletionCost(a), deletionCost(b)); c != 0 {
		return c
	}
	if podReady(a) && podReady(b) {
		// Ready more recently first.
		if c := podReadyCondition(b).LastTransitionTime.Compare(podReadyCondition(a).LastTransitionTime.Time); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(restarts(b), restarts(a)); c != 0 {
		return c
	}
	if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// deletionCost is pod's pod-deletion-cost; one that is not an int32 counts
// as 0, as in kube (where validation refuses it).
func deletionCost(pod *corev1.Pod) int32 {
	v, err := strconv.ParseInt(pod.Annotations[podDeletionCost], 10, 32)
	if err != nil {
		return 0
	}
	return int32(v)
}

// restarts is the most restarts of one of pod's containers.
func restarts(pod *corev1.Pod) int32 {
	var n int32
	for _, s := range pod.Status.ContainerStatuses {
		n = max(n, s.RestartCount)
	}
	return n
}
