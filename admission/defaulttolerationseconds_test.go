package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

func TestDefaultTolerationSeconds(t *testing.T) {
	plugin, err := NewDefaultTolerationSeconds(300, 120)
	if err != nil {
		t.Fatal(err)
	}
	secs := func(s int64) *int64 { return &s }
	notReady := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(300)}
	unreachable := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(120)}
	own := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(5)}
	forever := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}
	anything := corev1.Toleration{Operator: corev1.TolerationOpExists}
	noSchedule := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name string
		have []corev1.Toleration
		want []corev1.Toleration
	}{
		{name: "none: both added", want: []corev1.Toleration{notReady, unreachable}},
		{name: "its own unreachable seconds are kept", have: []corev1.Toleration{own}, want: []corev1.Toleration{own, notReady}},
		{name: "an empty effect tolerates NoExecute", have: []corev1.Toleration{forever}, want: []corev1.Toleration{forever, unreachable}},
		{name: "an empty key tolerates every taint", have: []corev1.Toleration{anything}, want: []corev1.Toleration{anything}},
		{name: "a NoSchedule toleration is not one of NoExecute", have: []corev1.Toleration{noSchedule}, want: []corev1.Toleration{noSchedule, notReady, unreachable}},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}, Spec: corev1.PodSpec{Tolerations: tc.have}}
		if err := plugin.Admit(t.Context(), podCreate(pod), nil); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, pod.Spec.Tolerations); diff != "" {
			t.Errorf("%s: tolerations (-want +got):\n%s", tc.name, diff)
		}
	}

	// Two pods never share the seconds: one changed is not the other.
	a, b := &corev1.Pod{}, &corev1.Pod{}
	for _, p := range []*corev1.Pod{a, b} {
		if err := plugin.Admit(t.Context(), podCreate(p), nil); err != nil {
			t.Fatal(err)
		}
	}
	*a.Spec.Tolerations[0].TolerationSeconds = 1
	if got := *b.Spec.Tolerations[0].TolerationSeconds; got != 300 {
		t.Errorf("a second pod's seconds changed with the first's: %d", got)
	}

	// Only a pod's create: an update, or another kind, is left alone.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}}
	update := admission.NewAttributesRecord(pod, pod.DeepCopy(), corev1.SchemeGroupVersion.WithKind("Pod"), "team", "web",
		corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Update, &metav1.UpdateOptions{}, false, &user.DefaultInfo{Name: "alice"})
	if err := plugin.Admit(t.Context(), update, nil); err != nil || len(pod.Spec.Tolerations) != 0 {
		t.Errorf("an update: %v, tolerations %v; want none added", err, pod.Spec.Tolerations)
	}

	for _, bad := range [][2]int64{{-1, 300}, {300, -1}} {
		if _, err := NewDefaultTolerationSeconds(bad[0], bad[1]); err == nil {
			t.Errorf("NewDefaultTolerationSeconds(%d, %d): no error", bad[0], bad[1])
		}
	}
}
