package apiserver

import (
	"fmt"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/trustplane/trustplane/apiserver/patch"
)

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

// patchScale patches the Scale of a Deployment or ReplicaSet (kubectl
// scale sends a merge patch) and stores its replicas. fieldValidation
// applies as to any other patch, to the fields of the Scale.
func (s *Server) patchScale(w http.ResponseWriter, r *http.Request, q *restRequest) {
	p, err := s.readPatch(r)
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	obj := q.res.newObject()
	if err := s.store.Get(r.Context(), q.res.groupResource(), q.key(q.name), obj); err != nil {
		s.respond.error(w, r, q.storageError(err, q.name))
		return
	}
	current, err := scaleOf(obj)
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	scale, warnings, err := patchScaleObject(s.scalePatcher, current, p, r.UserAgent())
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	warn(w, warnings...)
	if scale.ResourceVersion == current.ResourceVersion {
		// A patch that does not name a resourceVersion is unconditional.
		scale.ResourceVersion = ""
	}
	s.writeScale(w, r, q, scale, patchToUpdateOptions(p.opts), p.dry)
}

const maxScalePatchBytes = 64 << 10

// patchScaleObject applies a JSON, merge or strategic merge patch to a
// Scale with m, the Scale's patch manager, which also checks the patch's
// options and its fields. A Scale has no managed fields: the replicas it
// sets are recorded on the object it scales.
func patchScaleObject(m *patch.Manager, current *autoscalingv1.Scale, p *patchRequest, userAgent string) (*autoscalingv1.Scale, []string, error) {
	// A Scale is a few hundred bytes; a large patch of it can only be an
	// attempt to make the merge costly.
	if len(p.body) > maxScalePatchBytes {
		return nil, nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("a scale patch is limited to %d bytes", maxScalePatchBytes))
	}
	if p.contentType == patch.Types[3] {
		return nil, nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", schema.GroupResource{}, "", "the scale subresource takes JSON, merge and strategic merge patches", 0, false)
	}
	obj, warnings, err := m.Patch(current, p.request(userAgent))
	if err != nil {
		return nil, nil, err
	}
	scale, ok := obj.(*autoscalingv1.Scale)
	if !ok {
		return nil, nil, fmt.Errorf("the Scale patch manager made a %T", obj)
	}
	return scale, warnings, nil
}
