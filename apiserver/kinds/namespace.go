package kinds

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateNamespace validates a namespace on create (old == nil) or update:
// each spec.finalizers entry must be a qualified name, and an unprefixed one
// must be a finalizer kube knows ("kubernetes", "orphan",
// "foregroundDeletion").
//
// On create the errors are reported at spec.finalizers, without an index,
// as kube reports them. On update they carry the index, as kube's finalize
// subresource reports them; a plain update in kube cannot change
// spec.finalizers at all (its strategy restores them from the old object),
// so a caller that does the same never sees these errors on update.
func ValidateNamespace(ns, old *corev1.Namespace) field.ErrorList {
	if ns == nil {
		ns = &corev1.Namespace{}
	}
	var errs field.ErrorList
	p := field.NewPath("spec", "finalizers")
	for i, f := range ns.Spec.Finalizers {
		fp := p
		if old != nil {
			fp = p.Index(i)
		}
		errs = append(errs, validateFinalizerName(string(f), fp)...)
	}
	return errs
}

func validateFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateFinalizerName(name, fldPath)
	if strings.Contains(name, "/") {
		return errs
	}
	switch name {
	case string(corev1.FinalizerKubernetes), metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents:
		return errs
	}
	return append(errs, field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified"))
}
