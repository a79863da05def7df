package kinds

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	hugePagesPrefix      = "hugepages-"
	quotaRequestsPrefix  = "requests."
	quotaLimitsPrefix    = "limits."
	nativeResourcePrefix = corev1.ResourceDefaultNamespacePrefix
)

// roundResourceList rounds every quantity up to milli precision, as kube does
// on decode so that a stored "0.0001" reads back as "1m".
func roundResourceList(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}

func isHugePageResource(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), hugePagesPrefix)
}

func isQuotaHugePageResource(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), quotaRequestsPrefix+hugePagesPrefix) ||
		strings.HasPrefix(string(name), quotaLimitsPrefix+hugePagesPrefix)
}

// isNativeResource: unprefixed names and names under kubernetes.io/ belong
// to kube; everything else is an extended resource.
func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), nativeResourcePrefix)
}

func isExtendedResource(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), quotaRequestsPrefix) {
		return false
	}
	// Extended resources are also quota names ("requests.<name>"), so the
	// prefixed form must be a qualified name too.
	return len(content.IsLabelKey(quotaRequestsPrefix+string(name))) == 0
}

// isOvercommitAllowed: requests below limits are allowed for native
// resources other than huge pages.
func isOvercommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePageResource(name)
}

func isIntegerResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices,
		corev1.ResourceReplicationControllers, corev1.ResourceSecrets,
		corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
		corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers:
		return true
	}
	return isExtendedResource(name)
}

func isStandardResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
		corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices,
		corev1.ResourceReplicationControllers, corev1.ResourceSecrets, corev1.ResourceConfigMaps,
		corev1.ResourcePersistentVolumeClaims, corev1.ResourceStorage, corev1.ResourceRequestsStorage,
		corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers:
		return true
	}
	return isHugePageResource(name) || isQuotaHugePageResource(name)
}

func isStandardContainerResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	return isHugePageResource(name)
}

func validateResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range content.IsLabelKey(string(name)) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	if len(errs) != 0 {
		return errs
	}
	if !strings.Contains(string(name), "/") && !isStandardResource(name) {
		errs = append(errs, field.Invalid(fldPath, name, "must be a standard resource type or fully qualified"))
	}
	return errs
}

func validateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	errs := validateResourceName(name, fldPath)
	if !strings.Contains(string(name), "/") {
		if !isStandardContainerResource(name) {
			errs = append(errs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
		}
	} else if !isNativeResource(name) && !isExtendedResource(name) {
		errs = append(errs, field.Invalid(fldPath, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

// validatePodLevelResourceName allows the resources kube supports in
// spec.resources: cpu, memory and huge pages.
func validatePodLevelResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	errs := validateResourceName(name, fldPath)
	if len(errs) != 0 {
		return errs
	}
	if name != corev1.ResourceCPU && name != corev1.ResourceMemory && !isHugePageResource(name) {
		errs = append(errs, field.NotSupported(fldPath, name, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, "hugepages-*"}))
	}
	return errs
}

func validateResourceQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Sign() < 0 {
		errs = append(errs, field.Invalid(fldPath, q.String(), apivalidation.IsNegativeErrorMsg))
	}
	if isIntegerResource(name) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(fldPath, q, "must be an integer"))
	}
	return errs
}

// hugePageDivisible reports whether q is a whole number of pages of the size
// named in the resource (hugepages-2Mi: pages of 2Mi).
func hugePageDivisible(name corev1.ResourceName, q resource.Quantity) bool {
	size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), hugePagesPrefix))
	if err != nil || size.Sign() <= 0 || size.MilliValue()%1000 != 0 {
		return false
	}
	return q.Value()%size.Value() == 0
}

// validateResourceRequirements checks a container's (or the pod's) resource
// names, quantities, and that requests stay within limits. claimNames are
// the pod's spec.resourceClaims names, for resources.claims.
func validateResourceRequirements(req *corev1.ResourceRequirements, nameFn func(corev1.ResourceName, *field.Path) field.ErrorList, claimNames map[string]bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath := fldPath.Child("limits")
	reqPath := fldPath.Child("requests")
	var limCPUOrMemory, reqCPUOrMemory, limHugePages, reqHugePages bool
	for _, name := range sortedResourceNames(req.Limits) {
		q := req.Limits[name]
		p := limPath.Key(string(name))
		errs = append(errs, nameFn(name, p)...)
		errs = append(errs, validateResourceQuantity(name, q, p)...)
		if isHugePageResource(name) {
			limHugePages = true
			if !hugePageDivisible(name, q) {
				errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name)))
			}
		}
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			limCPUOrMemory = true
		}
	}
	for _, name := range sortedResourceNames(req.Requests) {
		q := req.Requests[name]
		p := reqPath.Key(string(name))
		errs = append(errs, nameFn(name, p)...)
		errs = append(errs, validateResourceQuantity(name, q, p)...)
		if limit, ok := req.Limits[name]; ok {
			switch {
			case q.Cmp(limit) != 0 && !isOvercommitAllowed(name):
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			case q.Cmp(limit) > 0:
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
			}
		} else if !isOvercommitAllowed(name) {
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		if isHugePageResource(name) {
			reqHugePages = true
			if !hugePageDivisible(name, q) {
				errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name)))
			}
		}
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			reqCPUOrMemory = true
		}
	}
	if !limCPUOrMemory && !reqCPUOrMemory && (limHugePages || reqHugePages) {
		errs = append(errs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	errs = append(errs, validateResourceClaimRefs(req.Claims, claimNames, fldPath.Child("claims"))...)
	return errs
}

// validateResourceClaimRefs checks resources.claims: each names an entry of
// the pod's spec.resourceClaims, at most once.
func validateResourceClaimRefs(claims []corev1.ResourceClaim, podClaims map[string]bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{} // claim names, and name/request pairs
	for i, c := range claims {
		p := fldPath.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(p, ""))
			continue
		}
		switch key := c.Name + "/" + c.Request; {
		case seen[c.Name]:
			// The whole claim is already referenced.
			errs = append(errs, field.Duplicate(p, c.Name))
		case c.Request != "":
			errs = append(errs, validateDNS1123Label(c.Request, p.Child("request"))...)
			if seen[key] {
				errs = append(errs, field.Duplicate(p, key))
			}
			seen[key] = true
		default:
			// Referencing the whole claim after one of its requests.
			for k := range seen {
				if strings.HasPrefix(k, c.Name+"/") {
					errs = append(errs, field.Duplicate(p, c.Name))
					break
				}
			}
			seen[c.Name] = true
		}
		if !podClaims[c.Name] {
			e := field.NotFound(p, c.Name)
			e.Detail = "must be one of the names in pod.spec.resourceClaims"
			if len(podClaims) == 0 {
				e.Detail += " which is empty"
			} else {
				e.Detail += ": " + strings.Join(sortedKeys(podClaims), ", ")
			}
			errs = append(errs, e)
		}
	}
	return errs
}
