package apiserver

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsv1apply "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

func TestDynamicClient(t *testing.T) {
	ts := startServer(t)
	dc, err := dynamic.NewForConfig(ts.restConfig(t, admin))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "dyn"},
		"data":     map[string]any{"k": "v"},
	}}
	created, err := dc.Resource(gvr).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.GetUID() == "" {
		t.Error("created object has no uid")
	}
	list, err := dc.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("dynamic list: %v %v", list, err)
	}
	if err := dc.Resource(gvr).Namespace("default").Delete(ctx, "dyn", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestServerSideApplyWithApplyConfigurations(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	labels := map[string]string{"app": "ssa"}
	cfg := appsv1apply.Deployment("ssa", "default").
		WithSpec(appsv1apply.DeploymentSpec().
			WithReplicas(2).
			WithSelector(metav1apply.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1apply.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1apply.PodSpec().WithContainers(corev1apply.Container().WithName("c").WithImage("nginx:1.27")))))
	d, err := cs.AppsV1().Deployments("default").Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 2 || len(d.ManagedFields) == 0 || d.ManagedFields[0].Manager != "team-a" || d.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("applied deployment: replicas %d, managedFields %+v", *d.Spec.Replicas, d.ManagedFields)
	}
	other := appsv1apply.Deployment("ssa", "default").WithSpec(appsv1apply.DeploymentSpec().WithReplicas(5))
	if _, err := cs.AppsV1().Deployments("default").Apply(ctx, other, metav1.ApplyOptions{FieldManager: "team-b"}); err == nil {
		t.Error("a second manager took spec.replicas without force")
	}
	d, err = cs.AppsV1().Deployments("default").Apply(ctx, other, metav1.ApplyOptions{FieldManager: "team-b", Force: true})
	if err != nil || *d.Spec.Replicas != 5 {
		t.Errorf("forced apply: %v %v", d, err)
	}
}

// tools/record creates an event, then patches it for each repeat.
func TestEventRecorderPatchesRepeats(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	pod, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ev"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := record.NewBroadcaster()
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "e2e-test"})
	for range 3 {
		recorder.Event(pod, corev1.EventTypeNormal, "Poked", "poked the pod")
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=ev,involvedObject.kind=Pod,reason=Poked"})
		if err == nil && len(list.Items) == 1 && list.Items[0].Count == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("events: %+v %v; want one event with count 3", list, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
