package controllers

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// testPod is a pod named name, created at t0 plus age seconds, changed
// by opts.
func testPod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", Labels: map[string]string{"app": "web", "tier": "front"}, CreationTimestamp: metav1.NewTime(t0)}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func scheduled(p *corev1.Pod) { p.Spec.NodeName = "n1" }
func running(p *corev1.Pod)   { p.Status.Phase = corev1.PodRunning }
func created(d time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(d)) }
}
func readySince(at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)})
	}
}
func cost(c string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{podDeletionCost: c} }
}
func restarted(n int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "a"}, {Name: "b", RestartCount: n}}
	}
}

func TestPodsToDelete(t *testing.T) {
	ready := readySince(t0)
	for _, tc := range []struct {
		name  string
		first *corev1.Pod // to delete before second
		then  *corev1.Pod
	}{
		{"unscheduled before scheduled", testPod("b", running, ready), testPod("a", scheduled, running, ready)},
		{"pending before running", testPod("b", scheduled), testPod("a", scheduled, running)},
		{"unknown before running", testPod("b", scheduled, func(p *corev1.Pod) { p.Status.Phase = corev1.PodUnknown }), testPod("a", scheduled, running)},
		{"not ready before ready", testPod("b", scheduled, running), testPod("a", scheduled, running, ready)},
		{"lower deletion cost first", testPod("b", scheduled, running, ready, cost("-5")), testPod("a", scheduled, running, ready)},
		{"cost beats readiness time", testPod("b", scheduled, running, readySince(t0.Add(-time.Hour)), cost("1")), testPod("a", scheduled, running, ready, cost("2"))},
		{"an invalid cost is 0", testPod("b", scheduled, running, ready, cost("x")), testPod("a", scheduled, running, ready, cost("1"))},
		{"ready more recently first", testPod("b", scheduled, running, readySince(t0.Add(time.Minute))), testPod("a", scheduled, running, ready)},
		{"more restarts first", testPod("b", scheduled, running, ready, restarted(3)), testPod("a", scheduled, running, ready, restarted(1))},
		{"newer first", testPod("b", scheduled, running, ready, created(time.Second)), testPod("a", scheduled, running, ready)},
		{"then by name", testPod("a", scheduled), testPod("b", scheduled)},
	} {
		for _, order := range [][]*corev1.Pod{{tc.first, tc.then}, {tc.then, tc.first}} {
			if got := podsToDelete(order, 1); len(got) != 1 || got[0] != tc.first {
				t.Errorf("%s: podsToDelete(%s, %s, 1) = %s, want %s", tc.name, order[0].Name, order[1].Name, names(got), tc.first.Name)
			}
		}
	}
	pods := []*corev1.Pod{testPod("a", scheduled, running, ready), testPod("b"), testPod("c", scheduled)}
	if got := names(podsToDelete(pods, 5)); !slices.Equal(got, []string{"b", "c", "a"}) {
		t.Errorf("podsToDelete(a, b, c, 5) = %q, want b, c, a", got)
	}
	if names(pods)[0] != "a" {
		t.Errorf("podsToDelete reordered its argument: %q", names(pods))
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func testReplicaSet(replicas, minReadySeconds int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: "rs-uid", Generation: 4},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        &replicas,
			MinReadySeconds: minReadySeconds,
			Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}, Annotations: map[string]string{"note": "x"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}},
			},
		},
	}
}

