package printers

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeUnreachablePodReason is the status reason the node lifecycle
// controller gives pods on a node it lost; kube prints such a pod, once it
// is being deleted, as "Unknown" rather than "Terminating".
const nodeUnreachablePodReason = "NodeLost"

// podRow renders a pod the way kubectl users know it. STATUS is the most
// specific thing known about the pod, in increasing order of precedence:
// the phase, the pod's status reason, SchedulingGated, the state of the
// first init container not done ("Init:1/2", "Init:CrashLoopBackOff"), the
// waiting or terminated reason of the first app container that has one
// ("CrashLoopBackOff", "Completed", "Error"), and Terminating once the pod
// is being deleted.
func podRow(pod *corev1.Pod, now time.Time) metav1.TableRow {
	var row metav1.TableRow
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		row.Conditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	case corev1.PodFailed:
		row.Conditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodFailed), Message: "The pod failed."}}
	}

	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}

	// Sidecars (init containers with restartPolicy Always) keep running next
	// to the app containers, so they count towards READY and RESTARTS.
	total := len(pod.Spec.Containers)
	sidecars := make(map[string]bool)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			total++
		}
	}

	ready := 0
	var restarts, sidecarRestarts int
	var lastRestart, lastSidecarRestart time.Time
	initializing := false
	for i, cs := range pod.Status.InitContainerStatuses {
		restarts += int(cs.RestartCount)
		lastRestart = laterTermination(lastRestart, cs)
		if sidecars[cs.Name] {
			sidecarRestarts += int(cs.RestartCount)
			lastSidecarRestart = laterTermination(lastSidecarRestart, cs)
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case sidecars[cs.Name] && cs.Started != nil && *cs.Started:
			if cs.Ready {
				ready++
			}
			continue
		case cs.State.Terminated != nil:
			reason = "Init:" + terminatedReason(cs.State.Terminated)
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + cs.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || podConditionTrue(pod.Status.Conditions, corev1.PodInitialized) {
		// Restarts of finished init containers no longer matter once the pod
		// is initialized; those of sidecars do.
		restarts, lastRestart = sidecarRestarts, lastSidecarRestart
		hasRunning := false
		errorReason := ""
		// Last to first, so the first container with something to say wins.
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := pod.Status.ContainerStatuses[i]
			restarts += int(cs.RestartCount)
			lastRestart = laterTermination(lastRestart, cs)
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				reason = cs.State.Waiting.Reason
			case cs.State.Terminated != nil:
				reason = terminatedReason(cs.State.Terminated)
				if cs.State.Terminated.ExitCode != 0 {
					errorReason = reason
				}
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		// One container completed while others still run: the pod is not
		// "Completed".
		if reason == "Completed" {
			switch {
			case hasRunning && podConditionTrue(pod.Status.Conditions, corev1.PodReady):
				reason = "Running"
			case errorReason != "":
				reason = errorReason
			case hasRunning:
				reason = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == nodeUnreachablePodReason:
			reason = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			reason = "Terminating"
		}
	}

	restartsCell := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsCell = fmt.Sprintf("%d (%s ago)", restarts, age(lastRestart, now))
	}

	row.Cells = []any{
		pod.Name,
		fmt.Sprintf("%d/%d", ready, total),
		reason,
		restartsCell,
		age(pod.CreationTimestamp.Time, now),
		orNone(podIP(&pod.Status)),
		orNone(pod.Spec.NodeName),
		orNone(pod.Status.NominatedNodeName),
		readinessGates(pod),
	}
	return row
}

// terminatedReason is a terminated container's reason, or failing that its
// signal or exit code.
func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

// laterTermination returns the later of last and the time cs last
// terminated, if it ever did.
func laterTermination(last time.Time, cs corev1.ContainerStatus) time.Time {
	if t := cs.LastTerminationState.Terminated; t != nil && last.Before(t.FinishedAt.Time) {
		return t.FinishedAt.Time
	}
	return last
}

func podConditionTrue(conditions []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// podIP is the pod's primary IP. When the legacy podIP and podIPs disagree,
// kube's conversion to its internal type keeps podIP, so we do too.
func podIP(s *corev1.PodStatus) string {
	if s.PodIP != "" {
		return s.PodIP
	}
	if len(s.PodIPs) > 0 {
		return s.PodIPs[0].IP
	}
	return ""
}

// readinessGates is "true/total" over the pod's readiness gates, judged by
// the first condition of each gate's type.
func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	trueGates := 0
	for _, gate := range pod.Spec.ReadinessGates {
		for _, c := range pod.Status.Conditions {
			if c.Type == gate.ConditionType {
				if c.Status == corev1.ConditionTrue {
					trueGates++
				}
				break
			}
		}
	}
	return fmt.Sprintf("%d/%d", trueGates, len(pod.Spec.ReadinessGates))
}
