package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func rollingDeployment(replicas int32, surge, unavailable string) *appsv1.Deployment {
	s, u := intstr.Parse(surge), intstr.Parse(unavailable)
	return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{
		Replicas: &replicas,
		Strategy: appsv1.DeploymentStrategy{
			Type:          appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u},
		},
	}}
}

func replicaSet(name string, replicas int32, age time.Duration, annotations map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(-age)), Annotations: annotations},
		Spec:       appsv1.ReplicaSetSpec{Replicas: &replicas},
	}
}

// Percentages round as kube's: surge up, unavailability down, and never
// both zero.
func TestFenceposts(t *testing.T) {
	for _, tc := range []struct {
		replicas                         int32
		surge, unavailable               string
		wantSurge, wantUnavailable       int32
		wantMaxUnavailable, wantMaxSurge int32
	}{
		{10, "25%", "25%", 3, 2, 2, 3},
		{3, "25%", "25%", 1, 0, 0, 1},
		{1, "0", "0", 0, 1, 1, 0},
		{5, "2", "30%", 2, 1, 1, 2},
		{4, "0%", "100%", 0, 4, 4, 0},
		{2, "0", "5", 0, 5, 2, 0},
	} {
		d := rollingDeployment(tc.replicas, tc.surge, tc.unavailable)
		s, u := fenceposts(d)
		if s != tc.wantSurge || u != tc.wantUnavailable || maxUnavailable(d) != tc.wantMaxUnavailable || maxSurge(d) != tc.wantMaxSurge {
			t.Errorf("%d replicas, surge %s, unavailable %s: fenceposts %d/%d, maxUnavailable %d, maxSurge %d; want %d/%d, %d, %d",
				tc.replicas, tc.surge, tc.unavailable, s, u, maxUnavailable(d), maxSurge(d), tc.wantSurge, tc.wantUnavailable, tc.wantMaxUnavailable, tc.wantMaxSurge)
		}
	}
	recreate := rollingDeployment(3, "1", "1")
	recreate.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if maxSurge(recreate) != 0 || maxUnavailable(recreate) != 0 || newRSNewReplicas(recreate, nil, replicaSet("new", 0, 0, nil)) != 3 {
		t.Errorf("Recreate: maxSurge %d, maxUnavailable %d, new ReplicaSet %d; want 0, 0, 3", maxSurge(recreate), maxUnavailable(recreate), newRSNewReplicas(recreate, nil, replicaSet("new", 0, 0, nil)))
	}
}

func TestNewRSNewReplicas(t *testing.T) {
	for _, tc := range []struct {
		replicas, old, current int32
		surge                  string
		want                   int32
	}{
		{replicas: 10, old: 10, current: 0, surge: "3", want: 3},
		{replicas: 10, old: 8, current: 3, surge: "3", want: 5},
		{replicas: 10, old: 10, current: 3, surge: "3", want: 3},
		{replicas: 3, old: 0, current: 1, surge: "5", want: 3},
		{replicas: 4, old: 4, current: 0, surge: "0", want: 0},
	} {
		d := rollingDeployment(tc.replicas, tc.surge, "1")
		newRS := replicaSet("new", tc.current, 0, nil)
		all := []*appsv1.ReplicaSet{replicaSet("old", tc.old, time.Hour, nil), newRS}
		if got := newRSNewReplicas(d, all, newRS); got != tc.want {
			t.Errorf("%d replicas, old %d, new %d, surge %s: %d, want %d", tc.replicas, tc.old, tc.current, tc.surge, got, tc.want)
		}
	}
}

