package kinds

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func validStatefulSet() *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{}
	s.Name, s.Namespace = "db", "default"
	s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	s.Spec.Template.Labels = map[string]string{"app": "db"}
	s.Spec.Template.Spec.Containers = []corev1.Container{{Name: "db", Image: "postgres"}}
	DefaultStatefulSet(s)
	return s
}

func validDaemonSet() *appsv1.DaemonSet {
	d := &appsv1.DaemonSet{}
	d.Name, d.Namespace = "agent", "default"
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}
	d.Spec.Template.Labels = map[string]string{"app": "agent"}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "agent", Image: "agent"}}
	DefaultDaemonSet(d)
	return d
}

func TestDefaultStatefulSetAndDaemonSet(t *testing.T) {
	s := validStatefulSet()
	if *s.Spec.Replicas != 1 || s.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement ||
		s.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType || *s.Spec.UpdateStrategy.RollingUpdate.Partition != 0 ||
		*s.Spec.RevisionHistoryLimit != 10 || s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("statefulset spec not defaulted as kube's: %+v", s.Spec)
	}
	d := validDaemonSet()
	if ru := d.Spec.UpdateStrategy.RollingUpdate; d.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType ||
		ru.MaxUnavailable.IntValue() != 1 || ru.MaxSurge.IntValue() != 0 || *d.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("daemonset spec not defaulted as kube's: %+v", d.Spec)
	}
}

func TestValidateStatefulSet(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *appsv1.StatefulSet)
		update func(s *appsv1.StatefulSet) // on an update of the valid set
		want   string
	}{
		{name: "valid"},
		{name: "negative replicas", change: func(s *appsv1.StatefulSet) { s.Spec.Replicas = int32Ptr(-1) }, want: "spec.replicas"},
		{name: "unknown pod management", change: func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "Random" }, want: "spec.podManagementPolicy"},
		{name: "rollingUpdate with OnDelete", change: func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType }, want: "spec.updateStrategy.rollingUpdate"},
		{name: "negative partition", change: func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = int32Ptr(-2) }, want: "spec.updateStrategy.rollingUpdate.partition"},
		{name: "claim templates", change: func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
		}, want: "spec.volumeClaimTemplates"},
		{name: "selector misses the template", change: func(s *appsv1.StatefulSet) { s.Spec.Template.Labels = map[string]string{"app": "other"} }, want: "spec.template.metadata.labels"},
		{name: "template and replicas change", update: func(s *appsv1.StatefulSet) {
			s.Spec.Replicas = int32Ptr(5)
			s.Spec.Template.Spec.Containers[0].Image = "postgres:17"
			s.Spec.UpdateStrategy.RollingUpdate.Partition = int32Ptr(3)
		}},
		{name: "serviceName changes", update: func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "other" }, want: "updates to statefulset spec for fields other than"},
		{name: "pod management changes", update: func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }, want: "are forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, old := validStatefulSet(), (*appsv1.StatefulSet)(nil)
			if tt.change != nil {
				tt.change(s)
			}
			if tt.update != nil {
				old = s.DeepCopy()
				tt.update(s)
			}
			errs := ValidateStatefulSet(s, old)
			if got := errs.ToAggregate(); (tt.want == "") != (got == nil) || got != nil && !strings.Contains(got.Error(), tt.want) {
				t.Errorf("ValidateStatefulSet: got %v, want an error naming %q (none if empty)", got, tt.want)
			}
		})
	}
}

func TestValidateDaemonSet(t *testing.T) {
	zero, pct := intstr.FromInt32(0), intstr.FromString("150%")
	tests := []struct {
		name   string
		change func(d *appsv1.DaemonSet)
		want   string
	}{
		{name: "valid"},
		{name: "both zero", change: func(d *appsv1.DaemonSet) { d.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &zero }, want: "spec.updateStrategy.rollingUpdate.maxUnavailable"},
		{name: "above 100%", change: func(d *appsv1.DaemonSet) { d.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &pct }, want: "must not be greater than 100%"},
		{name: "unknown strategy", change: func(d *appsv1.DaemonSet) { d.Spec.UpdateStrategy.Type = "Sometimes" }, want: "spec.updateStrategy.type"},
		{name: "restart never", change: func(d *appsv1.DaemonSet) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }, want: "spec.template.spec.restartPolicy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := validDaemonSet()
			if tt.change != nil {
				tt.change(d)
			}
			got := ValidateDaemonSet(d, nil).ToAggregate()
			if (tt.want == "") != (got == nil) || got != nil && !strings.Contains(got.Error(), tt.want) {
				t.Errorf("ValidateDaemonSet: got %v, want an error naming %q (none if empty)", got, tt.want)
			}
		})
	}
	old := validDaemonSet()
	d := old.DeepCopy()
	d.Spec.Selector.MatchLabels["tier"] = "x"
	d.Spec.Template.Labels["tier"] = "x"
	if got := ValidateDaemonSet(d, old).ToAggregate(); got == nil || !strings.Contains(got.Error(), "spec.selector") {
		t.Errorf("a changed selector: got %v, want it refused as immutable", got)
	}
}

func TestValidateControllerRevision(t *testing.T) {
	r := &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte(`{"spec": {"a": 1}}`)}, Revision: 1}
	if errs := ValidateControllerRevision(r, nil); len(errs) != 0 {
		t.Fatalf("valid revision: %v", errs)
	}
	if errs := ValidateControllerRevision(&appsv1.ControllerRevision{Revision: -1}, nil); len(errs) != 2 {
		t.Errorf("no data and a negative revision: got %v, want both refused", errs)
	}
	renumbered := r.DeepCopy()
	renumbered.Revision = 3
	renumbered.Data.Raw = []byte(`{"spec":{"a":1}}`)
	if errs := ValidateControllerRevision(renumbered, r); len(errs) != 0 {
		t.Errorf("a revision renumbered, its data re-sent compacted: %v, want allowed", errs)
	}
	changed := r.DeepCopy()
	changed.Data.Raw = []byte(`{"spec":{"a":2}}`)
	if errs := ValidateControllerRevision(changed, r); len(errs) != 1 {
		t.Errorf("data changed: got %v, want it refused as immutable", errs)
	}
}
