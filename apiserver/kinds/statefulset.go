package kinds

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultStatefulSet sets kube's apps/v1 defaults on s: replicas 1,
// podManagementPolicy OrderedReady, a RollingUpdate strategy with
// partition 0, revisionHistoryLimit 10, a PVC retention policy of Retain
// on deletion and scale-down, and the pod template defaults (see
// DefaultPodTemplateSpec).
func DefaultStatefulSet(s *appsv1.StatefulSet) {
	if s == nil {
		return
	}
	spec := &s.Spec
	if spec.Replicas == nil {
		spec.Replicas = int32Ptr(1)
	}
	if spec.PodManagementPolicy == "" {
		spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
	}
	if spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
		if spec.UpdateStrategy.RollingUpdate.Partition == nil {
			spec.UpdateStrategy.RollingUpdate.Partition = int32Ptr(0)
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = int32Ptr(10)
	}
	if spec.PersistentVolumeClaimRetentionPolicy == nil {
		spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	p := spec.PersistentVolumeClaimRetentionPolicy
	if p.WhenDeleted == "" {
		p.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p.WhenScaled == "" {
		p.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	DefaultPodTemplateSpec(&spec.Template)
}

// ValidateStatefulSet validates a stateful set on create (old == nil) or
// update, as kube's apps validation does: replicas, minReadySeconds,
// revisionHistoryLimit, ordinals.start and partition not negative; a
// podManagementPolicy and an update strategy kube knows (no rollingUpdate
// with OnDelete); a non-empty selector that selects a valid template
// whose pods restart Always. On update only replicas, ordinals, the
// template, the update strategy, revisionHistoryLimit, the PVC retention
// policy and minReadySeconds may change.
//
// volumeClaimTemplates are refused: this server serves no
// PersistentVolumeClaims, so a set that needs them could never run its
// pods, and a claim template accepted but ignored would be a lie.
func ValidateStatefulSet(s, old *appsv1.StatefulSet) field.ErrorList {
	if s == nil {
		s = &appsv1.StatefulSet{}
	}
	spec := &s.Spec
	p := field.NewPath("spec")
	errs := apivalidation.ValidateNonnegativeField(int64(int32Value(spec.Replicas)), p.Child("replicas"))
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*spec.RevisionHistoryLimit), p.Child("revisionHistoryLimit"))...)
	}
	if spec.Ordinals != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(spec.Ordinals.Start), p.Child("ordinals", "start"))...)
	}
	switch spec.PodManagementPolicy {
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	case "":
		errs = append(errs, field.Required(p.Child("podManagementPolicy"), ""))
	default:
		errs = append(errs, field.Invalid(p.Child("podManagementPolicy"), spec.PodManagementPolicy,
			"must be 'OrderedReady' or 'Parallel'"))
	}
	errs = append(errs, validateStatefulSetUpdateStrategy(&spec.UpdateStrategy, p.Child("updateStrategy"))...)
	if len(spec.VolumeClaimTemplates) > 0 {
		errs = append(errs, field.Forbidden(p.Child("volumeClaimTemplates"), "this server serves no persistentvolumeclaims"))
	}
	errs = append(errs, validateSelectorAndTemplate(spec.Selector, &spec.Template, p)...)
	if old != nil {
		// kube's rule: everything else in the spec is fixed at creation.
		a, b := spec.DeepCopy(), old.Spec.DeepCopy()
		for _, x := range []*appsv1.StatefulSetSpec{a, b} {
			x.Replicas, x.Ordinals, x.Template, x.UpdateStrategy = nil, nil, b.Template, appsv1.StatefulSetUpdateStrategy{}
			x.RevisionHistoryLimit, x.PersistentVolumeClaimRetentionPolicy, x.MinReadySeconds = nil, nil, 0
		}
		if !reflect.DeepEqual(a, b) {
			errs = append(errs, field.Forbidden(p, "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))
		}
	}
	return errs
}

func validateStatefulSetUpdateStrategy(s *appsv1.StatefulSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	case appsv1.OnDeleteStatefulSetStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Invalid(fldPath.Child("rollingUpdate"), s.RollingUpdate,
				"only allowed for updateStrategy 'RollingUpdate'")}
		}
		return nil
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if s.RollingUpdate == nil {
			return nil
		}
		var errs field.ErrorList
		if s.RollingUpdate.Partition != nil {
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*s.RollingUpdate.Partition), fldPath.Child("rollingUpdate", "partition"))...)
		}
		if s.RollingUpdate.MaxUnavailable != nil {
			// kube's MaxUnavailableStatefulSet is an alpha feature, off by
			// default, and so is it here: one pod at a time.
			errs = append(errs, field.Forbidden(fldPath.Child("rollingUpdate", "maxUnavailable"), "not supported: pods are updated one at a time"))
		}
		return errs
	}
	return field.ErrorList{field.Invalid(fldPath, s, "must be 'RollingUpdate' or 'OnDelete'")}
}

// ValidateStatefulSetStatusUpdate validates an update through the status
// subresource: counts not negative, none above replicas, available not
// above ready, and observedGeneration and collisionCount never lower.
func ValidateStatefulSetStatusUpdate(s, old *appsv1.StatefulSet) field.ErrorList {
	if s == nil {
		s = &appsv1.StatefulSet{}
	}
	st := &s.Status
	p := field.NewPath("status")
	var errs field.ErrorList
	for _, c := range []struct {
		name  string
		value int64
	}{
		{"replicas", int64(st.Replicas)},
		{"readyReplicas", int64(st.ReadyReplicas)},
		{"currentReplicas", int64(st.CurrentReplicas)},
		{"updatedReplicas", int64(st.UpdatedReplicas)},
		{"availableReplicas", int64(st.AvailableReplicas)},
		{"observedGeneration", st.ObservedGeneration},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(c.value, p.Child(c.name))...)
	}
	if st.CollisionCount != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*st.CollisionCount), p.Child("collisionCount"))...)
	}
	const msg = "cannot be greater than status.replicas"
	for _, c := range []struct {
		name  string
		value int32
	}{{"readyReplicas", st.ReadyReplicas}, {"currentReplicas", st.CurrentReplicas}, {"updatedReplicas", st.UpdatedReplicas}} {
		if c.value > st.Replicas {
			errs = append(errs, field.Invalid(p.Child(c.name), c.value, msg))
		}
	}
	if st.AvailableReplicas > st.ReadyReplicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), st.AvailableReplicas, "cannot be greater than status.readyReplicas"))
	}
	if old != nil {
		if st.ObservedGeneration < old.Status.ObservedGeneration {
			errs = append(errs, field.Invalid(p.Child("observedGeneration"), st.ObservedGeneration, "cannot be decremented"))
		}
		prev := old.Status.CollisionCount
		if prev != nil && (st.CollisionCount == nil || *st.CollisionCount < *prev) {
			errs = append(errs, field.Invalid(p.Child("collisionCount"), int32Value(st.CollisionCount), "cannot be decremented"))
		}
	}
	return errs
}
