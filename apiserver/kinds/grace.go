package kinds

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodGracePeriod is how long, in seconds, a deleted pod waits for its node
// agent to stop it, as kube's pod strategy decides (CheckGracefulDelete):
// none for a pod that no node runs or that has finished; otherwise the
// period the delete asks for, else the pod's terminationGracePeriodSeconds;
// a negative period is one second.
//
// A pod without terminationGracePeriodSeconds gets kube's default of 30
// seconds. kube's strategy would delete it at once, but its defaulting,
// like DefaultPod, never leaves the field unset, so no pod of kube's
// reaches that case; here it can only be a pod stored without defaults,
// which is stopped as if it had them.
func PodGracePeriod(pod *corev1.Pod, opts *metav1.DeleteOptions) int64 {
	if pod == nil || pod.Spec.NodeName == "" ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	period := int64(corev1.DefaultTerminationGracePeriodSeconds)
	switch {
	case opts != nil && opts.GracePeriodSeconds != nil:
		period = *opts.GracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		period = *pod.Spec.TerminationGracePeriodSeconds
	}
	if period < 0 {
		return 1
	}
	return period
}
