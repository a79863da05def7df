package kinds

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodGracePeriod(t *testing.T) {
	pod := func(node string, phase corev1.PodPhase, period *int64) *corev1.Pod {
		p := &corev1.Pod{}
		p.Spec.NodeName, p.Status.Phase, p.Spec.TerminationGracePeriodSeconds = node, phase, period
		return p
	}
	asked := func(period int64) *metav1.DeleteOptions {
		return &metav1.DeleteOptions{GracePeriodSeconds: &period}
	}
	for _, tt := range []struct {
		name string
		pod  *corev1.Pod
		opts *metav1.DeleteOptions
		want int64
	}{
		{"no pod", nil, nil, 0},
		{"unbound", pod("", corev1.PodPending, int64Ptr(60)), &metav1.DeleteOptions{}, 0},
		{"unbound, a period asked for", pod("", corev1.PodPending, int64Ptr(60)), asked(10), 0},
		{"succeeded", pod("node-1", corev1.PodSucceeded, int64Ptr(60)), asked(10), 0},
		{"failed", pod("node-1", corev1.PodFailed, int64Ptr(60)), &metav1.DeleteOptions{}, 0},
		{"running, the period asked for", pod("node-1", corev1.PodRunning, int64Ptr(60)), asked(10), 10},
		{"running, at once when asked", pod("node-1", corev1.PodRunning, int64Ptr(60)), asked(0), 0},
		{"running, the pod's own", pod("node-1", corev1.PodRunning, int64Ptr(60)), &metav1.DeleteOptions{}, 60},
		{"running, the pod's own without options", pod("node-1", corev1.PodRunning, int64Ptr(60)), nil, 60},
		{"running, the pod's own of none", pod("node-1", corev1.PodRunning, int64Ptr(0)), &metav1.DeleteOptions{}, 0},
		{"pending on a node", pod("node-1", corev1.PodPending, int64Ptr(60)), &metav1.DeleteOptions{}, 60},
		{"phase unknown", pod("node-1", corev1.PodUnknown, int64Ptr(60)), &metav1.DeleteOptions{}, 60},
		{"no period: the default", pod("node-1", corev1.PodRunning, nil), &metav1.DeleteOptions{}, corev1.DefaultTerminationGracePeriodSeconds},
		{"a negative period of the pod's", pod("node-1", corev1.PodRunning, int64Ptr(-5)), &metav1.DeleteOptions{}, 1},
		{"a negative period asked for", pod("node-1", corev1.PodRunning, int64Ptr(60)), asked(-1), 1},
		{"a negative period, unbound", pod("", corev1.PodRunning, int64Ptr(-5)), &metav1.DeleteOptions{}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodGracePeriod(tt.pod, tt.opts); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}
