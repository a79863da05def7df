package kinds

import (
	"net/netip"
	"path"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Checks of string formats shared by the kinds, each returning kube's
// messages at the given path.

func validateDNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func validateDNS1123Subdomain(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// validateQualifiedName checks a name of the form [prefix/]name, the format
// of label keys, condition types and finalizers.
func validateQualifiedName(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range content.IsLabelKey(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// validateName applies one of apimachinery's object-name rules
// (NameIsDNSSubdomain and friends) to a name that refers to another object.
func validateName(value string, nameFn func(string, bool) []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range nameFn(value, false) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(fldPath, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(fldPath, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.Invalid(fldPath, port, "must be an integer or a string"))
	}
	return errs
}

// validatePathNoBacksteps refuses ".." as a path element.
func validatePathNoBacksteps(target string, fldPath *field.Path) field.ErrorList {
	for _, item := range strings.Split(filepath.ToSlash(target), "/") {
		if item == ".." {
			return field.ErrorList{field.Invalid(fldPath, target, "must not contain '..'")}
		}
	}
	return nil
}

// validateLocalDescendingPath requires a relative path without "..".
func validateLocalDescendingPath(target string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(fldPath, target, "must be a relative path"))
	}
	return append(errs, validatePathNoBacksteps(target, fldPath)...)
}

// validateLocalNonReservedPath additionally refuses names starting with "..",
// which the kubelet reserves inside volumes.
func validateLocalNonReservedPath(target string, fldPath *field.Path) field.ErrorList {
	errs := validateLocalDescendingPath(target, fldPath)
	if strings.HasPrefix(target, "..") && !strings.HasPrefix(target, "../") {
		errs = append(errs, field.Invalid(fldPath, target, "must not start with '..'"))
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sortedResourceNames gives map iteration a fixed order, so the same object
// always yields the same error list.
func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ipFamilies reports which IP families the addresses cover; parse failures
// are reported elsewhere and ignored here.
func ipFamilies(addrs []string, isCIDR bool) (v4, v6 bool) {
	for _, a := range addrs {
		var ip netip.Addr
		if isCIDR {
			p, err := netip.ParsePrefix(a)
			if err != nil {
				continue
			}
			ip = p.Addr()
		} else {
			var err error
			if ip, err = netip.ParseAddr(a); err != nil {
				continue
			}
		}
		if ip.Unmap().Is4() {
			v4 = true
		} else {
			v6 = true
		}
	}
	return v4, v6
}
