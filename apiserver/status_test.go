package apiserver

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A write of the status subresource, PUT or PATCH, is recorded in the
// managed fields as one of subresource "status", as kube-apiserver
// records it, and leaves the spec's owner alone.
func TestStatusWritesManagedFields(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	replicas := int32(1)
	labels := map[string]string{"app": "status"}
	d, err := cs.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "status"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
		},
	}, metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	d.Status.ObservedGeneration = 1
	if d, err = cs.AppsV1().Deployments("default").UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: "controller"}); err != nil {
		t.Fatal(err)
	}
	if _, err = cs.AppsV1().Deployments("default").Patch(ctx, "status", types.MergePatchType, []byte(`{"status":{"replicas":1}}`), metav1.PatchOptions{FieldManager: "patcher"}, "status"); err != nil {
		t.Fatal(err)
	}
	d, err = cs.AppsV1().Deployments("default").Get(ctx, "status", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"creator": "", "controller": "status", "patcher": "status"}
	got := map[string]string{}
	for _, e := range d.ManagedFields {
		got[e.Manager] = e.Subresource
	}
	for manager, sub := range want {
		if s, ok := got[manager]; !ok || s != sub {
			t.Errorf("manager %s: subresource %q (recorded: %v), want %q", manager, s, ok, sub)
		}
	}
	if d.Status.ObservedGeneration != 1 || d.Status.Replicas != 1 {
		t.Errorf("status %+v: want observedGeneration 1, replicas 1", d.Status)
	}
}
