package kinds

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podSpecOptions says where a PodSpec sits.
type podSpecOptions struct {
	isPod   bool   // a Pod, not a template in a workload
	podName string // the pod's name, for claim names of ephemeral volumes
}

// validatePodSpec holds the checks kube applies to every PodSpec, in a Pod
// or in a template (ValidatePodSpec).
func validatePodSpec(spec *corev1.PodSpec, opts podSpecOptions, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.TerminationGracePeriodSeconds == nil {
		errs = append(errs, field.Required(fldPath.Child("terminationGracePeriodSeconds"), ""))
	}
	hostUsers := spec.HostUsers == nil || *spec.HostUsers
	volumes, volErrs := validateVolumes(spec.Volumes, opts.podName, opts.isPod, fldPath.Child("volumes"))
	errs = append(errs, volErrs...)
	claimNames := map[string]bool{}
	for _, c := range spec.ResourceClaims {
		if c.Name != "" {
			claimNames[c.Name] = true
		}
	}
	errs = append(errs, validatePodResourceClaims(spec.ResourceClaims, fldPath.Child("resourceClaims"))...)
	sc := &specContext{
		volumes:       volumes,
		claimNames:    claimNames,
		gracePeriod:   spec.TerminationGracePeriodSeconds,
		restartPolicy: spec.RestartPolicy,
		hostUsers:     hostUsers,
	}
	errs = append(errs, validateContainers(spec.Containers, sc, fldPath.Child("containers"))...)
	errs = append(errs, validateInitContainers(spec.InitContainers, spec.Containers, sc, fldPath.Child("initContainers"))...)
	errs = append(errs, validateEphemeralContainers(spec.EphemeralContainers, spec.Containers, spec.InitContainers, sc, fldPath.Child("ephemeralContainers"))...)
	if spec.Resources != nil {
		errs = append(errs, validatePodLevelResources(spec.Resources, claimNames, fldPath.Child("resources"))...)
	}
	errs = append(errs, validateHostNetworkPorts(spec, opts.isPod, fldPath)...)
	errs = append(errs, validateRestartPolicy(spec.RestartPolicy, fldPath.Child("restartPolicy"))...)
	errs = append(errs, validateDNSPolicy(spec.DNSPolicy, fldPath.Child("dnsPolicy"))...)
	errs = append(errs, metav1validation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	errs = append(errs, validatePodSecurityContext(spec, fldPath.Child("securityContext"))...)
	errs = append(errs, validateAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	errs = append(errs, validateDNSConfig(spec.DNSConfig, spec.DNSPolicy, fldPath.Child("dnsConfig"))...)
	for i, g := range spec.ReadinessGates {
		errs = append(errs, validateQualifiedName(string(g.ConditionType), fldPath.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	errs = append(errs, validateSchedulingGates(spec.SchedulingGates, fldPath.Child("schedulingGates"))...)
	errs = append(errs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	errs = append(errs, validateHostUsers(spec, fldPath)...)
	if sa := serviceAccountOf(spec); sa != "" {
		errs = append(errs, validateName(sa, apivalidation.ValidateServiceAccountName, fldPath.Child("serviceAccountName"))...)
	}
	if spec.NodeName != "" {
		errs = append(errs, validateName(spec.NodeName, apivalidation.NameIsDNSSubdomain, fldPath.Child("nodeName"))...)
	}
	if spec.ActiveDeadlineSeconds != nil {
		if v := *spec.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			errs = append(errs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	if spec.Hostname != "" {
		errs = append(errs, validateDNS1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, validateDNS1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	errs = append(errs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	for i, a := range spec.HostAliases {
		p := fldPath.Child("hostAliases").Index(i)
		errs = append(errs, validation.IsValidIP(p.Child("ip"), a.IP)...)
		for j, h := range a.Hostnames {
			errs = append(errs, validateDNS1123Subdomain(h, p.Child("hostnames").Index(j))...)
		}
	}
	if spec.PriorityClassName != "" {
		errs = append(errs, validateName(spec.PriorityClassName, apivalidation.NameIsDNSSubdomain, fldPath.Child("priorityClassName"))...)
	}
	if spec.RuntimeClassName != nil {
		errs = append(errs, validateName(*spec.RuntimeClassName, apivalidation.NameIsDNSSubdomain, fldPath.Child("runtimeClassName"))...)
	}
	if spec.PreemptionPolicy != nil {
		switch *spec.PreemptionPolicy {
		case corev1.PreemptLowerPriority, corev1.PreemptNever:
		case "":
			errs = append(errs, field.Required(fldPath.Child("preemptionPolicy"), ""))
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("preemptionPolicy"), spec.PreemptionPolicy,
				[]corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}))
		}
	}
	if spec.Overhead != nil {
		errs = append(errs, validateResourceRequirements(&corev1.ResourceRequirements{Limits: spec.Overhead}, validateContainerResourceName, nil, fldPath.Child("overhead"))...)
	}
	errs = append(errs, validateOS(spec, fldPath)...)
	return errs
}

func validateRestartPolicy(p corev1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return field.ErrorList{field.NotSupported(fldPath, p, []corev1.RestartPolicy{
		corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})}
}

func validateDNSPolicy(p corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return field.ErrorList{field.NotSupported(fldPath, p, []corev1.DNSPolicy{
		corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone})}
}

// Limits of the resolver in libc, which kube enforces on dnsConfig.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

func validateDNSConfig(c *corev1.PodDNSConfig, policy corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if c == nil {
			return field.ErrorList{field.Required(fldPath, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", corev1.DNSNone))}
		}
		if len(c.Nameservers) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", corev1.DNSNone))}
		}
	}
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	if len(c.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(fldPath.Child("nameservers"), c.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range c.Nameservers {
		errs = append(errs, validation.IsValidIP(fldPath.Child("nameservers").Index(i), ns)...)
	}
	if len(c.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), c.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(c.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), c.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, s := range c.Searches {
		// Relaxed search validation (kube's default): "." alone and
		// underscores are allowed.
		if s == "." {
			continue
		}
		s = strings.TrimSuffix(s, ".")
		for _, msg := range validation.IsDNS1123SubdomainWithUnderscore(s) {
			errs = append(errs, field.Invalid(fldPath.Child("searches").Index(i), s, msg))
		}
	}
	for i, o := range c.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

// validateHostNetworkPorts: with hostNetwork a container port is a host
// port. Pods must say so (defaulting does); templates may leave hostPort 0.
func validateHostNetworkPorts(spec *corev1.PodSpec, isPod bool, fldPath *field.Path) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var errs field.ErrorList
	for i, c := range spec.Containers {
		for j, p := range c.Ports {
			if (isPod || p.HostPort != 0) && p.HostPort != p.ContainerPort {
				errs = append(errs, field.Invalid(fldPath.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"),
					p.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return errs
}

// validateHostUsers: a pod in its own user namespace may not share the
// host's other namespaces. The paths are kube's, capitals included.
func validateHostUsers(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var errs field.ErrorList
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(fldPath.Child("hostNetwork"), "when `pod.Spec.HostUsers` is false"))
	}
	if spec.HostPID {
		errs = append(errs, field.Forbidden(fldPath.Child("HostPID"), "when `pod.Spec.HostUsers` is false"))
	}
	if spec.HostIPC {
		errs = append(errs, field.Forbidden(fldPath.Child("HostIPC"), "when `pod.Spec.HostUsers` is false"))
	}
	return errs
}

func validatePodResourceClaims(claims []corev1.PodResourceClaim, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, c := range claims {
		p := fldPath.Index(i)
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case seen[c.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		default:
			errs = append(errs, validateDNS1123Label(c.Name, p.Child("name"))...)
			seen[c.Name] = true
		}
		if c.ResourceClaimName != nil && c.ResourceClaimTemplateName != nil {
			errs = append(errs, field.Invalid(p, c, "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"))
		}
		if c.ResourceClaimName == nil && c.ResourceClaimTemplateName == nil {
			errs = append(errs, field.Invalid(p, c, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
		}
		if c.ResourceClaimName != nil {
			errs = append(errs, validateName(*c.ResourceClaimName, apivalidation.NameIsDNSSubdomain, p.Child("resourceClaimName"))...)
		}
		if c.ResourceClaimTemplateName != nil {
			errs = append(errs, validateName(*c.ResourceClaimTemplateName, apivalidation.NameIsDNSSubdomain, p.Child("resourceClaimTemplateName"))...)
		}
	}
	return errs
}

// validatePodLevelResources checks spec.resources: names and quantities,
// requests within limits. kube also compares them with the sum of the
// containers' resources; that comparison is not made here.
func validatePodLevelResources(r *corev1.ResourceRequirements, claimNames map[string]bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.Claims != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("claims"), "claims cannot be set for Resources at pod-level"))
	}
	withoutClaims := *r
	withoutClaims.Claims = nil
	return append(errs, validateResourceRequirements(&withoutClaims, validatePodLevelResourceName, claimNames, fldPath)...)
}

func validateTaintEffect(effect corev1.TaintEffect, allowEmpty bool, fldPath *field.Path) field.ErrorList {
	switch effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	case "":
		if allowEmpty {
			return nil
		}
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return field.ErrorList{field.NotSupported(fldPath, effect, []corev1.TaintEffect{
		corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute})}
}

func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := fldPath.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		// An empty key with Exists matches every taint; with any other
		// operator it matches nothing sensible.
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) != 0 {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Effect != "" {
			errs = append(errs, validateTaintEffect(t.Effect, true, p.Child("effect"))...)
		}
	}
	return errs
}

func validateSchedulingGates(gates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, g := range gates {
		errs = append(errs, validateQualifiedName(g.Name, fldPath.Index(i))...)
		if seen[g.Name] {
			errs = append(errs, field.Duplicate(fldPath.Index(i), g.Name))
		}
		seen[g.Name] = true
	}
	return errs
}

func validateTopologySpreadConstraints(constraints []corev1.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range constraints {
		p := fldPath.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		}
		if c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable,
				[]corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}))
		}
		for _, later := range constraints[i+1:] {
			if c.TopologyKey == later.TopologyKey && c.WhenUnsatisfiable == later.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				errs = append(errs, field.Invalid(p.Child("minDomains"), c.MinDomains, "must be greater than zero"))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(p.Child("minDomains"), c.MinDomains,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		for _, policy := range []struct {
			name  string
			value *corev1.NodeInclusionPolicy
		}{{"nodeAffinityPolicy", c.NodeAffinityPolicy}, {"nodeTaintsPolicy", c.NodeTaintsPolicy}} {
			if policy.value != nil && *policy.value != corev1.NodeInclusionPolicyHonor && *policy.value != corev1.NodeInclusionPolicyIgnore {
				errs = append(errs, field.NotSupported(p.Child(policy.name), policy.value,
					[]corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}))
			}
		}
		if len(c.MatchLabelKeys) > 0 && c.LabelSelector == nil {
			errs = append(errs, field.Forbidden(p.Child("matchLabelKeys"), "must not be specified when labelSelector is not set"))
		}
		for j, key := range c.MatchLabelKeys {
			errs = append(errs, metav1validation.ValidateLabelName(key, p.Child("matchLabelKeys").Index(j))...)
		}
		errs = append(errs, metav1validation.ValidateLabelSelector(c.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
	}
	return errs
}

func validateAffinity(a *corev1.Affinity, fldPath *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := fldPath.Child("nodeAffinity")
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			errs = append(errs, validateNodeSelector(na.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			if t.Weight <= 0 || t.Weight > 100 {
				errs = append(errs, field.Invalid(tp.Child("weight"), t.Weight, "must be in the range 1-100"))
			}
			// Preferred terms may name label values no node has.
			errs = append(errs, validateNodeSelectorTerm(t.Preference, true, tp.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		p := fldPath.Child("podAffinity")
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		errs = append(errs, validateWeightedPodAffinityTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("preferredDuringSchedulingIgnoredDuringExecution"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		p := fldPath.Child("podAntiAffinity")
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		errs = append(errs, validateWeightedPodAffinityTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("preferredDuringSchedulingIgnoredDuringExecution"))...)
	}
	return errs
}

func validateNodeSelector(s *corev1.NodeSelector, fldPath *field.Path) field.ErrorList {
	termsPath := fldPath.Child("nodeSelectorTerms")
	if len(s.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, t := range s.NodeSelectorTerms {
		errs = append(errs, validateNodeSelectorTerm(t, false, termsPath.Index(i))...)
	}
	return errs
}

func validateNodeSelectorTerm(t corev1.NodeSelectorTerm, allowInvalidValues bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j, r := range t.MatchExpressions {
		p := fldPath.Child("matchExpressions").Index(j)
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) == 0 {
				errs = append(errs, field.Required(p.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(r.Values) > 0 {
				errs = append(errs, field.Forbidden(p.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(r.Values) != 1 {
				errs = append(errs, field.Required(p.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), r.Operator, "not a valid selector operator"))
		}
		errs = append(errs, metav1validation.ValidateLabelName(r.Key, p.Child("key"))...)
		if !allowInvalidValues {
			for k, v := range r.Values {
				for _, msg := range validation.IsValidLabelValue(v) {
					errs = append(errs, field.Invalid(p.Child("values").Index(k), v, msg))
				}
			}
		}
	}
	for j, r := range t.MatchFields {
		p := fldPath.Child("matchFields").Index(j)
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) != 1 {
				errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), r.Operator, "not a valid selector operator"))
		}
		if r.Key != metav1.ObjectNameField {
			errs = append(errs, field.Invalid(p.Child("key"), r.Key, "not a valid field selector key"))
			continue
		}
		for k, v := range r.Values {
			errs = append(errs, validateName(v, apivalidation.NameIsDNSSubdomain, p.Child("values").Index(k))...)
		}
	}
	return errs
}

func validatePodAffinityTerms(terms []corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range terms {
		errs = append(errs, validatePodAffinityTerm(t, fldPath.Index(i))...)
	}
	return errs
}

func validateWeightedPodAffinityTerms(terms []corev1.WeightedPodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range terms {
		p := fldPath.Index(i)
		if t.Weight <= 0 || t.Weight > 100 {
			errs = append(errs, field.Invalid(p.Child("weight"), t.Weight, "must be in the range 1-100"))
		}
		errs = append(errs, validatePodAffinityTerm(t.PodAffinityTerm, p.Child("podAffinityTerm"))...)
	}
	return errs
}

func validatePodAffinityTerm(t corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs := metav1validation.ValidateLabelSelector(t.LabelSelector, opts, fldPath.Child("labelSelector"))
	errs = append(errs, metav1validation.ValidateLabelSelector(t.NamespaceSelector, opts, fldPath.Child("namespaceSelector"))...)
	for _, ns := range t.Namespaces {
		errs = append(errs, validateName(ns, apivalidation.ValidateNamespaceName, fldPath.Child("namespace"))...)
	}
	for i, key := range t.MatchLabelKeys {
		errs = append(errs, metav1validation.ValidateLabelName(key, fldPath.Child("matchLabelKeys").Index(i))...)
	}
	for i, key := range t.MismatchLabelKeys {
		errs = append(errs, metav1validation.ValidateLabelName(key, fldPath.Child("mismatchLabelKeys").Index(i))...)
	}
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(fldPath.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, metav1validation.ValidateLabelName(t.TopologyKey, fldPath.Child("topologyKey"))...)
}

// validateOS checks spec.os and the fields that make no sense on the named
// operating system.
func validateOS(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.OS == nil {
		return nil
	}
	p := fldPath.Child("os")
	switch spec.OS.Name {
	case "":
		return field.ErrorList{field.Required(p.Child("name"), "cannot be empty")}
	case corev1.Linux:
		return validateLinuxOnly(spec, fldPath)
	case corev1.Windows:
		return validateWindowsOnly(spec, fldPath)
	}
	return field.ErrorList{field.NotSupported(p, spec.OS.Name, []corev1.OSName{corev1.Linux, corev1.Windows})}
}

// eachContainer calls fn for every container of spec with its path.
func eachContainer(spec *corev1.PodSpec, fldPath *field.Path, fn func(c *corev1.Container, p *field.Path)) {
	for i := range spec.InitContainers {
		fn(&spec.InitContainers[i], fldPath.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		fn(&spec.Containers[i], fldPath.Child("containers").Index(i))
	}
	for i := range spec.EphemeralContainers {
		fn((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon), fldPath.Child("ephemeralContainers").Index(i))
	}
}

func validateLinuxOnly(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	const msg = "windows options cannot be set for a linux pod"
	if sc := spec.SecurityContext; sc != nil && sc.WindowsOptions != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("securityContext", "windowsOptions"), msg))
	}
	eachContainer(spec, fldPath, func(c *corev1.Container, p *field.Path) {
		if c.SecurityContext != nil && c.SecurityContext.WindowsOptions != nil {
			errs = append(errs, field.Forbidden(p.Child("securityContext", "windowsOptions"), msg))
		}
	})
	return errs
}

func validateWindowsOnly(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	const msg = "cannot be set for a windows pod"
	forbid := func(set bool, p *field.Path) {
		if set {
			errs = append(errs, field.Forbidden(p, msg))
		}
	}
	scPath := fldPath.Child("securityContext")
	if sc := spec.SecurityContext; sc != nil {
		forbid(sc.AppArmorProfile != nil, scPath.Child("appArmorProfile"))
		forbid(sc.SELinuxOptions != nil, scPath.Child("seLinuxOptions"))
		forbid(sc.SeccompProfile != nil, scPath.Child("seccompProfile"))
		forbid(sc.FSGroup != nil, scPath.Child("fsGroup"))
		forbid(sc.FSGroupChangePolicy != nil, scPath.Child("fsGroupChangePolicy"))
		forbid(len(sc.Sysctls) > 0, scPath.Child("sysctls"))
		forbid(sc.RunAsUser != nil, scPath.Child("runAsUser"))
		forbid(sc.RunAsGroup != nil, scPath.Child("runAsGroup"))
		forbid(sc.SupplementalGroups != nil, scPath.Child("supplementalGroups"))
		forbid(sc.SupplementalGroupsPolicy != nil, scPath.Child("supplementalGroupsPolicy"))
		forbid(sc.SELinuxChangePolicy != nil, scPath.Child("seLinuxChangePolicy"))
	}
	forbid(spec.HostUsers != nil, fldPath.Child("hostUsers"))
	forbid(spec.HostPID, fldPath.Child("hostPID"))
	forbid(spec.HostIPC, fldPath.Child("hostIPC"))
	forbid(spec.ShareProcessNamespace != nil, fldPath.Child("shareProcessNamespace"))
	eachContainer(spec, fldPath, func(c *corev1.Container, p *field.Path) {
		sc := c.SecurityContext
		if sc == nil {
			return
		}
		cp := p.Child("securityContext")
		forbid(sc.AppArmorProfile != nil, cp.Child("appArmorProfile"))
		forbid(sc.SELinuxOptions != nil, cp.Child("seLinuxOptions"))
		forbid(sc.SeccompProfile != nil, cp.Child("seccompProfile"))
		forbid(sc.Capabilities != nil, cp.Child("capabilities"))
		forbid(sc.ReadOnlyRootFilesystem != nil, cp.Child("readOnlyRootFilesystem"))
		forbid(sc.Privileged != nil, cp.Child("privileged"))
		forbid(sc.AllowPrivilegeEscalation != nil, cp.Child("allowPrivilegeEscalation"))
		forbid(sc.ProcMount != nil, cp.Child("procMount"))
		forbid(sc.RunAsUser != nil, cp.Child("runAsUser"))
		forbid(sc.RunAsGroup != nil, cp.Child("runAsGroup"))
	})
	return errs
}
