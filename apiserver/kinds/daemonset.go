package kinds

import (
	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultDaemonSet sets kube's apps/v1 defaults on d: a RollingUpdate
// strategy with maxUnavailable 1 and maxSurge 0, revisionHistoryLimit 10,
// and the pod template defaults (see DefaultPodTemplateSpec).
func DefaultDaemonSet(d *appsv1.DaemonSet) {
	if d == nil {
		return
	}
	spec := &d.Spec
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		ru := spec.UpdateStrategy.RollingUpdate
		if ru.MaxUnavailable == nil {
			v := intstr.FromInt32(1)
			ru.MaxUnavailable = &v
		}
		if ru.MaxSurge == nil {
			v := intstr.FromInt32(0)
			ru.MaxSurge = &v
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = int32Ptr(10)
	}
	DefaultPodTemplateSpec(&spec.Template)
}

// ValidateDaemonSet validates a daemon set on create (old == nil) or
// update, as kube's apps validation does: a non-empty selector that
// selects a valid template whose pods restart Always and that, on update,
// does not change; minReadySeconds and revisionHistoryLimit not negative;
// an OnDelete or RollingUpdate strategy whose maxSurge and maxUnavailable
// are non-negative integers or percentages, not both 0, at most 100%.
func ValidateDaemonSet(d, old *appsv1.DaemonSet) field.ErrorList {
	if d == nil {
		d = &appsv1.DaemonSet{}
	}
	spec := &d.Spec
	p := field.NewPath("spec")
	errs := validateSelectorAndTemplate(spec.Selector, &spec.Template, p)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*spec.RevisionHistoryLimit), p.Child("revisionHistoryLimit"))...)
	}
	errs = append(errs, validateDaemonSetUpdateStrategy(&spec.UpdateStrategy, p.Child("updateStrategy"))...)
	if old != nil {
		errs = append(errs, apivalidation.ValidateImmutableField(spec.Selector, old.Spec.Selector, p.Child("selector"))...)
	}
	return errs
}

func validateDaemonSetUpdateStrategy(s *appsv1.DaemonSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		p := fldPath.Child("rollingUpdate")
		var unavailable, surge intstr.IntOrString
		if s.RollingUpdate.MaxUnavailable != nil {
			unavailable = *s.RollingUpdate.MaxUnavailable
		}
		if s.RollingUpdate.MaxSurge != nil {
			surge = *s.RollingUpdate.MaxSurge
		}
		errs := validateIntOrPercent(unavailable, p.Child("maxUnavailable"))
		errs = append(errs, validateIntOrPercent(surge, p.Child("maxSurge"))...)
		if intOrPercentValue(unavailable) == 0 && intOrPercentValue(surge) == 0 {
			errs = append(errs, field.Invalid(p.Child("maxUnavailable"), unavailable, "may not be 0 when `maxSurge` is 0"))
		}
		for _, f := range []struct {
			name string
			v    intstr.IntOrString
		}{{"maxUnavailable", unavailable}, {"maxSurge", surge}} {
			if v, ok := percentValue(f.v); ok && v > 100 {
				errs = append(errs, field.Invalid(p.Child(f.name), f.v, "must not be greater than 100%"))
			}
		}
		return errs
	}
	return field.ErrorList{field.NotSupported(fldPath.Child("type"), s.Type, []appsv1.DaemonSetUpdateStrategyType{
		appsv1.OnDeleteDaemonSetStrategyType, appsv1.RollingUpdateDaemonSetStrategyType})}
}

// ValidateDaemonSetStatusUpdate validates an update through the status
// subresource: every count not negative.
func ValidateDaemonSetStatusUpdate(d, _ *appsv1.DaemonSet) field.ErrorList {
	if d == nil {
		d = &appsv1.DaemonSet{}
	}
	s := &d.Status
	p := field.NewPath("status")
	var errs field.ErrorList
	for _, c := range []struct {
		name  string
		value int64
	}{
		{"numberAvailable", int64(s.NumberAvailable)},
		{"numberMisscheduled", int64(s.NumberMisscheduled)},
		{"numberReady", int64(s.NumberReady)},
		{"currentNumberScheduled", int64(s.CurrentNumberScheduled)},
		{"desiredNumberScheduled", int64(s.DesiredNumberScheduled)},
		{"updatedNumberScheduled", int64(s.UpdatedNumberScheduled)},
		{"numberUnavailable", int64(s.NumberUnavailable)},
		{"observedGeneration", s.ObservedGeneration},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(c.value, p.Child(c.name))...)
	}
	if s.CollisionCount != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*s.CollisionCount), p.Child("collisionCount"))...)
	}
	return errs
}
