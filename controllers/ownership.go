package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// podClaim is one controller's claim on the pods its selector matches:
// client is the controller's, owner the ReplicaSet or DaemonSet (of
// kind) that claims them, and get reads the owner from the API server.
type podClaim struct {
	client kubernetes.Interface
	owner  metav1.Object
	kind   schema.GroupVersionKind
	get    func(ctx context.Context) (metav1.Object, error)
}

// claimPods returns the pods of pods that the owner controls once its
// selector is applied, as kube's ControllerRefManager claims them:
//   - a pod the owner controls that the selector matches is kept; one
//     it no longer matches is released (its controller reference
//     removed);
//   - an orphan (no controller) that the selector matches is adopted,
//     unless the owner or the pod is being deleted;
//   - a pod another controller controls is never touched.
//
// A pod that is gone or replaced meanwhile is skipped; other failures
// are returned, joined, with the pods claimed so far.
func (c podClaim) claimPods(ctx context.Context, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	var claimed []*corev1.Pod
	var errs []error
	// Checked at most once per sync, and only if there is an orphan.
	var canAdopt error
	checked := false
	deleting := c.owner.GetDeletionTimestamp() != nil
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		matches := selector.Matches(labels.Set(pod.Labels))
		switch {
		case ref != nil && ref.UID == c.owner.GetUID():
			if matches {
				claimed = append(claimed, pod)
				continue
			}
			if deleting {
				// Its pods go with it; releasing them now would only
				// orphan them.
				continue
			}
			if err := c.release(ctx, pod); err != nil && !gone(err) {
				errs = append(errs, err)
			}
		case ref != nil:
			// Another controller's.
		case !matches || deleting || pod.DeletionTimestamp != nil:
		default:
			if !checked {
				canAdopt, checked = c.recheck(ctx), true
			}
			if canAdopt != nil {
				errs = append(errs, canAdopt)
				continue
			}
			err := c.adopt(ctx, pod)
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

// what names the owner in messages: "replicaset ns/name".
func (c podClaim) what() string { return strings.ToLower(c.kind.Kind) + " " + key(c.owner) }

// recheck makes sure, by reading the owner from the API server rather
// than the cache, that it still exists with its UID and is not being
// deleted before it adopts: a pod adopted by an owner the cache still
// holds but that is gone, or going, would name an owner that is not
// there.
func (c podClaim) recheck(ctx context.Context) error {
	fresh, err := c.get(ctx)
	if err != nil {
		return fmt.Errorf("recheck %s before adopting: %w", c.what(), err)
	}
	if fresh.GetUID() != c.owner.GetUID() {
		return fmt.Errorf("%s was re-created (uid %s, was %s); not adopting", c.what(), fresh.GetUID(), c.owner.GetUID())
	}
	if fresh.GetDeletionTimestamp() != nil {
		return fmt.Errorf("%s is being deleted; not adopting", c.what())
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

// adopt makes the owner the controller of pod, an orphan.
func (c podClaim) adopt(ctx context.Context, pod *corev1.Pod) error {
	var p ownerPatch
	p.Metadata.OwnerReferences = []any{metav1.NewControllerRef(c.owner, c.kind)}
	p.Metadata.UID = pod.UID
	if err := c.patchPod(ctx, pod, p); err != nil {
		return fmt.Errorf("adopt pod %s by %s: %w", key(pod), c.what(), err)
	}
	return nil
}

// release removes the owner's controller reference from pod.
func (c podClaim) release(ctx context.Context, pod *corev1.Pod) error {
	var p ownerPatch
	p.Metadata.OwnerReferences = []any{map[string]any{"$patch": "delete", "uid": c.owner.GetUID()}}
	p.Metadata.UID = pod.UID
	if err := c.patchPod(ctx, pod, p); err != nil {
		return fmt.Errorf("release pod %s from %s: %w", key(pod), c.what(), err)
	}
	return nil
}

func (c podClaim) patchPod(ctx context.Context, pod *corev1.Pod, p ownerPatch) error {
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
	return err
}

// gone reports whether a write to a pod failed because the pod is not
// the one it was meant for any more: deleted (404), or re-created under
// its name so that the UID precondition failed (409). The informer
// brings the change; there is nothing to retry.
func gone(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsConflict(err)
}
