package kinds

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultNode sets kube's defaults on n: status.allocatable copies
// status.capacity when unset, and quantities are rounded to milli units.
// spec.podCIDR and spec.podCIDRs are settled as kube's round trip does:
// podCIDRs[0] is podCIDR, and a podCIDR that disagrees with podCIDRs wins.
func DefaultNode(n *corev1.Node) {
	if n == nil {
		return
	}
	if n.Status.Allocatable == nil && n.Status.Capacity != nil {
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	}
	roundResourceList(n.Status.Capacity)
	roundResourceList(n.Status.Allocatable)
	spec := &n.Spec
	if spec.PodCIDR != "" && (len(spec.PodCIDRs) == 0 || spec.PodCIDRs[0] != spec.PodCIDR) {
		spec.PodCIDRs = []string{spec.PodCIDR}
	}
	if len(spec.PodCIDRs) > 0 {
		spec.PodCIDR = spec.PodCIDRs[0]
	}
}

// ValidateNode validates a node on create (old == nil) or update: taints
// (a qualified key, a label value, an effect of NoSchedule, PreferNoSchedule
// or NoExecute, unique by key and effect), pod CIDRs (valid, at most one per
// IP family, fixed once set), status quantities, and on update providerID
// and externalID, which may only go from unset to set.
//
// Taint errors are reported under metadata.taints, as kube reports them.
func ValidateNode(n, old *corev1.Node) field.ErrorList {
	if n == nil {
		n = &corev1.Node{}
	}
	errs := validateNodeTaints(n.Spec.Taints, field.NewPath("metadata", "taints"))
	errs = append(errs, validateNodeResources(n)...)
	cidrs := nodePodCIDRs(&n.Spec)
	if len(cidrs) > 0 {
		p := field.NewPath("spec", "podCIDRs")
		for i, c := range cidrs {
			errs = append(errs, validation.IsValidCIDR(p.Index(i), c)...)
		}
		if len(cidrs) > 1 {
			v4, v6 := ipFamilies(cidrs, true)
			if !(v4 && v6) || len(cidrs) > 2 {
				errs = append(errs, field.Invalid(p, cidrs, "may specify no more than one CIDR for each IP family"))
			}
			seen := map[string]bool{}
			for i, c := range cidrs {
				if seen[c] {
					errs = append(errs, field.Duplicate(p.Index(i), c))
				}
				seen[c] = true
			}
		}
	}
	if old == nil {
		return errs
	}

	addresses := map[corev1.NodeAddress]bool{}
	for i, a := range n.Status.Addresses {
		if addresses[a] {
			errs = append(errs, field.Duplicate(field.NewPath("status", "addresses").Index(i), a))
		}
		addresses[a] = true
	}
	// The node IPAM controller assigns CIDRs once; after that they stay.
	if oldCIDRs := nodePodCIDRs(&old.Spec); len(oldCIDRs) > 0 {
		changed := len(oldCIDRs) != len(cidrs)
		for i := 0; !changed && i < len(oldCIDRs); i++ {
			changed = oldCIDRs[i] != cidrs[i]
		}
		if changed {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
		}
	}
	if old.Spec.ProviderID != "" && old.Spec.ProviderID != n.Spec.ProviderID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	if n.Spec.ConfigSource != nil {
		errs = append(errs, validateNodeConfigSource(n.Spec.ConfigSource, field.NewPath("spec", "configSource"))...)
	}
	if n.Spec.DoNotUseExternalID != old.Spec.DoNotUseExternalID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "externalID"), "may not be updated"))
	}
	return errs
}

// nodePodCIDRs returns the CIDRs as kube holds them: podCIDRs, or podCIDR
// alone when podCIDRs is empty or disagrees with it.
func nodePodCIDRs(spec *corev1.NodeSpec) []string {
	if spec.PodCIDR != "" && (len(spec.PodCIDRs) == 0 || spec.PodCIDRs[0] != spec.PodCIDR) {
		return []string{spec.PodCIDR}
	}
	return spec.PodCIDRs
}

func validateNodeTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.TaintEffect]map[string]bool{}
	for i, t := range taints {
		p := fldPath.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) != 0 {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, strings.Join(msgs, ";")))
		}
		errs = append(errs, validateTaintEffect(t.Effect, false, p.Child("effect"))...)
		if seen[t.Effect][t.Key] {
			dup := field.Duplicate(p, t)
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
			continue
		}
		if seen[t.Effect] == nil {
			seen[t.Effect] = map[string]bool{}
		}
		seen[t.Effect][t.Key] = true
	}
	return errs
}

// validateNodeResources checks capacity and allocatable; the paths use
// Child, not Key, as kube's do.
func validateNodeResources(n *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedResourceNames(n.Status.Capacity) {
		errs = append(errs, validateResourceQuantity(name, n.Status.Capacity[name], field.NewPath("status", "capacity", string(name)))...)
	}
	for _, name := range sortedResourceNames(n.Status.Allocatable) {
		errs = append(errs, validateResourceQuantity(name, n.Status.Allocatable[name], field.NewPath("status", "allocatable", string(name)))...)
	}
	return errs
}

// validateNodeConfigSource checks the deprecated dynamic kubelet config
// reference, which kube still validates for compatibility.
func validateNodeConfigSource(source *corev1.NodeConfigSource, fldPath *field.Path) field.ErrorList {
	if source.ConfigMap == nil {
		return field.ErrorList{field.Invalid(fldPath, source, "exactly one reference subfield must be non-nil")}
	}
	var errs field.ErrorList
	cm := source.ConfigMap
	p := fldPath.Child("configMap")
	if cm.UID != "" {
		errs = append(errs, field.Forbidden(p.Child("uid"), "uid must not be set in spec"))
	}
	if cm.ResourceVersion != "" {
		errs = append(errs, field.Forbidden(p.Child("resourceVersion"), "resourceVersion must not be set in spec"))
	}
	if cm.Namespace == "" {
		errs = append(errs, field.Required(p.Child("namespace"), "namespace must be set"))
	} else {
		errs = append(errs, validateName(cm.Namespace, apivalidation.ValidateNamespaceName, p.Child("namespace"))...)
	}
	if cm.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "name must be set"))
	} else {
		errs = append(errs, validateName(cm.Name, apivalidation.NameIsDNSSubdomain, p.Child("name"))...)
	}
	if cm.KubeletConfigKey == "" {
		errs = append(errs, field.Required(p.Child("kubeletConfigKey"), "kubeletConfigKey must be set"))
	} else {
		for _, msg := range validation.IsConfigMapKey(cm.KubeletConfigKey) {
			errs = append(errs, field.Invalid(p.Child("kubeletConfigKey"), cm.KubeletConfigKey, msg))
		}
	}
	return errs
}

// NodeFields returns the fields a node can be selected by: metadata.name
// and spec.unschedulable ("true" or "false").
func NodeFields(n *corev1.Node) fields.Set {
	if n == nil {
		n = &corev1.Node{}
	}
	return fields.Set{
		"metadata.name":      n.Name,
		"spec.unschedulable": strconv.FormatBool(n.Spec.Unschedulable),
	}
}
