package controllers

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSwappedTaints(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stamp := metav1.NewTime(now)
	own := corev1.Taint{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}
	unreachableNoSchedule := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}
	stamped := unreachableTaint
	stamped.TimeAdded = &stamp
	for _, tc := range []struct {
		name        string
		have        []corev1.Taint
		add, remove []corev1.Taint
		want        []corev1.Taint
		wantChange  bool
	}{
		{name: "add NoExecute, stamped", have: []corev1.Taint{own}, add: []corev1.Taint{unreachableTaint}, remove: []corev1.Taint{notReadyTaint},
			want: []corev1.Taint{own, stamped}, wantChange: true},
		{name: "present: no change", have: []corev1.Taint{own, stamped}, add: []corev1.Taint{unreachableTaint}, want: []corev1.Taint{own, stamped}},
		{name: "swap", have: []corev1.Taint{notReadyTaint, own}, add: []corev1.Taint{unreachableTaint}, remove: []corev1.Taint{notReadyTaint},
			want: []corev1.Taint{own, stamped}, wantChange: true},
		{name: "remove by key and effect only", have: []corev1.Taint{unreachableNoSchedule, stamped}, remove: []corev1.Taint{unreachableTaint, notReadyTaint},
			want: []corev1.Taint{unreachableNoSchedule}, wantChange: true},
		{name: "NoSchedule not stamped", add: []corev1.Taint{unreachableNoSchedule}, want: []corev1.Taint{unreachableNoSchedule}, wantChange: true},
	} {
		before := slices.Clone(tc.have)
		got, changed := swappedTaints(tc.have, tc.add, tc.remove, now)
		if diff := cmp.Diff(tc.want, got); diff != "" || changed != tc.wantChange {
			t.Errorf("%s: changed %v (want %v), taints (-want +got):\n%s", tc.name, changed, tc.wantChange, diff)
		}
		if !slices.EqualFunc(before, tc.have, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) }) {
			t.Errorf("%s: the node's own taints were changed in place", tc.name)
		}
	}
}

func TestConditionTaints(t *testing.T) {
	for _, tc := range []struct {
		t      corev1.NodeConditionType
		s      corev1.ConditionStatus
		want   string
		wantOK bool
	}{
		{corev1.NodeReady, corev1.ConditionTrue, "", false},
		{corev1.NodeReady, corev1.ConditionFalse, corev1.TaintNodeNotReady, true},
		{corev1.NodeReady, corev1.ConditionUnknown, corev1.TaintNodeUnreachable, true},
		{corev1.NodeMemoryPressure, corev1.ConditionTrue, corev1.TaintNodeMemoryPressure, true},
		{corev1.NodeMemoryPressure, corev1.ConditionUnknown, "", false},
		{corev1.NodeDiskPressure, corev1.ConditionTrue, corev1.TaintNodeDiskPressure, true},
		{corev1.NodePIDPressure, corev1.ConditionTrue, corev1.TaintNodePIDPressure, true},
		{corev1.NodeNetworkUnavailable, corev1.ConditionTrue, corev1.TaintNodeNetworkUnavailable, true},
	} {
		got, ok := conditionTaintKey(tc.t, tc.s)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s=%s: %q %v, want %q %v", tc.t, tc.s, got, ok, tc.want, tc.wantOK)
		}
		if ok && !isNoScheduleConditionKey(got) {
			t.Errorf("%s is not a key the controller owns", got)
		}
	}
	if isNoScheduleConditionKey("team") {
		t.Error("a taint of the user's own is the controller's to remove")
	}
}

func TestTolerationTime(t *testing.T) {
	secs := func(s int64) *int64 { return &s }
	unreachable := []corev1.Taint{unreachableTaint}
	both := []corev1.Taint{unreachableTaint, notReadyTaint}
	forUnreachable := func(s *int64) corev1.Toleration {
		return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: s}
	}
	everything := corev1.Toleration{Operator: corev1.TolerationOpExists}
	for _, tc := range []struct {
		name         string
		taints       []corev1.Taint
		tolerations  []corev1.Toleration
		wantTolerate bool
		wantWait     time.Duration
	}{
		{name: "none tolerated", taints: unreachable, wantTolerate: false},
		{name: "another key", taints: unreachable, tolerations: []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpExists}}},
		{name: "for a time", taints: unreachable, tolerations: []corev1.Toleration{forUnreachable(secs(2))}, wantTolerate: true, wantWait: 2 * time.Second},
		{name: "forever", taints: unreachable, tolerations: []corev1.Toleration{forUnreachable(nil)}, wantTolerate: true, wantWait: -1},
		{name: "zero seconds is at once", taints: unreachable, tolerations: []corev1.Toleration{forUnreachable(secs(0))}, wantTolerate: true, wantWait: 0},
		{name: "one of two taints untolerated", taints: both, tolerations: []corev1.Toleration{forUnreachable(nil)}},
		{name: "the shortest of the used", taints: both, tolerations: []corev1.Toleration{forUnreachable(secs(30)), everything}, wantTolerate: true, wantWait: 30 * time.Second},
	} {
		ok, used := matchingTolerations(tc.taints, tc.tolerations)
		if ok != tc.wantTolerate {
			t.Errorf("%s: tolerated %v, want %v", tc.name, ok, tc.wantTolerate)
			continue
		}
		if ok {
			if got := minTolerationTime(used); got != tc.wantWait {
				t.Errorf("%s: wait %s, want %s", tc.name, got, tc.wantWait)
			}
		}
	}
}
