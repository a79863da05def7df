package kinds

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validReplicaSet() *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{}
	rs.Name, rs.Namespace = "web-5d9c", "default"
	rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "5d9c"}}
	rs.Spec.Template.Labels = map[string]string{"app": "web", "pod-template-hash": "5d9c"}
	rs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "nginx", Image: "nginx"}}
	DefaultReplicaSet(rs)
	return rs
}

func TestDefaultReplicaSet(t *testing.T) {
	rs := validReplicaSet()
	if rs.Spec.Replicas == nil || *rs.Spec.Replicas != 1 {
		t.Errorf("replicas = %v, want 1", rs.Spec.Replicas)
	}
	spec := rs.Spec.Template.Spec
	if spec.RestartPolicy != corev1.RestartPolicyAlways || spec.DNSPolicy != corev1.DNSClusterFirst ||
		spec.SchedulerName != corev1.DefaultSchedulerName || spec.SecurityContext == nil ||
		spec.TerminationGracePeriodSeconds == nil || *spec.TerminationGracePeriodSeconds != 30 {
		t.Errorf("template spec not defaulted: %+v", spec)
	}
	if c := spec.Containers[0]; c.ImagePullPolicy != corev1.PullAlways || c.TerminationMessagePath != corev1.TerminationMessagePathDefault {
		t.Errorf("container not defaulted: %+v", c)
	}
	again := rs.DeepCopy()
	DefaultReplicaSet(again)
	if !equality.Semantic.DeepEqual(rs, again) {
		t.Errorf("second DefaultReplicaSet changed it:\n%s", cmp.Diff(rs, again))
	}
	DefaultReplicaSet(nil)
}

func TestValidateReplicaSet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(rs *appsv1.ReplicaSet)
		want   []string
	}{
		{"valid", func(rs *appsv1.ReplicaSet) {}, nil},
		{"scaled to zero", func(rs *appsv1.ReplicaSet) { zero := int32(0); rs.Spec.Replicas = &zero }, nil},
		{"negative replicas", func(rs *appsv1.ReplicaSet) { r := int32(-1); rs.Spec.Replicas = &r },
			[]string{e("spec.replicas", invalid)}},
		{"negative minReadySeconds", func(rs *appsv1.ReplicaSet) { rs.Spec.MinReadySeconds = -1 },
			[]string{e("spec.minReadySeconds", invalid)}},
		{"selector missing", func(rs *appsv1.ReplicaSet) { rs.Spec.Selector = nil },
			[]string{e("spec.selector", required), e("spec.template.metadata.labels", invalid)}},
		{"selector empty", func(rs *appsv1.ReplicaSet) { rs.Spec.Selector = &metav1.LabelSelector{} },
			[]string{e("spec.selector", invalid)}},
		{"selector operator unknown", func(rs *appsv1.ReplicaSet) {
			rs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Like", Values: []string{"web"}}}
		}, []string{e("spec.selector.matchExpressions[0].operator", invalid), e("spec.selector", invalid)}},
		{"selector does not match template", func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Labels = map[string]string{"app": "web"} },
			[]string{e("spec.template.metadata.labels", invalid)}},
		{"template restartPolicy OnFailure", func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			[]string{e("spec.template.spec.restartPolicy", notSupported)}},
		{"template container image missing", func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Spec.Containers[0].Image = "" },
			[]string{e("spec.template.spec.containers[0].image", required)}},
		{"template with ephemeral containers", func(rs *appsv1.ReplicaSet) {
			rs.Spec.Template.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", ImagePullPolicy: corev1.PullAlways, TerminationMessagePolicy: corev1.TerminationMessageReadFile}}}
		}, []string{e("spec.template.spec.ephemeralContainers", forbidden)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := validReplicaSet()
			tc.mutate(rs)
			checkErrs(t, ValidateReplicaSet(rs, nil), tc.want...)
		})
	}
}

func TestValidateReplicaSetUpdate(t *testing.T) {
	old := validReplicaSet()
	scaled := old.DeepCopy()
	five := int32(5)
	scaled.Spec.Replicas = &five
	checkErrs(t, ValidateReplicaSet(scaled, old))

	reselected := old.DeepCopy()
	delete(reselected.Spec.Selector.MatchLabels, "pod-template-hash")
	checkErrs(t, ValidateReplicaSet(reselected, old), e("spec.selector", invalid))
}

func TestValidateReplicaSetStatusUpdate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status appsv1.ReplicaSetStatus
		want   []string
	}{
		{"all ready", appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, ObservedGeneration: 1}, nil},
		{"negative observedGeneration", appsv1.ReplicaSetStatus{ObservedGeneration: -1},
			[]string{e("status.observedGeneration", invalid)}},
		{"more labeled than replicas", appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 2},
			[]string{e("status.fullyLabeledReplicas", invalid)}},
		{"more available than ready", appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 1, AvailableReplicas: 2},
			[]string{e("status.availableReplicas", invalid)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := validReplicaSet()
			rs := old.DeepCopy()
			rs.Status = tc.status
			checkErrs(t, ValidateReplicaSetStatusUpdate(rs, old), tc.want...)
		})
	}
}

func TestReplicaSetFields(t *testing.T) {
	rs := validReplicaSet()
	rs.Status.Replicas = 3
	want := map[string]string{"metadata.name": "web-5d9c", "metadata.namespace": "default", "status.replicas": "3"}
	if diff := cmp.Diff(want, map[string]string(ReplicaSetFields(rs))); diff != "" {
		t.Errorf("ReplicaSetFields (-want +got):\n%s", diff)
	}
}
