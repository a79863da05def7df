package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
)

// A StatefulSet's or DaemonSet's ControllerRevisions record its
// templates, as kube's do: each holds, as data, the patch
// {"spec":{"template":{..., "$patch":"replace"}}} that gives the set
// that template (what `kubectl rollout undo` applies), is named
// <set>-<hash of the data and collisionCount> and numbered in the order
// the templates were in use. Pods carry their revision in the
// controller-revision-hash label.

// revisionHashLabel is the hash label kube puts on a revision.
const revisionHashLabel = "controller.kubernetes.io/hash"

// revisionOwner is a set whose templates are recorded as revisions.
type revisionOwner struct {
	obj      metav1.Object
	kind     schema.GroupVersionKind
	template *corev1.PodTemplateSpec
	// collisionCount is the set's status.collisionCount.
	collisionCount *int32
	// current is the name of the revision the set last finished rolling
	// out, "" if none.
	current string
	// historyLimit is spec.revisionHistoryLimit.
	historyLimit *int32
	// saveCollision writes a new status.collisionCount of the set, so
	// that its next revision's hash differs.
	saveCollision func(ctx context.Context, count int32) error
}

// revisionData is the data of a revision of set's template.
func revisionData(tmpl *corev1.PodTemplateSpec) ([]byte, error) {
	raw, err := json.Marshal(tmpl)
	if err != nil {
		return nil, err
	}
	var t map[string]any
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, err
	}
	t["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": t}})
}

// revisionTemplate is the pod template a revision records.
func revisionTemplate(r *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var d struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(r.Data.Raw, &d); err != nil {
		return nil, fmt.Errorf("revision %s: %w", key(r), err)
	}
	return &d.Spec.Template, nil
}

// revisionHash is kube's hashControllerRevision: FNV-32 of the data
// and, if set, the collision count, safely encoded.
func revisionHash(data []byte, collisionCount *int32) string {
	h := fnv.New32()
	h.Write(data)
	if collisionCount != nil {
		h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// ownedRevisions are the revisions set controls, oldest first.
func ownedRevisions(lister appslisters.ControllerRevisionLister, set metav1.Object) ([]*appsv1.ControllerRevision, error) {
	all, err := lister.ControllerRevisions(set.GetNamespace()).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*appsv1.ControllerRevision
	for _, r := range all {
		if ref := metav1.GetControllerOf(r); ref != nil && ref.UID == set.GetUID() {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *appsv1.ControllerRevision) int {
		if a.Revision != b.Revision {
			return int(a.Revision - b.Revision)
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return out, nil
}

// sameTemplate reports whether r records tmpl.
func sameTemplate(r *appsv1.ControllerRevision, tmpl *corev1.PodTemplateSpec) bool {
	t, err := revisionTemplate(r)
	return err == nil && equality.Semantic.DeepEqual(t, tmpl)
}

// revisionsOf returns set's current and update revisions, recording the
// update revision if no revision holds its template, or renumbering the
// one that does as the latest (a rollback to an earlier template). A
// revision of set's name and hash that records another template is a
// collision: the collision count is raised in the set's status, and the
// sync fails, to be retried with the next hash.
func revisionsOf(ctx context.Context, client kubernetes.Interface, o revisionOwner, revs []*appsv1.ControllerRevision) (current, update *appsv1.ControllerRevision, err error) {
	set := o.obj
	revisions := client.AppsV1().ControllerRevisions(set.GetNamespace())
	next := int64(1)
	if len(revs) > 0 {
		next = revs[len(revs)-1].Revision + 1
	}
	for _, r := range revs {
		if sameTemplate(r, o.template) {
			update = r
		}
	}
	switch {
	case update != nil && update.Revision != next-1:
		// An earlier template again: it becomes the latest revision.
		r := update.DeepCopy()
		r.Revision = next
		if update, err = revisions.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
			return nil, nil, fmt.Errorf("renumber revision %s: %w", key(r), err)
		}
	case update == nil:
		data, err := revisionData(o.template)
		if err != nil {
			return nil, nil, err
		}
		hash := revisionHash(data, o.collisionCount)
		lbls := map[string]string{}
		for k, v := range o.template.Labels {
			lbls[k] = v
		}
		lbls[revisionHashLabel] = hash
		r := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{
				Name:            set.GetName() + "-" + hash,
				Namespace:       set.GetNamespace(),
				Labels:          lbls,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, o.kind)},
			},
			Data:     runtime.RawExtension{Raw: data},
			Revision: next,
		}
		created, err := revisions.Create(ctx, r, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			existing, gerr := revisions.Get(ctx, r.Name, metav1.GetOptions{})
			if gerr != nil {
				return nil, nil, gerr
			}
			if ref := metav1.GetControllerOf(existing); ref != nil && ref.UID == set.GetUID() && sameTemplate(existing, o.template) {
				// Ours, not yet in the cache.
				return nil, nil, fmt.Errorf("revision %s not yet observed", key(r))
			}
			n := int32(0)
			if o.collisionCount != nil {
				n = *o.collisionCount
			}
			n++
			err := fmt.Errorf("revision %s: hash collision, collisionCount now %d", key(r), n)
			return nil, nil, errors.Join(err, o.saveCollision(ctx, n))
		}
		if err != nil {
			return nil, nil, fmt.Errorf("create revision %s: %w", key(r), err)
		}
		update = created
	}
	current = update
	for _, r := range revs {
		if r.Name == o.current {
			current = r
		}
	}
	return current, update, nil
}

// truncateHistory deletes the oldest revisions beyond
// revisionHistoryLimit that are neither current, nor the update, nor
// used by a pod (live, by name).
func truncateHistory(ctx context.Context, client kubernetes.Interface, o revisionOwner, revs []*appsv1.ControllerRevision, live map[string]bool) error {
	var old []*appsv1.ControllerRevision
	for _, r := range revs {
		if !live[r.Name] {
			old = append(old, r)
		}
	}
	limit := 10
	if o.historyLimit != nil {
		limit = int(*o.historyLimit)
	}
	for _, r := range old[:max(len(old)-limit, 0)] {
		err := client.AppsV1().ControllerRevisions(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(r.UID))})
		if err != nil && !gone(err) {
			return fmt.Errorf("delete revision %s: %w", key(r), err)
		}
	}
	return nil
}

// writeSetStatus writes a set's status, through update, onto withStatus's
// copy of set. The cache often lags the controller's own last status
// write: on a conflict the set is read again with get, and the status
// written onto it if it is still the same set of the same generation;
// else the informer brings the change, and another sync. withStatus keeps
// the copy's own collisionCount, which revisionsOf writes.
func writeSetStatus[T metav1.Object](ctx context.Context, kind string, set T, withStatus func(T) T,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error)) error {
	_, err := update(ctx, withStatus(set), metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		fresh, gerr := get(ctx, set.GetName(), metav1.GetOptions{})
		if gerr != nil || fresh.GetUID() != set.GetUID() || fresh.GetGeneration() != set.GetGeneration() {
			return err
		}
		_, err = update(ctx, withStatus(fresh), metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("update status of %s %s: %w", kind, key(set), err)
	}
	return nil
}
