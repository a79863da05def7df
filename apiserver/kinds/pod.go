package kinds

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updatablePodSpecFields is the list kube quotes when a pod update touches
// anything else; clients and people grep for this text.
const updatablePodSpecFields = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`," +
	"`spec.tolerations` (only additions to existing tolerations)," +
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"

// DefaultPod sets kube's defaults on p, the same ones a Pod read back from
// kube shows: restartPolicy Always, dnsPolicy ClusterFirst,
// terminationGracePeriodSeconds 30, schedulerName default-scheduler, an
// empty securityContext, enableServiceLinks true, and on each container
// terminationMessagePath /dev/termination-log, terminationMessagePolicy
// File, imagePullPolicy (Always for ":latest" or untagged images, else
// IfNotPresent), port protocol TCP and probe timings; requests copied from
// limits where unset; volume modes and sources. It also settles the
// deprecated v1 twins the way kube's round trip does: spec.serviceAccount
// follows spec.serviceAccountName, status.podIP and status.hostIP follow
// status.podIPs and status.hostIPs.
//
// Admission-time additions (default tolerations, service account token
// volume, priority) are not defaults and are not set. DefaultPod is
// idempotent.
func DefaultPod(p *corev1.Pod) {
	if p == nil {
		return
	}
	spec := &p.Spec
	// Only a Pod, not a template, gets requests from limits: the
	// template's limits may still be changed by a LimitRange.
	for _, cs := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range cs {
			r := &cs[i].Resources
			if r.Limits == nil {
				continue
			}
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			for name, limit := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					r.Requests[name] = limit.DeepCopy()
				}
			}
		}
	}
	if spec.EnableServiceLinks == nil {
		enable := corev1.DefaultEnableServiceLinks
		spec.EnableServiceLinks = &enable
	}
	if spec.HostNetwork {
		for _, cs := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
			for i := range cs {
				for j := range cs[i].Ports {
					if cs[i].Ports[j].HostPort == 0 {
						cs[i].Ports[j].HostPort = cs[i].Ports[j].ContainerPort
					}
				}
			}
		}
	}
	defaultPodSpec(spec)
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for i := range statuses {
			roundResourceList(statuses[i].AllocatedResources)
			if r := statuses[i].Resources; r != nil {
				roundResourceList(r.Limits)
				roundResourceList(r.Requests)
			}
		}
	}
	normalizePod(p)
}

// normalizePod settles the v1 fields kube keeps only one of internally.
func normalizePod(p *corev1.Pod) {
	if p.Spec.ServiceAccountName == "" {
		p.Spec.ServiceAccountName = p.Spec.DeprecatedServiceAccount
	}
	p.Spec.DeprecatedServiceAccount = p.Spec.ServiceAccountName

	// As in kube's conversion, a podIP that disagrees with podIPs wins:
	// old kubelets only set podIP.
	st := &p.Status
	if st.PodIP != "" && (len(st.PodIPs) == 0 || st.PodIPs[0].IP != st.PodIP) {
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	}
	if len(st.PodIPs) > 0 {
		st.PodIP = st.PodIPs[0].IP
	}
	if st.HostIP != "" && (len(st.HostIPs) == 0 || st.HostIPs[0].IP != st.HostIP) {
		st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	}
	if len(st.HostIPs) > 0 {
		st.HostIP = st.HostIPs[0].IP
	}
}

// DefaultPodTemplateSpec sets the defaults kube gives a pod template in a
// workload: those of DefaultPod except the ones only a Pod gets
// (enableServiceLinks, requests from limits, host ports under hostNetwork).
func DefaultPodTemplateSpec(t *corev1.PodTemplateSpec) {
	if t == nil {
		return
	}
	defaultPodSpec(&t.Spec)
	if t.Spec.ServiceAccountName == "" {
		t.Spec.ServiceAccountName = t.Spec.DeprecatedServiceAccount
	}
	t.Spec.DeprecatedServiceAccount = t.Spec.ServiceAccountName
}

// ValidatePod validates a pod on create (old == nil) or update. On update
// the whole spec is validated again and, as in kube, only a few spec fields
// may change: container and init container images, activeDeadlineSeconds
// (set, or lowered), tolerations (added to; an existing one may change only
// its tolerationSeconds), terminationGracePeriodSeconds (from negative to
// 1) and scheduling gates (removed), plus additions to nodeSelector while
// the pod is gated. Anything else, spec.nodeName included, is Forbidden at
// "spec"; a pod is bound through the binding subresource, which sets
// spec.nodeName without this check.
//
// Object metadata is validated by the caller; the pod-specific rules on the
// mirror-pod annotation are checked here.
func ValidatePod(p, old *corev1.Pod) field.ErrorList {
	if p == nil {
		p = &corev1.Pod{}
	}
	specPath := field.NewPath("spec")
	errs := validatePodAnnotations(p, old)
	errs = append(errs, validatePodSpec(&p.Spec, podSpecOptions{isPod: true, podName: p.Name}, specPath)...)
	if p.Spec.ServiceAccountName == "" && p.Spec.DeprecatedServiceAccount == "" {
		for i, v := range p.Spec.Volumes {
			if v.Projected == nil {
				continue
			}
			for j, s := range v.Projected.Sources {
				if s.ServiceAccountToken != nil {
					errs = append(errs, field.Forbidden(specPath.Child("volumes").Index(i).Child("projected", "sources").Index(j).Child("serviceAccountToken"),
						"must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	for i, c := range p.Spec.Containers {
		errs = append(errs, validateImageWhitespace(c.Image, specPath.Child("containers").Index(i).Child("image"))...)
	}
	for i, c := range p.Spec.InitContainers {
		errs = append(errs, validateImageWhitespace(c.Image, specPath.Child("initContainers").Index(i).Child("image"))...)
	}
	if old == nil {
		if len(p.Spec.EphemeralContainers) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
		}
		if p.Spec.NodeName != "" && len(p.Spec.SchedulingGates) != 0 {
			errs = append(errs, field.Forbidden(specPath.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
		}
		return errs
	}
	return append(errs, validatePodSpecUpdate(&p.Spec, &old.Spec, specPath)...)
}

// validatePodAnnotations holds the rules on the annotation the kubelet puts
// on the mirror of a static pod: it needs a node, and users may not add,
// change or remove it.
func validatePodAnnotations(p, old *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	fldPath := field.NewPath("metadata", "annotations")
	key := corev1.MirrorPodAnnotationKey
	value, mirror := p.Annotations[key]
	if mirror && p.Spec.NodeName == "" {
		errs = append(errs, field.Invalid(fldPath.Key(key), value, "must set spec.nodeName if mirror pod annotation is set"))
	}
	if old == nil {
		return errs
	}
	oldValue, wasMirror := old.Annotations[key]
	switch {
	case wasMirror && (!mirror || value != oldValue):
		errs = append(errs, field.Forbidden(fldPath.Key(key), "may not remove or update mirror pod annotation"))
	case !wasMirror && mirror:
		errs = append(errs, field.Forbidden(fldPath.Key(key), "may not add mirror pod annotation"))
	}
	return errs
}

func validatePodSpecUpdate(spec, old *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name          string
		now, previous []corev1.Container
	}{{"containers", spec.Containers, old.Containers}, {"initContainers", spec.InitContainers, old.InitContainers}} {
		p := specPath.Child(list.name)
		if len(list.now) != len(list.previous) {
			return append(errs, field.Forbidden(p, "pod updates may not add or remove containers"))
		}
		for i, c := range list.now {
			if c.Image == "" {
				errs = append(errs, field.Required(p.Index(i).Child("image"), ""))
			}
		}
	}

	deadlinePath := specPath.Child("activeDeadlineSeconds")
	if spec.ActiveDeadlineSeconds != nil {
		v := *spec.ActiveDeadlineSeconds
		if v < 0 || v > math.MaxInt32 {
			return append(errs, field.Invalid(deadlinePath, v, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if old.ActiveDeadlineSeconds != nil && *old.ActiveDeadlineSeconds < v {
			return append(errs, field.Invalid(deadlinePath, v, "must be less than or equal to previous value"))
		}
	} else if old.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(deadlinePath, spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}
	errs = append(errs, validateOnlyAddedTolerations(spec.Tolerations, old.Tolerations, specPath.Child("tolerations"))...)
	errs = append(errs, validateOnlyDeletedSchedulingGates(spec.SchedulingGates, old.SchedulingGates, specPath.Child("schedulingGates"))...)

	// Put the old values back into the fields that may change; whatever
	// still differs may not.
	munged := spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = old.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = old.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = old.ActiveDeadlineSeconds
	munged.SchedulingGates = old.SchedulingGates
	munged.Tolerations = old.Tolerations
	if old.TerminationGracePeriodSeconds != nil && *old.TerminationGracePeriodSeconds < 0 &&
		munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = old.TerminationGracePeriodSeconds
	}
	if len(old.SchedulingGates) > 0 && !equality.Semantic.DeepEqual(munged.NodeSelector, old.NodeSelector) {
		errs = append(errs, validateNodeSelectorAdditions(munged.NodeSelector, old.NodeSelector, specPath.Child("nodeSelector"))...)
		munged.NodeSelector = old.NodeSelector
	}
	// kube has no spec.serviceAccount internally, so it cannot differ.
	previous := old.DeepCopy()
	for _, s := range []*corev1.PodSpec{munged, previous} {
		if s.ServiceAccountName == "" {
			s.ServiceAccountName = s.DeprecatedServiceAccount
		}
		s.DeprecatedServiceAccount = ""
	}
	if !equality.Semantic.DeepEqual(munged, previous) {
		errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v", updatablePodSpecFields, specDiff(previous, munged))))
	}
	return errs
}

// validateOnlyAddedTolerations: existing tolerations stay, except that
// their tolerationSeconds may change; new ones may be added.
func validateOnlyAddedTolerations(now, previous []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	for _, old := range previous {
		found := false
		for _, t := range now {
			candidate := old
			candidate.TolerationSeconds = t.TolerationSeconds
			if equality.Semantic.DeepEqual(candidate, t) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return validateTolerations(now, fldPath)
}

func validateOnlyDeletedSchedulingGates(now, previous []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	had := map[string]bool{}
	for _, g := range previous {
		had[g.Name] = true
	}
	for i, g := range now {
		if !had[g.Name] {
			errs = append(errs, field.Forbidden(fldPath.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}

// validateNodeSelectorAdditions: while a pod is gated, its nodeSelector may
// gain entries but not lose or change any.
func validateNodeSelectorAdditions(now, previous map[string]string, fldPath *field.Path) field.ErrorList {
	for k, v := range previous {
		if nv, ok := now[k]; !ok || nv != v {
			return field.ErrorList{field.Invalid(fldPath, now, "only additions to spec.nodeSelector are allowed (no mutations or deletions)")}
		}
	}
	return nil
}

// ValidatePodStatusUpdate validates an update through the status
// subresource: what may be said about a pod's state, not its spec (the
// caller carries the spec over from old, as kube's status strategy does).
func ValidatePodStatusUpdate(p, old *corev1.Pod) field.ErrorList {
	if p == nil {
		p = &corev1.Pod{}
	}
	if old == nil {
		old = &corev1.Pod{}
	}
	errs := validatePodAnnotations(p, old)
	// kube reports condition types under metadata, a long-standing quirk
	// kept so that clients see the same path.
	condPath := field.NewPath("metadata", "conditions")
	for i, c := range p.Status.Conditions {
		switch c.Type {
		case corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized:
			continue
		}
		errs = append(errs, validateQualifiedName(string(c.Type), condPath.Index(i).Child("Type"))...)
	}
	statusPath := field.NewPath("status")
	if p.Spec.NodeName != old.Spec.NodeName {
		errs = append(errs, field.Forbidden(statusPath.Child("nodeName"), "may not be changed directly"))
	}
	if n := p.Status.NominatedNodeName; n != old.Status.NominatedNodeName && n != "" {
		errs = append(errs, validateName(n, apivalidation.NameIsDNSSubdomain, statusPath.Child("nominatedNodeName"))...)
	}
	errs = append(errs, apivalidation.ValidateImmutableField(p.Status.QOSClass, old.Status.QOSClass, statusPath.Child("qosClass"))...)
	errs = append(errs, validateContainerStateTransitions(p.Status.ContainerStatuses, old.Status.ContainerStatuses, old.Spec.RestartPolicy, nil, statusPath.Child("containerStatuses"))...)
	errs = append(errs, validateContainerStateTransitions(p.Status.InitContainerStatuses, old.Status.InitContainerStatuses, old.Spec.RestartPolicy, old.Spec.InitContainers, statusPath.Child("initContainerStatuses"))...)
	// The kubelet never restarts an ephemeral container.
	errs = append(errs, validateContainerStateTransitions(p.Status.EphemeralContainerStatuses, old.Status.EphemeralContainerStatuses, corev1.RestartPolicyNever, nil, statusPath.Child("ephemeralContainerStatuses"))...)
	errs = append(errs, validateResourceClaimStatuses(p.Status.ResourceClaimStatuses, p.Spec.ResourceClaims, statusPath.Child("resourceClaimStatuses"))...)
	errs = append(errs, validateStatusIPs(podIPStrings(&p.Status), statusPath.Child("podIPs"))...)
	errs = append(errs, validateHostIPs(&p.Status, statusPath)...)
	return errs
}

// validateContainerStateTransitions: unless the pod restarts containers, a
// terminated container stays terminated. inits, when given, are the init
// containers, of which sidecars (restartPolicy Always) may restart.
func validateContainerStateTransitions(now, previous []corev1.ContainerStatus, restart corev1.RestartPolicy, inits []corev1.Container, fldPath *field.Path) field.ErrorList {
	if restart == corev1.RestartPolicyAlways {
		return nil
	}
	var errs field.ErrorList
	for i, old := range previous {
		if old.State.Terminated == nil {
			continue
		}
		if old.State.Terminated.ExitCode != 0 && restart == corev1.RestartPolicyOnFailure {
			continue
		}
		sidecar := false
		for _, c := range inits {
			if c.Name == old.Name {
				sidecar = c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
				break
			}
		}
		if sidecar {
			continue
		}
		for _, s := range now {
			if s.Name == old.Name && s.State.Terminated == nil {
				errs = append(errs, field.Forbidden(fldPath.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return errs
}

func validateResourceClaimStatuses(statuses []corev1.PodResourceClaimStatus, claims []corev1.PodResourceClaim, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, s := range statuses {
		p := fldPath.Index(i)
		known := false
		for _, c := range claims {
			known = known || c.Name == s.Name
		}
		if !known {
			errs = append(errs, field.Invalid(p.Child("name"), s.Name, "must match the name of an entry in `spec.resourceClaims`"))
		}
		if seen[s.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), s.Name))
		}
		seen[s.Name] = true
		if s.ResourceClaimName != nil {
			errs = append(errs, validateName(*s.ResourceClaimName, apivalidation.NameIsDNSSubdomain, p.Child("name"))...)
		}
	}
	return errs
}

// podIPStrings returns the pod's IPs as kube holds them: podIPs, or podIP
// alone when podIPs is empty or disagrees.
func podIPStrings(s *corev1.PodStatus) []string {
	if s.PodIP != "" && (len(s.PodIPs) == 0 || s.PodIPs[0].IP != s.PodIP) {
		return []string{s.PodIP}
	}
	ips := make([]string, len(s.PodIPs))
	for i, ip := range s.PodIPs {
		ips[i] = ip.IP
	}
	return ips
}

// validateStatusIPs: valid addresses, at most one per IP family.
func validateStatusIPs(ips []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ip := range ips {
		errs = append(errs, validation.IsValidIP(fldPath.Index(i), ip)...)
	}
	if len(ips) > 1 {
		v4, v6 := ipFamilies(ips, false)
		if !(v4 && v6) || len(ips) > 2 {
			errs = append(errs, field.Invalid(fldPath, strings.Join(ips, ","), "may specify no more than one IP for each IP family"))
		}
		seen := map[string]bool{}
		for i, ip := range ips {
			if seen[ip] {
				errs = append(errs, field.Duplicate(fldPath.Index(i), ip))
			}
			seen[ip] = true
		}
	}
	return errs
}

func validateHostIPs(s *corev1.PodStatus, statusPath *field.Path) field.ErrorList {
	if len(s.HostIPs) == 0 {
		return nil
	}
	p := statusPath.Child("hostIPs")
	var errs field.ErrorList
	if s.HostIP != s.HostIPs[0].IP {
		errs = append(errs, field.Invalid(p.Index(0).Child("ip"), s.HostIPs[0].IP, "must be equal to `hostIP`"))
	}
	ips := make([]string, len(s.HostIPs))
	for i, ip := range s.HostIPs {
		ips[i] = ip.IP
	}
	return append(errs, validateStatusIPs(ips, p)...)
}

// PodFields returns the fields a pod can be selected by, as kube's field
// selectors see them (metadata.name and metadata.namespace included).
func PodFields(p *corev1.Pod) fields.Set {
	if p == nil {
		p = &corev1.Pod{}
	}
	podIP := ""
	if ips := podIPStrings(&p.Status); len(ips) > 0 {
		podIP = ips[0]
	}
	return fields.Set{
		"metadata.name":            p.Name,
		"metadata.namespace":       p.Namespace,
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  serviceAccountOf(&p.Spec),
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

func serviceAccountOf(spec *corev1.PodSpec) string {
	if spec.ServiceAccountName != "" {
		return spec.ServiceAccountName
	}
	return spec.DeprecatedServiceAccount
}

// specDiff shows the forbidden change the way kube does, as a go-cmp diff.
// The diff is a courtesy: should go-cmp refuse a type, the error is still
// returned, without it.
func specDiff(previous, now *corev1.PodSpec) (diff string) {
	defer func() {
		if recover() != nil {
			diff = ""
		}
	}()
	return cmp.Diff(*previous, *now)
}
