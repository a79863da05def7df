package kinds

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultReplicaSet sets kube's defaults on rs: replicas 1 and the pod
// template defaults (see DefaultPodTemplateSpec).
func DefaultReplicaSet(rs *appsv1.ReplicaSet) {
	if rs == nil {
		return
	}
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = int32Ptr(1)
	}
	DefaultPodTemplateSpec(&rs.Spec.Template)
}

// ValidateReplicaSet validates a replica set on create (old == nil) or
// update: replicas and minReadySeconds not negative, a non-empty selector
// that selects the template's labels, and a valid template whose pods
// restart Always and have no activeDeadlineSeconds. On update the selector
// may not change (apps/v1).
func ValidateReplicaSet(rs, old *appsv1.ReplicaSet) field.ErrorList {
	if rs == nil {
		rs = &appsv1.ReplicaSet{}
	}
	spec := &rs.Spec
	p := field.NewPath("spec")
	errs := apivalidation.ValidateNonnegativeField(int64(int32Value(spec.Replicas)), p.Child("replicas"))
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	errs = append(errs, validateSelectorAndTemplate(spec.Selector, &spec.Template, p)...)
	if old != nil {
		errs = append(errs, apivalidation.ValidateImmutableField(spec.Selector, old.Spec.Selector, p.Child("selector"))...)
	}
	return errs
}

// validateSelectorAndTemplate holds what ReplicaSets and Deployments share:
// the selector, and a template that it selects. kube's message about an
// empty selector says "deployment" for both kinds.
func validateSelectorAndTemplate(selector *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	selPath := specPath.Child("selector")
	if selector == nil {
		errs = append(errs, field.Required(selPath, ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(selector, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
		if len(selector.MatchLabels)+len(selector.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(selPath, selector, "empty selector is invalid for deployment"))
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return append(errs, field.Invalid(selPath, selector, "invalid label selector"))
	}
	return append(errs, validateReplicatedTemplate(tmpl, sel, specPath.Child("template"))...)
}

// validateReplicatedTemplate checks a template that a controller stamps
// out many pods from.
func validateReplicatedTemplate(tmpl *corev1.PodTemplateSpec, selector labels.Selector, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !selector.Empty() && !selector.Matches(labels.Set(tmpl.Labels)) {
		errs = append(errs, field.Invalid(fldPath.Child("metadata", "labels"), tmpl.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, validatePodTemplateSpec(tmpl, fldPath)...)
	if tmpl.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(fldPath.Child("spec", "restartPolicy"), tmpl.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if tmpl.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return errs
}

// validatePodTemplateSpec checks a pod template: its labels and annotations
// (reported at template.labels and template.annotations, as in kube) and
// its spec.
func validatePodTemplateSpec(tmpl *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(tmpl.Labels, fldPath.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(tmpl.Annotations, fldPath.Child("annotations"))...)
	specPath := fldPath.Child("spec")
	errs = append(errs, validatePodSpec(&tmpl.Spec, podSpecOptions{}, specPath)...)
	if len(tmpl.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// ValidateReplicaSetStatusUpdate validates an update through the status
// subresource: counts not negative and consistent with each other.
func ValidateReplicaSetStatusUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	if rs == nil {
		rs = &appsv1.ReplicaSet{}
	}
	s := &rs.Status
	p := field.NewPath("status")
	var errs field.ErrorList
	for _, c := range []struct {
		name  string
		value int64
	}{
		{"replicas", int64(s.Replicas)},
		{"fullyLabeledReplicas", int64(s.FullyLabeledReplicas)},
		{"readyReplicas", int64(s.ReadyReplicas)},
		{"availableReplicas", int64(s.AvailableReplicas)},
		{"observedGeneration", s.ObservedGeneration},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(c.value, p.Child(c.name))...)
	}
	if s.TerminatingReplicas != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*s.TerminatingReplicas), p.Child("terminatingReplicas"))...)
	}
	const msg = "cannot be greater than status.replicas"
	if s.FullyLabeledReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("fullyLabeledReplicas"), s.FullyLabeledReplicas, msg))
	}
	if s.ReadyReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("readyReplicas"), s.ReadyReplicas, msg))
	}
	if s.AvailableReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, msg))
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return errs
}

// ReplicaSetFields returns the fields a replica set can be selected by:
// metadata.name, metadata.namespace and status.replicas.
func ReplicaSetFields(rs *appsv1.ReplicaSet) fields.Set {
	if rs == nil {
		rs = &appsv1.ReplicaSet{}
	}
	return fields.Set{
		"metadata.name":      rs.Name,
		"metadata.namespace": rs.Namespace,
		"status.replicas":    strconv.Itoa(int(rs.Status.Replicas)),
	}
}

// int32Value reads an optional count the way kube's conversion does: unset
// is 0.
func int32Value(v *int32) int32 {
	if v == nil {
		return 0
	}
	return *v
}
