package kinds

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultDeployment sets kube's apps/v1 defaults on d: replicas 1, a
// RollingUpdate strategy with maxUnavailable and maxSurge 25%,
// revisionHistoryLimit 10, progressDeadlineSeconds 600, and the pod
// template defaults (see DefaultPodTemplateSpec).
func DefaultDeployment(d *appsv1.Deployment) {
	if d == nil {
		return
	}
	spec := &d.Spec
	if spec.Replicas == nil {
		spec.Replicas = int32Ptr(1)
	}
	strategy := &spec.Strategy
	if strategy.Type == "" {
		strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if strategy.RollingUpdate == nil {
			strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if strategy.RollingUpdate.MaxUnavailable == nil {
			v := intstr.FromString("25%")
			strategy.RollingUpdate.MaxUnavailable = &v
		}
		if strategy.RollingUpdate.MaxSurge == nil {
			v := intstr.FromString("25%")
			strategy.RollingUpdate.MaxSurge = &v
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = int32Ptr(10)
	}
	if spec.ProgressDeadlineSeconds == nil {
		spec.ProgressDeadlineSeconds = int32Ptr(600)
	}
	DefaultPodTemplateSpec(&spec.Template)
}

// ValidateDeployment validates a deployment on create (old == nil) or
// update: replicas not negative; a non-empty selector that selects the
// template's labels and, on update, does not change (apps/v1); a valid
// template whose pods restart Always; a strategy of Recreate (without
// rollingUpdate) or RollingUpdate whose maxSurge and maxUnavailable are
// non-negative integers or percentages, not both 0, with maxUnavailable at
// most 100%; minReadySeconds and revisionHistoryLimit not negative; and
// progressDeadlineSeconds above minReadySeconds.
func ValidateDeployment(d, old *appsv1.Deployment) field.ErrorList {
	if d == nil {
		d = &appsv1.Deployment{}
	}
	spec := &d.Spec
	p := field.NewPath("spec")
	errs := apivalidation.ValidateNonnegativeField(int64(int32Value(spec.Replicas)), p.Child("replicas"))
	errs = append(errs, validateSelectorAndTemplate(spec.Selector, &spec.Template, p)...)
	errs = append(errs, validateDeploymentStrategy(&spec.Strategy, p.Child("strategy"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		// Zero is valid: keep no old replica sets.
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*spec.RevisionHistoryLimit), p.Child("revisionHistoryLimit"))...)
	}
	if spec.ProgressDeadlineSeconds != nil {
		deadlinePath := p.Child("progressDeadlineSeconds")
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*spec.ProgressDeadlineSeconds), deadlinePath)...)
		if *spec.ProgressDeadlineSeconds <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(deadlinePath, spec.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	if old != nil {
		errs = append(errs, apivalidation.ValidateImmutableField(spec.Selector, old.Spec.Selector, p.Child("selector"))...)
	}
	return errs
}

func validateDeploymentStrategy(s *appsv1.DeploymentStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(fldPath.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")}
		}
		return nil
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		return validateRollingUpdate(s.RollingUpdate, fldPath.Child("rollingUpdate"))
	}
	return field.ErrorList{field.NotSupported(fldPath, s, []appsv1.DeploymentStrategyType{
		appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType})}
}

func validateRollingUpdate(r *appsv1.RollingUpdateDeployment, fldPath *field.Path) field.ErrorList {
	var unavailable, surge intstr.IntOrString
	if r.MaxUnavailable != nil {
		unavailable = *r.MaxUnavailable
	}
	if r.MaxSurge != nil {
		surge = *r.MaxSurge
	}
	errs := validateIntOrPercent(unavailable, fldPath.Child("maxUnavailable"))
	errs = append(errs, validateIntOrPercent(surge, fldPath.Child("maxSurge"))...)
	if intOrPercentValue(unavailable) == 0 && intOrPercentValue(surge) == 0 {
		// Both zero would leave the rollout no room to move.
		errs = append(errs, field.Invalid(fldPath.Child("maxUnavailable"), unavailable, "may not be 0 when `maxSurge` is 0"))
	}
	if v, ok := percentValue(unavailable); ok && v > 100 {
		errs = append(errs, field.Invalid(fldPath.Child("maxUnavailable"), unavailable, "must not be greater than 100%"))
	}
	return errs
}

func validateIntOrPercent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	switch v.Type {
	case intstr.String:
		var errs field.ErrorList
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(fldPath, v, msg))
		}
		return errs
	case intstr.Int:
		return apivalidation.ValidateNonnegativeField(int64(v.IntValue()), fldPath)
	}
	return field.ErrorList{field.Invalid(fldPath, v, "must be an integer or percentage (e.g '5%%')")}
}

// percentValue returns the number in a valid percentage ("25%" is 25).
func percentValue(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(validation.IsValidPercent(v.StrVal)) != 0 {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	return n, err == nil
}

func intOrPercentValue(v intstr.IntOrString) int {
	if n, ok := percentValue(v); ok {
		return n
	}
	return v.IntValue()
}

// ValidateDeploymentStatusUpdate validates an update through the status
// subresource: counts not negative and consistent with each other, and a
// collisionCount that never goes down.
func ValidateDeploymentStatusUpdate(d, old *appsv1.Deployment) field.ErrorList {
	if d == nil {
		d = &appsv1.Deployment{}
	}
	s := &d.Status
	p := field.NewPath("status")
	var errs field.ErrorList
	for _, c := range []struct {
		name  string
		value int64
	}{
		{"observedGeneration", s.ObservedGeneration},
		{"replicas", int64(s.Replicas)},
		{"updatedReplicas", int64(s.UpdatedReplicas)},
		{"readyReplicas", int64(s.ReadyReplicas)},
		{"availableReplicas", int64(s.AvailableReplicas)},
		{"unavailableReplicas", int64(s.UnavailableReplicas)},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(c.value, p.Child(c.name))...)
	}
	if s.TerminatingReplicas != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*s.TerminatingReplicas), p.Child("terminatingReplicas"))...)
	}
	if s.CollisionCount != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*s.CollisionCount), p.Child("collisionCount"))...)
	}
	const msg = "cannot be greater than status.replicas"
	if s.UpdatedReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("updatedReplicas"), s.UpdatedReplicas, msg))
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
	if old != nil {
		previous := old.Status.CollisionCount
		if (s.CollisionCount == nil && previous != nil) || (s.CollisionCount != nil && previous != nil && *s.CollisionCount < *previous) {
			errs = append(errs, field.Invalid(p.Child("collisionCount"), int32Value(s.CollisionCount), "cannot be decremented"))
		}
	}
	return errs
}
