package kinds

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// refusals renders each error as "path: type: detail", sorted: what a
// client is told, in any order, each as often as it is said.
func refusals(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s: %s: %s", e.Field, e.Type, e.Detail))
	}
	slices.Sort(out)
	return out
}

// TestNilAndZeroObjects calls every exported function with nil and with
// zero-valued objects, for create and update. None may panic; a nil object
// is the zero value; and each validation refuses a zero object exactly as
// kube's validation of that kind does (path, type and detail of every
// error), except for object metadata, which the caller validates. Zero
// objects are validated as they are, without defaulting, as kube's
// validation functions take them.
func TestNilAndZeroObjects(t *testing.T) {
	spec := field.NewPath("spec")
	template := spec.Child("template")
	// ValidatePodSpec of a zero PodSpec: containers, and the three fields
	// that defaulting sets.
	zeroPodSpec := func(p *field.Path) field.ErrorList {
		return field.ErrorList{
			field.Required(p.Child("terminationGracePeriodSeconds"), ""),
			field.Required(p.Child("containers"), ""),
			field.Required(p.Child("restartPolicy"), ""),
			field.Required(p.Child("dnsPolicy"), ""),
		}
	}
	// ValidateReplicaSetSpec and ValidateDeploymentSpec of a zero spec: no
	// selector, and a nil one selects nothing (labels.Nothing()), so the
	// template's labels do not match it either; the template's zero pod
	// spec; and its restartPolicy, which must be Always.
	zeroWorkload := append(field.ErrorList{
		field.Required(spec.Child("selector"), ""),
		field.Invalid(template.Child("metadata", "labels"), nil, "`selector` does not match template `labels`"),
		field.NotSupported(template.Child("spec", "restartPolicy"), "", []string{string(corev1.RestartPolicyAlways)}),
	}, zeroPodSpec(template.Child("spec"))...)
	// ValidateDeploymentStrategy: a type of "" is neither of the two.
	zeroDeployment := append(slices.Clone(zeroWorkload), field.NotSupported(spec.Child("strategy"), nil,
		[]string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)}))
	// legacyValidateEvent, all that kube checks of an Event written
	// through core/v1: the namespace, "" here, must be a DNS subdomain.
	zeroEvent := field.ErrorList{field.Invalid(field.NewPath("namespace"), "", validation.IsDNS1123Subdomain("")[0])}

	for _, tt := range []struct {
		name string
		got  field.ErrorList
		want field.ErrorList
	}{
		{"pod create, nil", ValidatePod(nil, nil), zeroPodSpec(spec)},
		{"pod create", ValidatePod(&corev1.Pod{}, nil), zeroPodSpec(spec)},
		// ValidatePodUpdate: the spec again, and no change.
		{"pod update, nil", ValidatePod(nil, &corev1.Pod{}), zeroPodSpec(spec)},
		{"pod update", ValidatePod(&corev1.Pod{}, &corev1.Pod{}), zeroPodSpec(spec)},
		{"pod status update, nil", ValidatePodStatusUpdate(nil, nil), nil},
		{"pod status update", ValidatePodStatusUpdate(&corev1.Pod{}, &corev1.Pod{}), nil},
		// ValidateNode checks taints, resources and podCIDRs, all empty.
		{"node create, nil", ValidateNode(nil, nil), nil},
		{"node create", ValidateNode(&corev1.Node{}, nil), nil},
		{"node update", ValidateNode(&corev1.Node{}, &corev1.Node{}), nil},
		// ValidateServiceAccount checks its secrets, none here.
		{"service account create, nil", ValidateServiceAccount(nil, nil), nil},
		{"service account update", ValidateServiceAccount(&corev1.ServiceAccount{}, &corev1.ServiceAccount{}), nil},
		{"event create, nil", ValidateEvent(nil, nil), zeroEvent},
		{"event create", ValidateEvent(&corev1.Event{}, nil), zeroEvent},
		{"event update", ValidateEvent(&corev1.Event{}, &corev1.Event{}), zeroEvent},
		{"replica set create, nil", ValidateReplicaSet(nil, nil), zeroWorkload},
		{"replica set create", ValidateReplicaSet(&appsv1.ReplicaSet{}, nil), zeroWorkload},
		{"replica set update", ValidateReplicaSet(&appsv1.ReplicaSet{}, &appsv1.ReplicaSet{}), zeroWorkload},
		{"replica set status update, nil", ValidateReplicaSetStatusUpdate(nil, nil), nil},
		{"replica set status update", ValidateReplicaSetStatusUpdate(&appsv1.ReplicaSet{}, &appsv1.ReplicaSet{}), nil},
		{"deployment create, nil", ValidateDeployment(nil, nil), zeroDeployment},
		{"deployment create", ValidateDeployment(&appsv1.Deployment{}, nil), zeroDeployment},
		{"deployment update", ValidateDeployment(&appsv1.Deployment{}, &appsv1.Deployment{}), zeroDeployment},
		{"deployment status update, nil", ValidateDeploymentStatusUpdate(nil, nil), nil},
		{"deployment status update", ValidateDeploymentStatusUpdate(&appsv1.Deployment{}, &appsv1.Deployment{}), nil},
		// ValidateLeaseSpec checks only what is set.
		{"lease create, nil", ValidateLease(nil, nil), nil},
		{"lease update", ValidateLease(&coordinationv1.Lease{}, &coordinationv1.Lease{}), nil},
		// ValidateNamespace checks the finalizers, none here.
		{"namespace create, nil", ValidateNamespace(nil, nil), nil},
		{"namespace update", ValidateNamespace(&corev1.Namespace{}, &corev1.Namespace{}), nil},
	} {
		if diff := cmp.Diff(refusals(tt.want), refusals(tt.got)); diff != "" {
			t.Errorf("%s: errors (-want +got):\n%s", tt.name, diff)
		}
	}

	for _, tt := range []struct {
		name          string
		ofNil, ofZero any
	}{
		{"PodFields", PodFields(nil), PodFields(&corev1.Pod{})},
		{"NodeFields", NodeFields(nil), NodeFields(&corev1.Node{})},
		{"EventFields", EventFields(nil), EventFields(&corev1.Event{})},
		{"ReplicaSetFields", ReplicaSetFields(nil), ReplicaSetFields(&appsv1.ReplicaSet{})},
		{"QOSClass", QOSClass(nil), QOSClass(&corev1.PodSpec{})},
		{"PodGracePeriod", PodGracePeriod(nil, nil), PodGracePeriod(&corev1.Pod{}, &metav1.DeleteOptions{})},
	} {
		if !equality.Semantic.DeepEqual(tt.ofNil, tt.ofZero) {
			t.Errorf("%s: of nil %v, of the zero value %v", tt.name, tt.ofNil, tt.ofZero)
		}
	}
	if e := EventToV1(nil); e != nil {
		t.Errorf("EventToV1(nil) = %v, want nil", e)
	}
	if e := EventFromV1(nil); e != nil {
		t.Errorf("EventFromV1(nil) = %v, want nil", e)
	}
	EventToV1(&eventsv1.Event{})
	EventFromV1(&corev1.Event{})
	DefaultPod(nil)
	DefaultPodTemplateSpec(nil)
	DefaultNode(nil)
	DefaultEvent(nil)
	DefaultReplicaSet(nil)
	DefaultDeployment(nil)
}

