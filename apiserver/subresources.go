package apiserver

import (
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// bind assigns a pod to a node (pods/binding): once, and only a pod that
// no node has yet.
func (s *Server) bind(w http.ResponseWriter, r *http.Request, q *restRequest) {
	opts, err := createOptions(r)
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	obj, err := s.decodeKind(w, r, opts.FieldValidation, corev1.SchemeGroupVersion.WithKind("Binding"), func() runtime.Object { return &corev1.Binding{} })
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	auditRequestObject(r.Context(), obj)
	b := obj.(*corev1.Binding)
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
	// The binding's annotations land on the pod: they get the pod's
	// metadata rules.
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(b.Annotations, field.NewPath("metadata", "annotations"))...)
	if len(errs) > 0 {
		s.respond.error(w, r, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), b.Name, errs))
		return
	}
	build := func(old runtime.Object) (runtime.Object, error) {
		p := old.(*corev1.Pod)
		if p.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(q.res.groupResource(), q.name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", q.name))
		}
		if p.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(q.res.groupResource(), q.name, fmt.Errorf("pod %s is already assigned to node %q", q.name, p.Spec.NodeName))
		}
		if b.UID != "" && b.UID != p.UID {
			return nil, apierrors.NewConflict(q.res.groupResource(), q.name, fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", b.UID, p.UID))
		}
		p.Spec.NodeName = b.Target.Name
		for k, v := range b.Annotations {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[k] = v
		}
		setPodCondition(&p.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
		p.ResourceVersion = b.ResourceVersion
		return p, nil
	}
	// Bound: kube answers a Status of success with 201.
	s.writeUpdateThen(w, r, q, build, opts, isDryRun(opts.DryRun), func(runtime.Object) {
		s.respond.object(w, r, http.StatusCreated, &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated})
	})
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
