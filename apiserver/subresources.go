package apiserver

import (
	"fmt"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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

// scaleOf is the autoscaling/v1 Scale of a Deployment or ReplicaSet.
func scaleOf(obj runtime.Object) (*autoscalingv1.Scale, error) {
	var (
		replicas, current int32
		selector          *metav1.LabelSelector
	)
	switch o := obj.(type) {
	case *appsv1.Deployment:
		replicas, current, selector = ptrValue(o.Spec.Replicas), o.Status.Replicas, o.Spec.Selector
	case *appsv1.ReplicaSet:
		replicas, current, selector = ptrValue(o.Spec.Replicas), o.Status.Replicas, o.Spec.Selector
	default:
		return nil, fmt.Errorf("%T has no scale", obj)
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, err
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: autoscalingv1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{
			Name:              accessor.GetName(),
			Namespace:         accessor.GetNamespace(),
			UID:               accessor.GetUID(),
			ResourceVersion:   accessor.GetResourceVersion(),
			CreationTimestamp: accessor.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: replicas},
		Status: autoscalingv1.ScaleStatus{Replicas: current, Selector: sel.String()},
	}, nil
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func (s *Server) getScale(w http.ResponseWriter, r *http.Request, q *restRequest) {
	obj := q.res.newObject()
	if err := s.store.Get(r.Context(), q.res.groupResource(), q.key(q.name), obj); err != nil {
		s.respond.error(w, r, q.storageError(err, q.name))
		return
	}
	scale, err := scaleOf(obj)
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	s.respond.object(w, r, http.StatusOK, scale)
}

// updateScale sets the replicas of a Deployment or ReplicaSet from a
// Scale, whose resourceVersion, if set, is the precondition.
func (s *Server) updateScale(w http.ResponseWriter, r *http.Request, q *restRequest) {
	opts, err := updateOptions(r)
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	obj, err := s.decodeKind(w, r, opts.FieldValidation, scaleKind, func() runtime.Object { return &autoscalingv1.Scale{} })
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	auditRequestObject(r.Context(), obj)
	s.writeScale(w, r, q, obj.(*autoscalingv1.Scale), opts, isDryRun(opts.DryRun))
}

func (s *Server) writeScale(w http.ResponseWriter, r *http.Request, q *restRequest, scale *autoscalingv1.Scale, opts runtime.Object, dry bool) {
	if scale.Spec.Replicas < 0 {
		s.respond.error(w, r, apierrors.NewInvalid(scaleKind.GroupKind(), q.name, field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0")}))
		return
	}
	if scale.Name != "" && scale.Name != q.name {
		s.respond.error(w, r, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", scale.Name, q.name)))
		return
	}
	build := func(old runtime.Object) (runtime.Object, error) {
		n := scale.Spec.Replicas
		switch o := old.(type) {
		case *appsv1.Deployment:
			o.Spec.Replicas = &n
			o.ResourceVersion = scale.ResourceVersion
		case *appsv1.ReplicaSet:
			o.Spec.Replicas = &n
			o.ResourceVersion = scale.ResourceVersion
		}
		return old, nil
	}
	s.writeUpdateThen(w, r, q, build, opts, dry, func(obj runtime.Object) {
		out, err := scaleOf(obj)
		if err != nil {
			s.respond.error(w, r, err)
			return
		}
		s.respond.object(w, r, http.StatusOK, out)
	})
}
