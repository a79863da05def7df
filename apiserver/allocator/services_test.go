package allocator_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/trustplane/trustplane/apiserver/allocator"
	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/etcd/etcdtest"
)

var servicesGR = schema.GroupResource{Resource: "services"}

// newServices is an allocator of ipRange and ports over a real etcd; two
// calls with the same etcd are two API servers sharing it.
func newServices(t *testing.T, e *etcdtest.Etcd, ipRange, ports string) *allocator.Services {
	t.Helper()
	store, err := storage.New(e.Client(t), clientgoscheme.Scheme, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ips, err := allocator.ParseIPRange(ipRange)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := allocator.ParsePortRange(ports)
	if err != nil {
		t.Fatal(err)
	}
	s, err := allocator.New(store, ips, pr)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func service(name string, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:  typ,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
}

func key(name string) string { return storage.Key(servicesGR, "default", name) }

// Creates from two servers at once, 200 in a range of 254 addresses, each
// get an address of their own; once the range is full the next create is
// refused, naming the range, and a deleted Service's address is free
// again.
func TestConcurrentCreatesGetDistinctIPs(t *testing.T) {
	e := etcdtest.Start(t)
	servers := []*allocator.Services{
		newServices(t, e, "10.0.0.0/24", "30000-32767"),
		newServices(t, e, "10.0.0.0/24", "30000-32767"),
	}
	ctx := context.Background()
	const n = 200
	var wg sync.WaitGroup
	ips := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := service(fmt.Sprintf("s%d", i), corev1.ServiceTypeClusterIP)
			errs[i] = servers[i%2].Save(ctx, key(svc.Name), 0, nil, svc)
			ips[i] = svc.Spec.ClusterIP
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create s%d: %v", i, err)
		}
		if j, dup := seen[ips[i]]; dup {
			t.Fatalf("s%d and s%d both got %s", j, i, ips[i])
		}
		seen[ips[i]] = i
		if !strings.HasPrefix(ips[i], "10.0.0.") || ips[i] == "10.0.0.0" || ips[i] == "10.0.0.255" {
			t.Fatalf("s%d got %s, outside 10.0.0.1-10.0.0.254", i, ips[i])
		}
	}
	for i := n; i < 254; i++ {
		svc := service(fmt.Sprintf("s%d", i), corev1.ServiceTypeClusterIP)
		if err := servers[0].Save(ctx, key(svc.Name), 0, nil, svc); err != nil {
			t.Fatalf("create s%d of 254: %v", i, err)
		}
	}
	full := service("full", corev1.ServiceTypeClusterIP)
	err := servers[1].Save(ctx, key("full"), 0, nil, full)
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "10.0.0.0/24 is full") {
		t.Fatalf("create in a full range: got %v, want an internal error naming 10.0.0.0/24 as full", err)
	}

	// Deleting s7 frees its address, and only that one.
	got := &corev1.Service{}
	store, _ := storage.New(e.Client(t), clientgoscheme.Scheme, nil, 10*time.Second)
	if err := store.Get(ctx, servicesGR, key("s7"), got); err != nil {
		t.Fatal(err)
	}
	rev, _ := storage.ParseResourceVersion(got.ResourceVersion)
	if err := servers[0].Delete(ctx, key("s7"), rev, got); err != nil {
		t.Fatal(err)
	}
	if err := servers[1].Save(ctx, key("full"), 0, nil, full); err != nil {
		t.Fatalf("create after a delete: %v", err)
	}
	if full.Spec.ClusterIP != ips[7] {
		t.Fatalf("the one free address is %s, got %s", ips[7], full.Spec.ClusterIP)
	}
}

