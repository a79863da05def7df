package kinds

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestQOSClass(t *testing.T) {
	for _, tt := range []struct {
		name string
		spec string // a PodSpec in YAML
		// defaults runs DefaultPod first, as a create does.
		defaults bool
		want     corev1.PodQOSClass
	}{
		{"no resources", `
containers: [{name: a}, {name: b}]`, false, corev1.PodQOSBestEffort},
		{"no containers", `{}`, false, corev1.PodQOSBestEffort},
		{"only resources other than CPU and memory", `
containers:
- name: a
  resources:
    requests: {ephemeral-storage: 1Gi}
    limits: {ephemeral-storage: 1Gi, hugepages-2Mi: 2Mi}`, false, corev1.PodQOSBestEffort},
		{"zero requests and limits", `
containers:
- name: a
  resources:
    requests: {cpu: "0", memory: "0"}
    limits: {cpu: "0", memory: "0"}`, false, corev1.PodQOSBestEffort},
		{"requests equal to limits", `
containers:
- name: a
  resources:
    requests: {cpu: 500m, memory: 128Mi}
    limits: {cpu: 500m, memory: 128Mi}
- name: b
  resources:
    requests: {cpu: "1", memory: 1Gi, ephemeral-storage: 1Gi}
    limits: {cpu: "1", memory: 1Gi}`, false, corev1.PodQOSGuaranteed},
		{"equal in other units", `
containers:
- name: a
  resources:
    requests: {cpu: "1", memory: 1Gi}
    limits: {cpu: 1000m, memory: 1024Mi}`, false, corev1.PodQOSGuaranteed},
		{"limits alone, defaulted into requests", `
containers:
- name: a
  resources:
    limits: {cpu: 500m, memory: 128Mi}`, true, corev1.PodQOSGuaranteed},
		{"limits alone, not defaulted", `
containers:
- name: a
  resources:
    limits: {cpu: 500m, memory: 128Mi}`, false, corev1.PodQOSBurstable},
		{"requests alone", `
containers:
- name: a
  resources:
    requests: {cpu: 500m}`, false, corev1.PodQOSBurstable},
		{"a request below its limit", `
containers:
- name: a
  resources:
    requests: {cpu: 250m, memory: 128Mi}
    limits: {cpu: 500m, memory: 128Mi}`, false, corev1.PodQOSBurstable},
		{"CPU limited, memory not", `
containers:
- name: a
  resources:
    requests: {cpu: 500m}
    limits: {cpu: 500m}`, false, corev1.PodQOSBurstable},
		{"one container guaranteed, one best effort", `
containers:
- name: a
  resources:
    requests: {cpu: 500m, memory: 128Mi}
    limits: {cpu: 500m, memory: 128Mi}
- name: b`, false, corev1.PodQOSBurstable},
		{"init containers count: guaranteed", `
initContainers:
- name: init
  resources:
    requests: {cpu: "1", memory: 1Gi}
    limits: {cpu: "1", memory: 1Gi}
containers:
- name: a
  resources:
    requests: {cpu: 500m, memory: 128Mi}
    limits: {cpu: 500m, memory: 128Mi}`, false, corev1.PodQOSGuaranteed},
		{"init containers count: best effort", `
initContainers: [{name: init}]
containers:
- name: a
  resources:
    requests: {cpu: 500m, memory: 128Mi}
    limits: {cpu: 500m, memory: 128Mi}`, false, corev1.PodQOSBurstable},
		{"init containers count: burstable", `
initContainers:
- name: init
  resources:
    requests: {cpu: 100m}
containers: [{name: a}]`, false, corev1.PodQOSBurstable},
		{"ephemeral containers do not count", `
containers:
- name: a
  resources:
    requests: {cpu: 500m, memory: 128Mi}
    limits: {cpu: 500m, memory: 128Mi}
ephemeralContainers:
- name: debug
  resources:
    requests: {cpu: 100m}`, false, corev1.PodQOSGuaranteed},
		{"pod-level resources, guaranteed", `
resources:
  requests: {cpu: "1", memory: 1Gi}
  limits: {cpu: "1", memory: 1Gi}
containers: [{name: a}, {name: b}]`, false, corev1.PodQOSGuaranteed},
		{"pod-level resources decide over containers'", `
resources:
  requests: {cpu: 500m, memory: 1Gi}
  limits: {cpu: "1", memory: 1Gi}
containers:
- name: a
  resources:
    requests: {cpu: 500m, memory: 128Mi}
    limits: {cpu: 500m, memory: 128Mi}`, false, corev1.PodQOSBurstable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := fromYAML[corev1.PodSpec](t, tt.spec)
			if tt.defaults {
				p := &corev1.Pod{Spec: *spec}
				DefaultPod(p)
				spec = &p.Spec
			}
			if got := QOSClass(spec); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	if got := QOSClass(nil); got != corev1.PodQOSBestEffort {
		t.Errorf("nil spec: got %s, want %s", got, corev1.PodQOSBestEffort)
	}
}