// TestDefaultedEmptyObjects defaults objects whose optional nested structs
// are present but empty, then validates them for create and update. None
// may panic, and what is refused is exactly what kube refuses once its
// defaulting has run: what defaulting cannot supply (names, images,
// handlers, selectors, topology keys...) and nothing that it does (probe
// thresholds, a volume's source, restart and DNS policies...).
func TestDefaultedEmptyObjects(t *testing.T) {
	spec := field.NewPath("spec")
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
	container := spec.Child("containers").Index(0)
	initContainer := spec.Child("initContainers").Index(0)
	ephemeral := spec.Child("ephemeralContainers").Index(0)
	constraint := spec.Child("topologySpreadConstraints").Index(0)
	// ValidatePodSpec. Not refused: the first volume, an emptyDir once
	// defaulted; the empty projection, which kube does not require to
	// name a source; the empty pod affinity, DNS config, security context
	// and pod-level resources.
	podSpec := field.ErrorList{
		field.Required(spec.Child("volumes").Index(0).Child("name"), ""),
		field.Required(spec.Child("volumes").Index(1).Child("name"), ""),
		field.Required(container.Child("name"), ""),
		field.Required(container.Child("image"), ""),
		field.Required(container.Child("lifecycle", "preStop"), "must specify a handler type"),
		field.Required(container.Child("livenessProbe"), "must specify a handler type"),
		field.Required(initContainer.Child("name"), ""),
		field.Required(initContainer.Child("image"), ""),
		// "" is also the name of the regular container.
		field.Duplicate(initContainer.Child("name"), ""),
		field.Required(ephemeral.Child("name"), ""),
		field.Required(ephemeral.Child("image"), ""),
		field.Duplicate(ephemeral.Child("name"), ""),
		field.Required(spec.Child("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"), "must have at least one node selector term"),
		field.Invalid(constraint.Child("maxSkew"), 0, "must be greater than zero"),
		field.Required(constraint.Child("topologyKey"), "can not be empty"),
		field.NotSupported(constraint.Child("whenUnsatisfiable"), "", []string{string(corev1.DoNotSchedule), string(corev1.ScheduleAnyway)}),
		field.Required(spec.Child("os", "name"), "cannot be empty"),
	}
	// ValidatePodCreate adds that ephemeral containers come only through
	// their subresource; ValidatePodUpdate (ValidateContainerUpdates)
	// checks every image again.
	podCreate := append(slices.Clone(podSpec), field.Forbidden(spec.Child("ephemeralContainers"), "cannot be set on create"))
	podUpdate := append(slices.Clone(podSpec), field.Required(container.Child("image"), ""), field.Required(initContainer.Child("image"), ""))

	// A defaulted zero Deployment or ReplicaSet lacks only a selector (so
	// its template's labels match none) and containers.
	template := spec.Child("template")
	workload := field.ErrorList{
		field.Required(spec.Child("selector"), ""),
		field.Invalid(template.Child("metadata", "labels"), nil, "`selector` does not match template `labels`"),
		field.Required(template.Child("spec", "containers"), ""),
	}
	d := &appsv1.Deployment{}
	DefaultDeployment(d)
	rs := &appsv1.ReplicaSet{}
	DefaultReplicaSet(rs)

	// ValidateNodeUpdate checks a config source the old node already had
	// (kube drops a new one): validateConfigMapNodeConfigSource.
	n := &corev1.Node{Spec: corev1.NodeSpec{ConfigSource: &corev1.NodeConfigSource{ConfigMap: &corev1.ConfigMapNodeConfigSource{}}}}
	DefaultNode(n)
	configMap := spec.Child("configSource", "configMap")
	nodeUpdate := field.ErrorList{
		field.Required(configMap.Child("namespace"), "namespace must be set"),
		field.Required(configMap.Child("name"), "name must be set"),
		field.Required(configMap.Child("kubeletConfigKey"), "kubeletConfigKey must be set"),
	}

	for _, tt := range []struct {
		name string
		got  field.ErrorList
		want field.ErrorList
	}{
		{"pod create", ValidatePod(p, nil), podCreate},
		{"pod update", ValidatePod(p, p.DeepCopy()), podUpdate},
		{"pod status update", ValidatePodStatusUpdate(p, p.DeepCopy()), nil},
		{"deployment create", ValidateDeployment(d, nil), workload},
		{"deployment update", ValidateDeployment(d, d.DeepCopy()), workload},
		{"replica set create", ValidateReplicaSet(rs, nil), workload},
		{"replica set update", ValidateReplicaSet(rs, rs.DeepCopy()), workload},
		{"node update", ValidateNode(n, n.DeepCopy()), nodeUpdate},
	} {
		if diff := cmp.Diff(refusals(tt.want), refusals(tt.got)); diff != "" {
			t.Errorf("%s: errors (-want +got):\n%s", tt.name, diff)
		}
	}
}
