package allocator_test

import (
	"context"
	"fmt"
	"strconv"
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

// Services created from two servers at once each get a value of their
// own, a cluster IP or a node port: 200 in a range of 254 addresses, 120
// in one of 150 ports. Once the range is full the next create is refused,
// naming the range, and a deleted Service's value is free again, and only
// that one.
func TestConcurrentCreatesGetDistinctValues(t *testing.T) {
	for _, tc := range []struct {
		name            string
		typ             corev1.ServiceType
		ports           string
		n, size         int
		value           func(*corev1.Service) string
		inRange         func(string) bool
		full, fullRange string
	}{
		{
			name: "cluster IPs", typ: corev1.ServiceTypeClusterIP, ports: "30000-32767", n: 200, size: 254,
			value: func(s *corev1.Service) string { return s.Spec.ClusterIP },
			inRange: func(v string) bool {
				return strings.HasPrefix(v, "10.0.0.") && v != "10.0.0.0" && v != "10.0.0.255"
			},
			full: "10.0.0.0/24 is full", fullRange: "10.0.0.1-10.0.0.254",
		},
		{
			name: "node ports", typ: corev1.ServiceTypeNodePort, ports: "30000-30149", n: 120, size: 150,
			value: func(s *corev1.Service) string { return fmt.Sprint(s.Spec.Ports[0].NodePort) },
			inRange: func(v string) bool {
				p, err := strconv.Atoi(v)
				return err == nil && p >= 30000 && p <= 30149
			},
			full: "the service node port range 30000-30149 is full", fullRange: "30000-30149",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := etcdtest.Start(t)
			servers := []*allocator.Services{
				newServices(t, e, "10.0.0.0/24", tc.ports),
				newServices(t, e, "10.0.0.0/24", tc.ports),
			}
			ctx := context.Background()
			var wg sync.WaitGroup
			values := make([]string, tc.n)
			errs := make([]error, tc.n)
			for i := range tc.n {
				wg.Go(func() {
					svc := service(fmt.Sprintf("s%d", i), tc.typ)
					errs[i] = servers[i%2].Save(ctx, key(svc.Name), 0, nil, svc)
					values[i] = tc.value(svc)
				})
			}
			wg.Wait()
			seen := map[string]int{}
			for i, err := range errs {
				if err != nil {
					t.Fatalf("create s%d: %v", i, err)
				}
				if j, dup := seen[values[i]]; dup {
					t.Fatalf("s%d and s%d both got %s", j, i, values[i])
				}
				seen[values[i]] = i
				if !tc.inRange(values[i]) {
					t.Fatalf("s%d got %s, outside %s", i, values[i], tc.fullRange)
				}
			}
			for i := tc.n; i < tc.size; i++ {
				svc := service(fmt.Sprintf("s%d", i), tc.typ)
				if err := servers[0].Save(ctx, key(svc.Name), 0, nil, svc); err != nil {
					t.Fatalf("create s%d of %d: %v", i, tc.size, err)
				}
			}
			full := service("full", tc.typ)
			err := servers[1].Save(ctx, key("full"), 0, nil, full)
			if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), tc.full) {
				t.Fatalf("create in a full range: got %v, want an internal error saying %q", err, tc.full)
			}

			// Deleting s7 frees its value, and only that one.
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
			if got := tc.value(full); got != values[7] {
				t.Fatalf("the one free value is %s, got %s", values[7], got)
			}
		})
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
