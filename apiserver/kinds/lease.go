package kinds

import (
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateLease validates a lease on create (old == nil) or update; both get
// the same checks. leaseDurationSeconds, when set, must be above 0 and
// leaseTransitions not negative; strategy must be one kube knows or a
// qualified name, and preferredHolder needs a strategy. holderIdentity is
// free text, as in kube.
//
// Strategy errors are reported at spec.strategy.strategy, the path kube
// reports them at.
func ValidateLease(l, old *coordinationv1.Lease) field.ErrorList {
	if l == nil {
		l = &coordinationv1.Lease{}
	}
	var errs field.ErrorList
	spec := &l.Spec
	p := field.NewPath("spec")
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(p.Child("leaseDurationSeconds"), spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(p.Child("leaseTransitions"), spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		errs = append(errs, validateLeaseStrategy(*spec.Strategy, p.Child("strategy"))...)
	}
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		errs = append(errs, field.Forbidden(p.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}

// validateLeaseStrategy: an unprefixed strategy must be one kube defines;
// a prefixed one belongs to someone else and need only be well formed.
func validateLeaseStrategy(s coordinationv1.CoordinatedLeaseStrategy, fldPath *field.Path) field.ErrorList {
	p := fldPath.Child("strategy")
	if !strings.Contains(string(s), "/") {
		if s != coordinationv1.OldestEmulationVersion {
			return field.ErrorList{field.NotSupported(p, s, []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion})}
		}
		return nil
	}
	var errs field.ErrorList
	for _, msg := range content.IsLabelKey(string(s)) {
		errs = append(errs, field.Invalid(p, s, msg))
	}
	return errs
}