// Scaling a Deployment in the middle of a rollout shares the change
// among its ReplicaSets by their sizes, as kube's proportional scaling.
func TestProportionalSizes(t *testing.T) {
	sizes := func(d *appsv1.Deployment, rss ...*appsv1.ReplicaSet) string {
		var out []string
		for _, s := range proportionalSizes(d, rss) {
			out = append(out, fmt.Sprintf("%s=%d", s.rs.Name, s.replicas))
		}
		return strings.Join(out, " ")
	}
	annotated := func(desired, maxReplicas int) map[string]string {
		return map[string]string{desiredReplicasAnnotation: fmt.Sprint(desired), maxReplicasAnnotation: fmt.Sprint(maxReplicas)}
	}
	for _, tc := range []struct {
		name string
		d    *appsv1.Deployment
		rss  []*appsv1.ReplicaSet
		want string
	}{
		{
			// kube's documented example: 10 replicas, surge 3, scaled
			// to 15 while the new ReplicaSet has 5 and the old 8: 3
			// more to the old, 2 to the new.
			name: "scale up",
			d:    rollingDeployment(15, "3", "2"),
			rss:  []*appsv1.ReplicaSet{replicaSet("old", 8, time.Hour, annotated(10, 13)), replicaSet("new", 5, 0, annotated(10, 13))},
			want: "old=11 new=7",
		},
		{
			name: "scale down",
			d:    rollingDeployment(5, "3", "2"),
			rss:  []*appsv1.ReplicaSet{replicaSet("old", 8, time.Hour, annotated(10, 13)), replicaSet("new", 5, 0, annotated(10, 13))},
			want: "old=5 new=3",
		},
		{
			name: "to zero",
			d:    rollingDeployment(0, "3", "2"),
			rss:  []*appsv1.ReplicaSet{replicaSet("old", 8, time.Hour, annotated(10, 13)), replicaSet("new", 5, 0, annotated(10, 13))},
			want: "old=0 new=0",
		},
	} {
		if got := sizes(tc.d, tc.rss...); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// A ReplicaSet made new again by a rollback takes the next revision and
// keeps the one it had in its history; the Deployment's annotations are
// copied, but not kube's own.
func TestSetNewReplicaSetAnnotations(t *testing.T) {
	d := rollingDeployment(3, "1", "0")
	d.Annotations = map[string]string{
		"kubernetes.io/change-cause":       "v1",
		revisionAnnotation:                 "9",
		corev1.LastAppliedConfigAnnotation: "{}",
	}
	rs := replicaSet("rs", 0, 0, map[string]string{revisionAnnotation: "1"})
	if !setNewReplicaSetAnnotations(d, rs, "4", true) {
		t.Fatal("no change reported")
	}
	want := map[string]string{revisionAnnotation: "4", revisionHistoryAnnotation: "1", "kubernetes.io/change-cause": "v1"}
	if fmt.Sprint(rs.Annotations) != fmt.Sprint(want) {
		t.Errorf("annotations %v, want %v", rs.Annotations, want)
	}
	if setNewReplicaSetAnnotations(d, rs, "4", true) {
		t.Error("a second call reports a change")
	}
	fresh := replicaSet("fresh", 0, 0, nil)
	setNewReplicaSetAnnotations(d, fresh, "1", false)
	if fresh.Annotations[revisionAnnotation] != "1" || fresh.Annotations[desiredReplicasAnnotation] != "3" || fresh.Annotations[maxReplicasAnnotation] != "4" || fresh.Annotations[revisionHistoryAnnotation] != "" {
		t.Errorf("a ReplicaSet to create: %v", fresh.Annotations)
	}

	long := strings.Repeat("12345,", maxRevisionHistoryChars/6)
	if got := appendRevisionHistory(strings.TrimSuffix(long, ","), "99"); len(got) > maxRevisionHistoryChars || !strings.HasSuffix(got, ",99") {
		t.Errorf("a long history: %d chars ending %q", len(got), got[len(got)-10:])
	}
}

// The hash depends on the template and the collision count only, and
// the new ReplicaSet is found whatever hash label it carries.
func TestPodTemplateHash(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}},
	}
	a, _ := podTemplateHash(&tmpl, nil)
	b, _ := podTemplateHash(tmpl.DeepCopy(), nil)
	one := int32(1)
	c, _ := podTemplateHash(&tmpl, &one)
	changed := tmpl.DeepCopy()
	changed.Spec.Containers[0].Image = "web:2"
	e, _ := podTemplateHash(changed, nil)
	if a != b || a == c || a == e || a == "" {
		t.Errorf("hashes: same template %q and %q, collision %q, changed %q", a, b, c, e)
	}
	labelled := tmpl.DeepCopy()
	labelled.Labels = withLabel(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey, a)
	if !equalIgnoreHash(labelled, &tmpl) || equalIgnoreHash(changed, &tmpl) {
		t.Error("equalIgnoreHash")
	}
}
