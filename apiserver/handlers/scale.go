package handlers

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
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/trustplane/trustplane/apiserver/registry"
)

// The scale subresource of Deployments, ReplicaSets and StatefulSets, as kube-apiserver's
// scale storage serves it: GET answers an autoscaling/v1 Scale made from
// the object; PUT and PATCH (JSON, merge, strategic merge and server-side
// apply) change a Scale and carry its spec.replicas back to the object.
//
// Managed fields are tracked on the object, for spec.replicas: every write
// runs the Scale's field manager over the Scale, whose managedFields are
// the object's entries that own spec.replicas, converted to the Scale
// (managedfields.ScaleHandler), and the entries it leaves are converted
// back. So an apply of a Scale conflicts with whoever owns the object's
// spec.replicas, a forced one or a kubectl scale takes it over, with an
// entry of subresource "scale", and a later apply of the object conflicts
// with that manager in turn.

// scaleOf is the autoscaling/v1 Scale of a Deployment, ReplicaSet or
// StatefulSet.
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
	case *appsv1.StatefulSet:
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

func (h *Handler) getScale(w http.ResponseWriter, r *http.Request, q *scope) {
	obj := q.res.NewObject()
	if err := h.store.Get(r.Context(), q.res.GroupResource(), q.key(q.name), obj); err != nil {
		h.respond.Error(w, r, q.storageError(err, q.name))
		return
	}
	scale, err := scaleOf(obj)
	if err != nil {
		h.respond.Error(w, r, err)
		return
	}
	h.respond.Object(w, r, http.StatusOK, scale)
}

// replicasPaths maps each API version kube-apiserver serves a scalable
// resource in to where that version keeps the replicas, as its
// deployment, replicaset and statefulset storage do. A scale write keeps
// the object's managed fields entries of these versions only; they are
// all we write.
func replicasPaths(gr schema.GroupResource) managedfields.ResourcePathMappings {
	replicas := fieldpath.MakePathOrDie("spec", "replicas")
	versions := []string{"v1beta2", "v1"}
	if gr.Resource == "deployments" || gr.Resource == "statefulsets" {
		versions = append(versions, "v1beta1")
	}
	paths := managedfields.ResourcePathMappings{}
	for _, v := range versions {
		paths[appsv1.SchemeGroupVersion.Group+"/"+v] = replicas
	}
	return paths
}

// updateScaleRoute sets the replicas of a scalable object from
// the Scale of a PUT, whose resourceVersion, if set, is the precondition.
func (h *Handler) updateScaleRoute(q *scope) *writeRoute {
	decode := func(w http.ResponseWriter, r *http.Request) (*writeInput, error) {
		opts, err := updateOptions(r)
		if err != nil {
			return nil, err
		}
		obj, err := h.decodeKind(w, r, opts.FieldValidation, registry.ScaleKind, func() runtime.Object { return &autoscalingv1.Scale{} })
		if err != nil {
			return nil, err
		}
		return &writeInput{obj: obj, audited: obj, opts: opts, dry: isDryRun(opts.DryRun)}, nil
	}
	return h.scaleRoute(q, decode, func(_ http.ResponseWriter, r *http.Request, in *writeInput, current *autoscalingv1.Scale) (runtime.Object, error) {
		return h.patchers.scale.Update(current, in.obj, in.opts.(*metav1.UpdateOptions).FieldManager, r.UserAgent())
	})
}

// maxScalePatchBytes bounds a scale patch. A Scale is a few hundred
// bytes; a large patch of it can only be an attempt to make the merge
// costly.
const maxScalePatchBytes = 64 << 10

