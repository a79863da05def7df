package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// claimPods returns the pods of pods that rs controls once its selector
// is applied, as kube's ControllerRefManager claims them:
//   - a pod rs controls that the selector matches is kept; one it no
//     longer matches is released (its controller reference removed);
//   - an orphan (no controller) that the selector matches is adopted,
//     unless rs or the pod is being deleted;
//   - a pod another controller controls is never touched.
//
// A pod that is gone or replaced meanwhile is skipped; other failures
// are returned, joined, with the pods claimed so far.
func (rsc *replicaSetController) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	var claimed []*corev1.Pod
	var errs []error
	// Checked at most once per sync, and only if there is an orphan.
	var canAdopt error
	checked := false
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		matches := selector.Matches(labels.Set(pod.Labels))
		switch {
		case ref != nil && ref.UID == rs.UID:
			if matches {
				claimed = append(claimed, pod)
				continue
			}
			if rs.DeletionTimestamp != nil {
				// Its pods go with it; releasing them now would only
				// orphan them.
				continue
			}
			if err := rsc.release(ctx, rs, pod); err != nil && !gone(err) {
				errs = append(errs, err)
			}
		case ref != nil:
			// Another controller's.
		case !matches || rs.DeletionTimestamp != nil || pod.DeletionTimestamp != nil:
		default:
			if !checked {
				canAdopt, checked = rsc.recheck(ctx, rs), true
			}
			if canAdopt != nil {
				errs = append(errs, canAdopt)
				continue
			}
			err := rsc.adopt(ctx, rs, pod)
			switch {
			case err == nil:
				claimed = append(claimed, pod)
			case !gone(err):
				errs = append(errs, err)
			}
		}
	}
	return claimed, errors.Join(errs...)
}

// recheck makes sure, by reading rs from the API server rather than the
// cache, that rs still exists with its UID and is not being deleted
// before it adopts: a pod adopted by a ReplicaSet the cache still holds
// but that is gone, or going, would name an owner that is not there.
func (rsc *replicaSetController) recheck(ctx context.Context, rs *appsv1.ReplicaSet) error {
	fresh, err := rsc.client.AppsV1().ReplicaSets(rs.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("recheck replicaset %s before adopting: %w", key(rs), err)
	}
	if fresh.UID != rs.UID {
		return fmt.Errorf("replicaset %s was re-created (uid %s, was %s); not adopting", key(rs), fresh.UID, rs.UID)
	}
	if fresh.DeletionTimestamp != nil {
		return fmt.Errorf("replicaset %s is being deleted; not adopting", key(rs))
	}
	return nil
}

// ownerPatch is the strategic merge patch of a pod's ownerReferences:
// the list merges by uid, and metadata.uid makes the pod's own UID a
// precondition, so that a pod re-created under the name is not touched.
type ownerPatch struct {
	Metadata struct {
		OwnerReferences []any     `json:"ownerReferences"`
		UID             types.UID `json:"uid"`
	} `json:"metadata"`
}

// adopt makes rs the controller of pod, an orphan.
func (rsc *replicaSetController) adopt(ctx context.Context, rs *appsv1.ReplicaSet, pod *corev1.Pod) error {
	var p ownerPatch
	p.Metadata.OwnerReferences = []any{metav1.NewControllerRef(rs, replicaSetKind)}
	p.Metadata.UID = pod.UID
	if err := rsc.patchPod(ctx, pod, p); err != nil {
		return fmt.Errorf("adopt pod %s by replicaset %s: %w", key(pod), key(rs), err)
	}
	return nil
}

// release removes rs's controller reference from pod.
func (rsc *replicaSetController) release(ctx context.Context, rs *appsv1.ReplicaSet, pod *corev1.Pod) error {
	var p ownerPatch
	p.Metadata.OwnerReferences = []any{map[string]any{"$patch": "delete", "uid": rs.UID}}
	p.Metadata.UID = pod.UID
	if err := rsc.patchPod(ctx, pod, p); err != nil {
		return fmt.Errorf("release pod %s from replicaset %s: %w", key(pod), key(rs), err)
	}
	return nil
}

func (rsc *replicaSetController) patchPod(ctx context.Context, pod *corev1.Pod, p ownerPatch) error {
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = rsc.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
	return err
}

// gone reports whether a write to a pod failed because the pod is not
// the one it was meant for any more: deleted (404), or re-created under
// its name so that the UID precondition failed (409). The informer
// brings the change; there is nothing to retry.
func gone(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsConflict(err)
}
