package controllers

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// The NoExecute taints of a node whose Ready condition is Unknown or
// False, which the taint eviction controller acts on.
var (
	unreachableTaint = corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	notReadyTaint    = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
)

// conditionTaintKey is the NoSchedule taint of a node condition in a
// status, if it has one.
func conditionTaintKey(t corev1.NodeConditionType, s corev1.ConditionStatus) (string, bool) {
	switch {
	case t == corev1.NodeReady && s == corev1.ConditionFalse:
		return corev1.TaintNodeNotReady, true
	case t == corev1.NodeReady && s == corev1.ConditionUnknown:
		return corev1.TaintNodeUnreachable, true
	case t == corev1.NodeMemoryPressure && s == corev1.ConditionTrue:
		return corev1.TaintNodeMemoryPressure, true
	case t == corev1.NodeDiskPressure && s == corev1.ConditionTrue:
		return corev1.TaintNodeDiskPressure, true
	case t == corev1.NodeNetworkUnavailable && s == corev1.ConditionTrue:
		return corev1.TaintNodeNetworkUnavailable, true
	case t == corev1.NodePIDPressure && s == corev1.ConditionTrue:
		return corev1.TaintNodePIDPressure, true
	}
	return "", false
}

// isNoScheduleConditionKey is whether a NoSchedule taint's key is one
// this controller owns.
func isNoScheduleConditionKey(key string) bool {
	switch key {
	case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure,
		corev1.TaintNodeNetworkUnavailable, corev1.TaintNodePIDPressure, corev1.TaintNodeUnschedulable:
		return true
	}
	return false
}

// hasTaint is whether taints hold one of t's key and effect.
func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	return slices.ContainsFunc(taints, func(o corev1.Taint) bool { return o.Key == t.Key && o.Effect == t.Effect })
}

// swappedTaints is taints without those of remove's keys and effects and
// with those of add it lacks, NoExecute ones stamped now; and whether
// that is a change.
func swappedTaints(taints, add, remove []corev1.Taint, now time.Time) ([]corev1.Taint, bool) {
	out := slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return hasTaint(remove, t) })
	changed := len(out) != len(taints)
	for _, t := range add {
		if hasTaint(out, t) {
			continue
		}
		if t.Effect == corev1.TaintEffectNoExecute {
			at := metav1.NewTime(now)
			t.TimeAdded = &at
		}
		out = append(out, t)
		changed = true
	}
	return out, changed
}

// noExecuteTaints are a node's NoExecute taints.
func noExecuteTaints(node *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

// matchingTolerations is whether tolerations tolerate every taint, and
// then, for each taint, the first toleration that does, as kube's
// GetMatchingTolerations.
func matchingTolerations(taints []corev1.Taint, tolerations []corev1.Toleration) (bool, []corev1.Toleration) {
	used := make([]corev1.Toleration, 0, len(taints))
	for i := range taints {
		j := slices.IndexFunc(tolerations, func(t corev1.Toleration) bool { return t.ToleratesTaint(klog.Background(), &taints[i], false) })
		if j < 0 {
			return false, nil
		}
		used = append(used, tolerations[j])
	}
	return true, used
}

// minTolerationTime is the shortest tolerationSeconds of used, 0 for
// none used or for one of zero or less, and -1 when all tolerate
// forever.
func minTolerationTime(used []corev1.Toleration) time.Duration {
	if len(used) == 0 {
		return 0
	}
	least := time.Duration(-1)
	for _, t := range used {
		if t.TolerationSeconds == nil {
			continue
		}
		if *t.TolerationSeconds <= 0 {
			return 0
		}
		if d := time.Duration(*t.TolerationSeconds) * time.Second; least < 0 || d < least {
			least = d
		}
	}
	return least
}