// As with cluster IPs: NodePort Services created from two servers
// at once, 120 in a range of 150 ports, each get a port of their own;
// once the range is full the next create is refused, naming the range,
// and a deleted Service's port is free again.
func TestConcurrentCreatesGetDistinctNodePorts(t *testing.T) {
	e := etcdtest.Start(t)
	servers := []*allocator.Services{
		newServices(t, e, "10.0.0.0/24", "30000-30149"),
		newServices(t, e, "10.0.0.0/24", "30000-30149"),
	}
	ctx := context.Background()
	const n, size = 120, 150
	var wg sync.WaitGroup
	ports := make([]int32, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			svc := service(fmt.Sprintf("s%d", i), corev1.ServiceTypeNodePort)
			errs[i] = servers[i%2].Save(ctx, key(svc.Name), 0, nil, svc)
			ports[i] = svc.Spec.Ports[0].NodePort
		})
	}
	wg.Wait()
	seen := map[int32]int{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create s%d: %v", i, err)
		}
		if j, dup := seen[ports[i]]; dup {
			t.Fatalf("s%d and s%d both got node port %d", j, i, ports[i])
		}
		seen[ports[i]] = i
		if ports[i] < 30000 || ports[i] > 30149 {
			t.Fatalf("s%d got node port %d, outside 30000-30149", i, ports[i])
		}
	}
	for i := n; i < size; i++ {
		svc := service(fmt.Sprintf("s%d", i), corev1.ServiceTypeNodePort)
		if err := servers[0].Save(ctx, key(svc.Name), 0, nil, svc); err != nil {
			t.Fatalf("create s%d of %d: %v", i, size, err)
		}
	}
	full := service("full", corev1.ServiceTypeNodePort)
	err := servers[1].Save(ctx, key("full"), 0, nil, full)
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "the service node port range 30000-30149 is full") {
		t.Fatalf("create in a full range: got %v, want an internal error naming 30000-30149 as full", err)
	}

	// Deleting s7 frees its port, and only that one.
	got := &corev1.Service{}
	store, _ := storage.New(e.Client(t), clientgoscheme.Scheme, nil, 10*time.Second)
	if err := store.Get(ctx, servicesGR, key("s7"), got); err != nil {
		t.Fatal(err)
	}
	rev, _ := storage.ParseResourceVersion(got.ResourceVersion)
	if err := servers[0].Delete(ctx, key("s7"), rev, got); err != nil {
		t.Fatal(err)
	}
	if err := servers[1].Save(ctx, key("full"), 0, nil, full); err != nil {
		t.Fatalf("create after a delete: %v", err)
	}
	if full.Spec.Ports[0].NodePort != ports[7] {
		t.Fatalf("the one free port is %d, got %d", ports[7], full.Spec.Ports[0].NodePort)
	}
}

// A requested cluster IP or node port is taken only if free and in range.
func TestRequestedValues(t *testing.T) {
	e := etcdtest.Start(t)
	s := newServices(t, e, "10.96.0.0/12", "30000-30002")
	ctx := context.Background()

	a := service("a", corev1.ServiceTypeNodePort)
	a.Spec.ClusterIP = "10.96.0.10"
	a.Spec.Ports[0].NodePort = 30001
	if err := s.Save(ctx, key("a"), 0, nil, a); err != nil {
		t.Fatal(err)
	}
	if a.Spec.ClusterIP != "10.96.0.10" || a.Spec.ClusterIPs[0] != "10.96.0.10" || a.Spec.Ports[0].NodePort != 30001 {
		t.Fatalf("got clusterIP %s (%v), nodePort %d; want what was asked", a.Spec.ClusterIP, a.Spec.ClusterIPs, a.Spec.Ports[0].NodePort)
	}
	for _, tc := range []struct {
		name, ip string
		nodePort int32
		want     string
	}{
		{"taken IP", "10.96.0.10", 0, "spec.clusterIPs[0]: Invalid value: \"10.96.0.10\": provided IP is already allocated"},
		{"IP out of range", "10.0.0.1", 0, "The range of valid IPs is 10.96.0.0/12"},
		{"taken port", "", 30001, "spec.ports[0].nodePort: Invalid value: 30001: provided port is already allocated"},
		{"port out of range", "", 31000, "The range of valid ports is 30000-30002"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := service("b", corev1.ServiceTypeNodePort)
			b.Spec.ClusterIP, b.Spec.Ports[0].NodePort = tc.ip, tc.nodePort
			err := s.Save(ctx, key("b"), 0, nil, b)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want 422 with %q", err, tc.want)
			}
		})
	}

	// Headless and ExternalName Services hold nothing.
	for _, svc := range []*corev1.Service{service("headless", corev1.ServiceTypeClusterIP), service("ext", corev1.ServiceTypeExternalName)} {
		if svc.Spec.Type == corev1.ServiceTypeClusterIP {
			svc.Spec.ClusterIP = corev1.ClusterIPNone
		}
		if err := s.Save(ctx, key(svc.Name), 0, nil, svc); err != nil {
			t.Fatal(err)
		}
		if len(svc.Spec.ClusterIPs) != 0 {
			t.Fatalf("%s got cluster IPs %v", svc.Name, svc.Spec.ClusterIPs)
		}
	}

	// Two node ports are left; a Service asking for three gets none.
	c := service("c", corev1.ServiceTypeNodePort)
	c.Spec.Ports = append(c.Spec.Ports, corev1.ServicePort{Name: "b", Port: 81}, corev1.ServicePort{Name: "c", Port: 82})
	if err := s.Save(ctx, key("c"), 0, nil, c); !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "30000-30002 is full") {
		t.Fatalf("got %v, want the node port range full", err)
	}
	d := service("d", corev1.ServiceTypeNodePort)
	d.Spec.Ports = append(d.Spec.Ports, corev1.ServicePort{Name: "b", Port: 81})
	if err := s.Save(ctx, key("d"), 0, nil, d); err != nil {
		t.Fatalf("the ports c did not get are free: %v", err)
	}
}
