package controllers

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A Service's slices: only pods with an IP that have not finished, the
// named port resolved per pod, conditions from readiness and deletion, at
// most 100 endpoints to a slice.
func TestDesiredSlices(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
		},
	}
	pod := func(i int, ready bool) *corev1.Pod {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
				{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.1.%d.%d", i/250, i%250+1),
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
		}
	}
	var pods []*corev1.Pod
	for i := range 150 {
		pods = append(pods, pod(i, i%2 == 0))
	}
	noIP := pod(500, true)
	noIP.Status.PodIP = ""
	done := pod(501, true)
	done.Status.Phase = corev1.PodSucceeded
	terminating := pod(502, true)
	now := metav1.Now()
	terminating.DeletionTimestamp = &now
	pods = append(pods, noIP, done, terminating)

	got := desiredSlices(svc, pods)
	if len(got) != 2 || len(got[0].Endpoints) != 100 || len(got[1].Endpoints) != 51 {
		t.Fatalf("got %d slices, want 2 of 100 and 51 endpoints", len(got))
	}
	if p := got[0].Ports[0]; *p.Port != 8080 || *p.Name != "http" {
		t.Fatalf("port: got %s %d, want http 8080", *p.Name, *p.Port)
	}
	if got[0].Labels[discoveryv1.LabelServiceName] != "web" || got[0].Labels[discoveryv1.LabelManagedBy] != endpointSliceManagedBy {
		t.Fatalf("labels: %v", got[0].Labels)
	}
	byName := map[string]discoveryv1.Endpoint{}
	for _, s := range got {
		for _, e := range s.Endpoints {
			byName[e.TargetRef.Name] = e
		}
	}
	for name, want := range map[string][3]bool{"p0": {true, true, false}, "p1": {false, false, false}, "p502": {false, true, true}} {
		c := byName[name].Conditions
		if got := [3]bool{*c.Ready, *c.Serving, *c.Terminating}; got != want {
			t.Errorf("%s: ready, serving, terminating = %v, want %v", name, got, want)
		}
	}
	if _, ok := byName["p500"]; ok {
		t.Error("a pod without an IP is an endpoint")
	}
	if _, ok := byName["p501"]; ok {
		t.Error("a finished pod is an endpoint")
	}
	if n := byName["p0"].NodeName; n == nil || *n != "n1" {
		t.Errorf("nodeName: %v", n)
	}

	// Without pods, one empty slice says there are no endpoints.
	if got := desiredSlices(svc, nil); len(got) != 1 || len(got[0].Endpoints) != 0 {
		t.Fatalf("no pods: got %d slices", len(got))
	}
}
