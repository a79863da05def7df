package controllers

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestOrdinalOf(t *testing.T) {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	for name, want := range map[string]int{"web-0": 0, "web-12": 12, "web-01": -1, "web-": -1, "web-x": -1, "webx-1": -1, "web-1-2": -1, "web--1": -1} {
		got, ok := ordinalOf(set, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if want < 0 && ok || want >= 0 && (!ok || got != want) {
			t.Errorf("ordinalOf(%q) = %d, %v; want %d (-1: none)", name, got, ok, want)
		}
	}
}

// A revision records its template exactly, and its name changes with
// the template and with the collision count, never otherwise.
func TestRevisionData(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1"}}},
	}
	data, err := revisionData(&tmpl)
	if err != nil {
		t.Fatal(err)
	}
	got, err := revisionTemplate(&appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: data}})
	if err != nil || !equality.Semantic.DeepEqual(got, &tmpl) {
		t.Fatalf("template back from the revision: %+v, %v; want %+v", got, err, tmpl)
	}
	again, _ := revisionData(tmpl.DeepCopy())
	one := int32(1)
	other := tmpl.DeepCopy()
	other.Spec.Containers[0].Image = "nginx:2"
	otherData, _ := revisionData(other)
	h := revisionHash(data, nil)
	if revisionHash(again, nil) != h {
		t.Error("the same template hashed differently")
	}
	if revisionHash(data, &one) == h || revisionHash(otherData, nil) == h {
		t.Error("a collision count or another template did not change the hash")
	}
}
