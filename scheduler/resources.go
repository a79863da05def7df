package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Requests without a value count as these when nodes are scored for what
// is left on them, so that pods which ask for nothing still spread; kube's
// defaults (100 millicores, 200 MiB).
const (
	defaultMilliCPURequest = 100
	defaultMemoryRequest   = 200 * 1024 * 1024
)

// resources are amounts in the units the scheduler compares: millicores
// and bytes; scalar holds extended resources and hugepages by name.
type resources struct {
	milliCPU, memory, ephemeral int64
	scalar                      map[corev1.ResourceName]int64
}

// resourcesOf reads a ResourceList; "pods" is not a resource a pod asks
// for, and is read apart (allowedPods).
func resourcesOf(list corev1.ResourceList) resources {
	var r resources
	for name, q := range list {
		switch name {
		case corev1.ResourceCPU:
			r.milliCPU = q.MilliValue()
		case corev1.ResourceMemory:
			r.memory = q.Value()
		case corev1.ResourceEphemeralStorage:
			r.ephemeral = q.Value()
		case corev1.ResourcePods:
		default:
			if v := q.Value(); v != 0 {
				if r.scalar == nil {
					r.scalar = map[corev1.ResourceName]int64{}
				}
				r.scalar[name] = v
			}
		}
	}
	return r
}

// add adds (sign 1) or removes (sign -1) o.
func (r *resources) add(o resources, sign int64) {
	r.milliCPU += sign * o.milliCPU
	r.memory += sign * o.memory
	r.ephemeral += sign * o.ephemeral
	for name, v := range o.scalar {
		if r.scalar == nil {
			r.scalar = map[corev1.ResourceName]int64{}
		}
		r.scalar[name] += sign * v
	}
}

func (r resources) clone() resources {
	c := r
	if r.scalar != nil {
		c.scalar = make(map[corev1.ResourceName]int64, len(r.scalar))
		for k, v := range r.scalar {
			c.scalar[k] = v
		}
	}
	return c
}

// podRequests are what a pod asks of its node, as kube counts them: the
// larger of its init containers' and its containers' (with sidecars), plus
// its overhead, or its pod-level requests. nonZero is the same with the
// defaults above for a CPU or memory request not given, for scoring.
func podRequests(pod *corev1.Pod) (requests, nonZero resources) {
	requests = resourcesOf(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	nz := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{
		NonMissingContainerRequests: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(defaultMilliCPURequest, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(defaultMemoryRequest, resource.BinarySI),
		},
	})
	nonZero = resources{milliCPU: nz.Cpu().MilliValue(), memory: nz.Memory().Value()}
	return requests, nonZero
}
