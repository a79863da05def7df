package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// The EndpointSlice controller keeps a Service's slices to the ready pods
// its selector matches, as a node agent reports them, and removes them
// with the Service; its identity is refused what lies beside the slices.
func TestEndpointSlices(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t)
	admin, adminCfg := clientFor(t, c.AdminConf())
	ctx := t.Context()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
	created, err := admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.ClusterIP == "" || created.Spec.ClusterIP == corev1.ClusterIPNone {
		t.Errorf("cluster IP %q, want one allocated", created.Spec.ClusterIP)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
	}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// As a node agent reports it: running, with an address, ready.
	setPodStatus(t, admin, "default", "web-1", func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = "10.244.0.5"
		p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.0.5"}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	})
	slices := func(ctx context.Context) ([]discoveryv1.EndpointSlice, error) {
		l, err := admin.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	waitFor(t, "the pod in the Service's slice, ready, on its named port", func(ctx context.Context) error {
		items, err := slices(ctx)
		if err != nil {
			return err
		}
		if len(items) != 1 || len(items[0].Endpoints) != 1 {
			return fmt.Errorf("slices %+v", items)
		}
		ep, ports := items[0].Endpoints[0], items[0].Ports
		if ep.Addresses[0] != "10.244.0.5" || ep.Conditions.Ready == nil || !*ep.Conditions.Ready || len(ports) != 1 || ports[0].Port == nil || *ports[0].Port != 8080 {
			return fmt.Errorf("endpoint %+v ports %+v", ep, ports)
		}
		return nil
	})

	// The controller's identity writes slices and nothing else: the
	// nearest things beside them are refused.
	esc := tokenClient(t, admin, adminCfg, "endpointslice-controller")
	refusals := map[string]error{}
	_, refusals["list Secrets"] = esc.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	_, refusals["read a Secret"] = esc.CoreV1().Secrets("default").Get(ctx, "any", metav1.GetOptions{})
	_, refusals["create a pod"] = esc.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	_, refusals["list pods beside the shared informers"] = esc.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	changed := created.DeepCopy()
	changed.Spec.Selector = map[string]string{"app": "other"}
	_, refusals["update a Service"] = esc.CoreV1().Services("default").Update(ctx, changed, metav1.UpdateOptions{})
	_, refusals["update a Service's status"] = esc.CoreV1().Services("default").UpdateStatus(ctx, changed, metav1.UpdateOptions{})
	for what, err := range refusals {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the EndpointSlice controller may %s: %v, want Forbidden", what, err)
		}
	}

	if err := admin.CoreV1().Pods("default").Delete(ctx, "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted pod out of the slice", func(ctx context.Context) error {
		items, err := slices(ctx)
		if err != nil {
			return err
		}
		for _, s := range items {
			if len(s.Endpoints) > 0 {
				return fmt.Errorf("endpoints %+v", s.Endpoints)
			}
		}
		return nil
	})
	if err := admin.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the slices gone with the Service", func(ctx context.Context) error {
		items, err := slices(ctx)
		if err != nil {
			return err
		}
		if len(items) > 0 {
			return fmt.Errorf("%d slices left", len(items))
		}
		return nil
	})
}
