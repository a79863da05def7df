package kinds

import (
	corev1 "k8s.io/api/core/v1"
)

// qosResources are the resources a pod's quality of service class is
// computed from.
var qosResources = [...]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// QOSClass is the quality of service class kube gives a pod with spec when
// it is created (ComputePodQOS): from the pod-level resources when the spec
// has them, otherwise from those of every init container and container
// (ephemeral containers have none). Only CPU and memory count, and a
// quantity not given counts as zero:
//
//   - BestEffort: nothing requests or limits either;
//   - Guaranteed: each set of resources requests exactly its limit of both;
//   - Burstable: anything else, such as a request below its limit, a limit
//     of CPU but not of memory, or one container of each of the others.
//
// Defaulting copies a container's limits into the requests it leaves out,
// so a container with limits alone is Guaranteed once defaulted.
func QOSClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	if spec == nil {
		return corev1.PodQOSBestEffort
	}
	if spec.Resources != nil {
		return resourcesQOS(spec.Resources)
	}
	var class corev1.PodQOSClass
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			switch c := resourcesQOS(&containers[i].Resources); {
			case c == corev1.PodQOSBurstable:
				return c
			case class == "":
				class = c
			case c != class:
				return corev1.PodQOSBurstable
			}
		}
	}
	if class == "" {
		return corev1.PodQOSBestEffort
	}
	return class
}

// resourcesQOS is the class of one set of requests and limits.
func resourcesQOS(r *corev1.ResourceRequirements) corev1.PodQOSClass {
	zero := 0
	for _, name := range qosResources {
		request, limit := r.Requests[name], r.Limits[name]
		if request.Cmp(limit) != 0 {
			return corev1.PodQOSBurstable
		}
		if request.IsZero() {
			zero++
		}
	}
	switch zero {
	case 0:
		return corev1.PodQOSGuaranteed
	case len(qosResources):
		return corev1.PodQOSBestEffort
	}
	return corev1.PodQOSBurstable
}
