package apiserver

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Services through the whole path, over a /24 shared by two API servers:
// the kubernetes Service holds the first address and its EndpointSlice
// names the server; 200 concurrent creates get 200 other addresses; the
// range full is refused naming it, a taken address is a 422, and a
// deleted Service's address is taken again.
func TestServiceClusterIPs(t *testing.T) {
	small := func(c *Config) { c.ServiceIPRange = mustIPRange(t, "10.0.0.0/24") }
	first := startServer(t, small)
	second := startServerOn(t, first.etcd, small)
	ctx := testContext(t)
	clients := []typedcorev1.ServiceInterface{
		first.clientset(t, admin).CoreV1().Services("default"),
		second.clientset(t, admin).CoreV1().Services("default"),
	}

	api, err := clients[0].Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if api.Spec.ClusterIP != "10.0.0.1" || api.Spec.Ports[0].Port != 443 {
		t.Fatalf("kubernetes Service: clusterIP %s, ports %v; want 10.0.0.1, 443", api.Spec.ClusterIP, api.Spec.Ports)
	}
	slice, err := first.clientset(t, admin).DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(second.url, "https://"))
	if got := slice.Endpoints[0].Addresses[0]; got != "127.0.0.1" || fmt.Sprint(*slice.Ports[0].Port) != port {
		t.Fatalf("kubernetes EndpointSlice names %s:%d, want 127.0.0.1:%s, the last server started", got, *slice.Ports[0].Port, port)
	}

	const n = 200
	var wg sync.WaitGroup
	got := make([]*corev1.Service, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			got[i], errs[i] = clients[i%2].Create(ctx, webService(fmt.Sprintf("web-%d", i)), metav1.CreateOptions{})
		})
	}
	wg.Wait()
	seen := map[string]string{api.Spec.ClusterIP: api.Name}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("create web-%d: %v", i, errs[i])
		}
		ip := got[i].Spec.ClusterIP
		if other, dup := seen[ip]; dup {
			t.Fatalf("%s and %s both got %s", other, got[i].Name, ip)
		}
		seen[ip] = got[i].Name
	}
	for i := n; i < 253; i++ {
		if _, err := clients[0].Create(ctx, webService(fmt.Sprintf("web-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create web-%d, of the 253 the range holds besides kubernetes: %v", i, err)
		}
	}
	_, err = clients[1].Create(ctx, webService("one-too-many"), metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "range 10.0.0.0/24 is full") {
		t.Fatalf("create in a full range: got %v, want it refused naming the range", err)
	}

	taken := webService("taken")
	taken.Spec.ClusterIP = got[3].Spec.ClusterIP
	if err := clients[0].Delete(ctx, got[5].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = clients[0].Create(ctx, taken, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Fatalf("create with a taken clusterIP: got %v, want 422", err)
	}
	again, err := clients[1].Create(ctx, webService("again"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create after a delete freed an address: %v", err)
	}
	if again.Spec.ClusterIP != got[5].Spec.ClusterIP {
		t.Fatalf("the one free address is %s, got %s", got[5].Spec.ClusterIP, again.Spec.ClusterIP)
	}
}

// A NodePort Service gets node ports that survive an update leaving them
// out; a requested one out of range is a 422; headless Services and
// EndpointSlices are served.
func TestServiceNodePortsAndSlices(t *testing.T) {
	ts := startServer(t)
	ctx := testContext(t)
	cs := ts.clientset(t, admin)
	services := cs.CoreV1().Services("default")
	svc := webService("np")
	svc.Spec.Type = corev1.ServiceTypeNodePort
	created, err := services.Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodePort := created.Spec.Ports[0].NodePort
	if nodePort < 30000 || nodePort > 32767 || !strings.HasPrefix(created.Spec.ClusterIP, "10.") {
		t.Fatalf("got nodePort %d, clusterIP %s", nodePort, created.Spec.ClusterIP)
	}
	// A client that replaces the Service without them keeps them.
	created.Spec.Ports[0].NodePort = 0
	created.Spec.ClusterIP, created.Spec.ClusterIPs = "", nil
	updated, err := services.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Spec.Ports[0].NodePort != nodePort || updated.Spec.ClusterIP == "" {
		t.Fatalf("after update: nodePort %d, clusterIP %q; want %d and the one allocated", updated.Spec.Ports[0].NodePort, updated.Spec.ClusterIP, nodePort)
	}

	out := webService("out")
	out.Spec.Type = corev1.ServiceTypeNodePort
	out.Spec.Ports[0].NodePort = 80
	if _, err := services.Create(ctx, out, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "30000-32767") {
		t.Fatalf("nodePort 80: got %v, want 422 naming the range", err)
	}

	headless := webService("headless")
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	if h, err := services.Create(ctx, headless, metav1.CreateOptions{}); err != nil || h.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Fatalf("headless: %v, clusterIP %v", err, h)
	}

	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-x", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.5"}}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice.Name, slice.Endpoints[0].Addresses[0] = "bad", "fe80::1"
	if _, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("an IPv6 address in an IPv4 slice: got %v, want 422", err)
	}
}

func webService(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80}},
		},
	}
}
