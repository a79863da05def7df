package kinds

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
)

// TestNilAndZeroObjects calls every exported function with nil and with
// zero-valued objects, for create and update: none may panic, and the
// defaulters must then produce objects the same calls accept again.
func TestNilAndZeroObjects(t *testing.T) {
	DefaultPod(nil)
	DefaultPodTemplateSpec(nil)
	DefaultNode(nil)
	DefaultEvent(nil)
	DefaultReplicaSet(nil)
	DefaultDeployment(nil)
	_ = EventToV1(nil)
	_ = EventFromV1(nil)
	for _, f := range []func(){
		func() { ValidatePod(nil, nil); ValidatePod(nil, &corev1.Pod{}); ValidatePod(&corev1.Pod{}, nil) },
		func() { ValidatePodStatusUpdate(nil, nil); ValidatePodStatusUpdate(&corev1.Pod{}, &corev1.Pod{}) },
		func() { PodFields(nil); PodFields(&corev1.Pod{}) },
		func() { ValidateNode(nil, nil); ValidateNode(&corev1.Node{}, &corev1.Node{}); NodeFields(nil) },
		func() {
			ValidateServiceAccount(nil, nil)
			ValidateServiceAccount(&corev1.ServiceAccount{}, &corev1.ServiceAccount{})
		},
		func() { ValidateEvent(nil, nil); ValidateEvent(&corev1.Event{}, &corev1.Event{}); EventFields(nil) },
		func() { ValidateReplicaSet(nil, nil); ValidateReplicaSet(&appsv1.ReplicaSet{}, &appsv1.ReplicaSet{}) },
		func() { ValidateReplicaSetStatusUpdate(nil, nil); ReplicaSetFields(nil) },
		func() { ValidateDeployment(nil, nil); ValidateDeployment(&appsv1.Deployment{}, &appsv1.Deployment{}) },
		func() {
			ValidateDeploymentStatusUpdate(nil, nil)
			ValidateDeploymentStatusUpdate(&appsv1.Deployment{}, &appsv1.Deployment{})
		},
		func() { ValidateLease(nil, nil); ValidateLease(&coordinationv1.Lease{}, &coordinationv1.Lease{}) },
		func() { ValidateNamespace(nil, nil); ValidateNamespace(&corev1.Namespace{}, &corev1.Namespace{}) },
		func() { EventToV1(&eventsv1.Event{}); EventFromV1(&corev1.Event{}) },
	} {
		f()
	}

	// Zero objects with their nested optional structs present but empty.
	p := &corev1.Pod{Spec: corev1.PodSpec{
		Containers:                []corev1.Container{{LivenessProbe: &corev1.Probe{}, Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{}}, SecurityContext: &corev1.SecurityContext{}}},
		InitContainers:            []corev1.Container{{}},
		EphemeralContainers:       []corev1.EphemeralContainer{{}},
		Volumes:                   []corev1.Volume{{}, {VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{}}}}}},
		Affinity:                  &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}, PodAffinity: &corev1.PodAffinity{}},
		DNSConfig:                 &corev1.PodDNSConfig{},
		OS:                        &corev1.PodOS{},
		Resources:                 &corev1.ResourceRequirements{},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{}},
	}}
	DefaultPod(p)
	ValidatePod(p, nil)
	ValidatePod(p, p.DeepCopy())
	ValidatePodStatusUpdate(p, p.DeepCopy())

	d := &appsv1.Deployment{}
	DefaultDeployment(d)
	ValidateDeployment(d, d.DeepCopy())
	rs := &appsv1.ReplicaSet{}
	DefaultReplicaSet(rs)
	ValidateReplicaSet(rs, rs.DeepCopy())
	n := &corev1.Node{Spec: corev1.NodeSpec{ConfigSource: &corev1.NodeConfigSource{ConfigMap: &corev1.ConfigMapNodeConfigSource{}}}}
	DefaultNode(n)
	ValidateNode(n, n.DeepCopy())
}