// patchScaleRoute patches the Scale of a scalable object with a
// JSON, merge (kubectl scale), strategic merge or apply patch (kubectl
// apply --server-side --subresource=scale), through the Scale's patch
// manager: fieldValidation applies to the fields of the Scale, and an
// apply that changes replicas another manager owns is a conflict unless
// forced.
func (h *Handler) patchScaleRoute(q *scope) *writeRoute {
	var p *patchRequest
	decode := func(_ http.ResponseWriter, r *http.Request) (in *writeInput, err error) {
		if p, err = h.readPatch(r); err != nil {
			return nil, err
		}
		if len(p.body) > maxScalePatchBytes {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("a scale patch is limited to %d bytes", maxScalePatchBytes))
		}
		return &writeInput{audited: p.audited(), opts: patchToUpdateOptions(p.opts), dry: p.dry}, nil
	}
	return h.scaleRoute(q, decode, func(w http.ResponseWriter, r *http.Request, _ *writeInput, current *autoscalingv1.Scale) (runtime.Object, error) {
		return applyPatch(w, r, h.patchers.scale, p, current)
	})
}

// scaleFunc makes the Scale a write stores from the request and the
// current Scale.
type scaleFunc func(w http.ResponseWriter, r *http.Request, in *writeInput, current *autoscalingv1.Scale) (runtime.Object, error)

// scaleRoute writes a scalable object's replicas through its
// Scale, on every attempt of the update, as kube's scale storage does:
// the current Scale is made from the stored object, with the managed
// fields of its replicas; next makes the new Scale from it; the new Scale
// is checked (its name, replicas and uid), and its replicas,
// resourceVersion and managed fields go back to the object. The answer is
// the Scale of the object written.
func (h *Handler) scaleRoute(q *scope, decode func(http.ResponseWriter, *http.Request) (*writeInput, error), next scaleFunc) *writeRoute {
	gr := q.res.GroupResource()
	merge := func(w http.ResponseWriter, r *http.Request, in *writeInput, old runtime.Object) (runtime.Object, error) {
		accessor, err := meta.Accessor(old)
		if err != nil {
			return nil, err
		}
		current, err := scaleOf(old)
		if err != nil {
			return nil, err
		}
		handler := managedfields.NewScaleHandler(accessor.GetManagedFields(), q.res.GVR.GroupVersion(), replicasPaths(gr))
		// The stored managed fields are the field manager's own writing:
		// failing to read them is the server's fault, a 500.
		if current.ManagedFields, err = handler.ToSubresource(); err != nil {
			return nil, fmt.Errorf("managed fields of %s %s/%s for its scale: %w", gr, q.namespace, q.name, err)
		}
		obj, err := next(w, r, in, current)
		if err != nil {
			return nil, err
		}
		scale, ok := obj.(*autoscalingv1.Scale)
		if !ok {
			return nil, fmt.Errorf("the Scale patch manager made a %T", obj)
		}
		if scale.Name != "" && scale.Name != q.name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", scale.Name, q.name))
		}
		if scale.Spec.Replicas < 0 {
			return nil, apierrors.NewInvalid(registry.ScaleKind.GroupKind(), q.name, field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0")})
		}
		if scale.UID != "" && scale.UID != current.UID {
			return nil, apierrors.NewConflict(schema.GroupResource{Group: gr.Group, Resource: gr.Resource + "/scale"}, q.name,
				fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", scale.UID, current.UID))
		}
		managed, err := handler.ToParent(scale.ManagedFields)
		if err != nil {
			return nil, fmt.Errorf("managed fields of the scale of %s %s/%s: %w", gr, q.namespace, q.name, err)
		}
		n := scale.Spec.Replicas
		switch o := old.(type) {
		case *appsv1.Deployment:
			o.Spec.Replicas = &n
		case *appsv1.ReplicaSet:
			o.Spec.Replicas = &n
		case *appsv1.StatefulSet:
			o.Spec.Replicas = &n
		default:
			return nil, fmt.Errorf("%T has no scale", old)
		}
		accessor.SetResourceVersion(scale.ResourceVersion)
		accessor.SetManagedFields(managed)
		return old, nil
	}
	route := h.existingRoute(q, decode, merge)
	route.respond = func(w http.ResponseWriter, r *http.Request, results []runtime.Object) {
		out, err := scaleOf(results[0])
		if err != nil {
			h.respond.Error(w, r, err)
			return
		}
		h.respond.Object(w, r, http.StatusOK, out)
	}
	return route
}