func TestReplicaSetStatus(t *testing.T) {
	now := t0.Add(time.Minute)
	pods := []*corev1.Pod{
		testPod("a", readySince(t0)),                    // available at 10s
		testPod("b", readySince(now.Add(-time.Second))), // ready, not yet available
		testPod("c"),
		testPod("d", func(p *corev1.Pod) { delete(p.Labels, "tier") }),
	}
	refused := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("refused by policy"))
	failure := appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "earlier", LastTransitionTime: metav1.NewTime(t0)}

	rs := testReplicaSet(6, 10)
	got := replicaSetStatus(rs, pods, true, refused, now)
	want := appsv1.ReplicaSetStatus{Replicas: 4, FullyLabeledReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 4,
		Conditions: []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: refused.Error(), LastTransitionTime: metav1.NewTime(now)}}}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("a failed create:\n got %+v\nwant %+v", got, want)
	}

	rs = testReplicaSet(2, 0)
	got = replicaSetStatus(rs, pods, true, refused, now)
	if len(got.Conditions) != 1 || got.Conditions[0].Reason != "FailedDelete" || got.AvailableReplicas != 2 {
		t.Errorf("a failed delete, minReadySeconds 0: got %+v, want FailedDelete and 2 available", got)
	}

	rs.Status.Conditions = []appsv1.ReplicaSetCondition{failure}
	if got := replicaSetStatus(rs, pods, true, refused, now); len(got.Conditions) != 1 || got.Conditions[0] != failure {
		t.Errorf("a failure again: conditions %+v, want the first one kept", got.Conditions)
	}
	if got := replicaSetStatus(rs, pods, false, nil, now); len(got.Conditions) != 1 {
		t.Errorf("not managed: conditions %+v, want them kept", got.Conditions)
	}
	if got := replicaSetStatus(rs, pods, true, nil, now); len(got.Conditions) != 0 {
		t.Errorf("managed without error: conditions %+v, want none", got.Conditions)
	}
	if len(rs.Status.Conditions) != 1 {
		t.Errorf("replicaSetStatus changed the ReplicaSet's conditions: %+v", rs.Status.Conditions)
	}
}

func TestSlowStartBatch(t *testing.T) {
	refused := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	timeout := apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "create", 1)
	for _, tc := range []struct {
		name              string
		n                 int
		failAt            int // the call from which creates fail; 0: never
		err               error
		calls, ok, unsure int
	}{
		{name: "all succeed", n: 10, calls: 10, ok: 10},
		{name: "none", n: 0},
		{name: "the first refused", n: 10, failAt: 1, err: refused, calls: 1},
		// Batches 1, 2, 4: the fourth call is in the third batch, which
		// runs whole, and the fourth batch is not tried.
		{name: "refused from the fourth call", n: 10, failAt: 4, err: refused, calls: 7, ok: 3},
		{name: "timeouts are unknown", n: 10, failAt: 2, err: timeout, calls: 3, ok: 1, unsure: 2},
		{name: "a lost connection is unknown", n: 3, failAt: 1, err: errors.New("connection reset"), calls: 1, unsure: 1},
	} {
		var calls atomic.Int32
		ok, unsure, err := slowStartBatch(tc.n, func() error {
			if n := calls.Add(1); tc.failAt > 0 && int(n) >= tc.failAt {
				return tc.err
			}
			return nil
		})
		if int(calls.Load()) != tc.calls || ok != tc.ok || unsure != tc.unsure || !errors.Is(err, tc.err) {
			t.Errorf("%s: %d calls, %d ok, %d unknown, err %v; want %d, %d, %d, %v", tc.name, calls.Load(), ok, unsure, err, tc.calls, tc.ok, tc.unsure, tc.err)
		}
	}
}

func TestPodFromTemplate(t *testing.T) {
	rs := testReplicaSet(3, 0)
	pod := podFromTemplate(rs)
	refs := pod.OwnerReferences
	if pod.GenerateName != "web-" || pod.Namespace != "team" || pod.Labels["tier"] != "front" || pod.Annotations["note"] != "x" || len(pod.Spec.Containers) != 1 {
		t.Errorf("pod %+v: want generateName web-, namespace team, the template's labels, annotations and spec", pod.ObjectMeta)
	}
	if len(refs) != 1 || refs[0].APIVersion != "apps/v1" || refs[0].Kind != "ReplicaSet" || refs[0].Name != "web" || refs[0].UID != "rs-uid" ||
		refs[0].Controller == nil || !*refs[0].Controller || refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
		t.Errorf("ownerReferences %+v: want the ReplicaSet as controller, blocking its deletion", refs)
	}
	pod.Labels["tier"] = "changed"
	if rs.Spec.Template.Labels["tier"] != "front" {
		t.Error("the pod shares its labels with the template")
	}
}
