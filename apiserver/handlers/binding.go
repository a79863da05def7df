package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/trustplane/trustplane/apiserver/storage"
)

// bindingRoute assigns a pod to a node (pods/binding): once, and only a
// pod that no node has yet. Admission sees the create of a Binding, as in
// kube-apiserver; storage is the update of the pod it names.
func (h *Handler) bindingRoute(q *scope) *writeRoute {
	bindingKind := corev1.SchemeGroupVersion.WithKind("Binding")
	return &writeRoute{
		op:     admission.Create,
		kind:   bindingKind,
		decode: h.decodeCreate(bindingKind, func() runtime.Object { return &corev1.Binding{} }),
		build:  takeRequestObject,
		validate: func(_ context.Context, _ *writeInput, a *attempt) error {
			b := a.obj.(*corev1.Binding)
			var errs field.ErrorList
			if b.Name != "" && b.Name != q.name {
				errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), b.Name, "must match the pod's name"))
			}
			if b.Target.Kind != "" && b.Target.Kind != "Node" {
				errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", ""}))
			}
			if b.Target.Name == "" {
				errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
			}
			// The binding's annotations land on the pod: they get the
			// pod's metadata rules.
			errs = append(errs, apimachineryvalidation.ValidateAnnotations(b.Annotations, field.NewPath("metadata", "annotations"))...)
			if len(errs) > 0 {
				return apierrors.NewInvalid(bindingKind.GroupKind(), b.Name, errs)
			}
			return nil
		},
		store: func(ctx context.Context, in *writeInput, a *attempt) (runtime.Object, error) {
			return nil, h.assignPod(ctx, q, a.obj.(*corev1.Binding), in.dry)
		},
		respond: func(w http.ResponseWriter, r *http.Request, _ []runtime.Object) {
			// Bound: kube answers a Status of success with 201.
			h.respond.Object(w, r, http.StatusCreated, &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated})
		},
	}
}

// assignPod sets the node of the pod b binds, if it has none. When the pod
// changes meanwhile the write is retried, unless b names the
// resourceVersion.
func (h *Handler) assignPod(ctx context.Context, q *scope, b *corev1.Binding, dry bool) error {
	gr := q.res.GroupResource()
	obj, err := h.load(ctx, q, q.name)
	if err != nil {
		return q.storageError(err, q.name)
	}
	old := obj.DeepCopyObject()
	p := obj.(*corev1.Pod)
	if p.DeletionTimestamp != nil {
		return apierrors.NewConflict(gr, q.name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", q.name))
	}
	if p.Spec.NodeName != "" {
		return apierrors.NewConflict(gr, q.name, fmt.Errorf("pod %s is already assigned to node %q", q.name, p.Spec.NodeName))
	}
	if b.UID != "" && b.UID != p.UID {
		return apierrors.NewConflict(gr, q.name, fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", b.UID, p.UID))
	}
	if b.ResourceVersion != "" && b.ResourceVersion != p.ResourceVersion {
		return q.storageError(storage.ErrConflict, q.name)
	}
	p.Spec.NodeName = b.Target.Name
	for k, v := range b.Annotations {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
	setPodCondition(&p.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
	if dry {
		return nil
	}
	rev, _ := storage.ParseResourceVersion(p.ResourceVersion)
	err = h.save(ctx, q, q.name, rev, old, p)
	if errors.Is(err, storage.ErrConflict) && b.ResourceVersion == "" {
		return &retryError{err: q.storageError(err, q.name)}
	}
	if err != nil {
		return q.storageError(err, q.name)
	}
	return nil
}

func setPodCondition(status *corev1.PodStatus, c corev1.PodCondition) {
	for i := range status.Conditions {
		if status.Conditions[i].Type == c.Type {
			if status.Conditions[i].Status != c.Status {
				status.Conditions[i] = c
			}
			return
		}
	}
	status.Conditions = append(status.Conditions, c)
}
