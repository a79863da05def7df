package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/trustplane/trustplane/apiserver/storage"
)

var (
	servicesGR       = schema.GroupResource{Resource: "services"}
	endpointSlicesGR = discoveryv1.SchemeGroupVersion.WithResource("endpointslices").GroupResource()
)

// kubernetesService is the name of the Service of the API itself, in
// the default namespace, as in every Kubernetes cluster.
const kubernetesService = "kubernetes"

// bootstrapAPIService creates the default/kubernetes Service, with the
// first address of the service range as kube-apiserver gives it, and keeps
// its EndpointSlice naming addr, where this server listens. A server
// listening on every address names none: it does not know which one its
// clients reach.
func (s *Server) bootstrapAPIService(ctx context.Context, addr net.Addr) error {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("bootstrap the kubernetes Service: listener address %s is not TCP", addr)
	}
	tcpProto := corev1.ProtocolTCP
	single := corev1.IPFamilyPolicySingleStack
	cluster := corev1.ServiceInternalTrafficPolicyCluster
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: kubernetesService, Namespace: metav1.NamespaceDefault,
			Labels:            map[string]string{"component": "apiserver", "provider": "kubernetes"},
			UID:               types.UID(uuid.NewString()),
			CreationTimestamp: metav1.NewTime(time.Now().Truncate(time.Second)),
		},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeClusterIP,
			ClusterIP:             s.services.IPs().First().String(),
			SessionAffinity:       corev1.ServiceAffinityNone,
			IPFamilyPolicy:        &single,
			InternalTrafficPolicy: &cluster,
			Ports: []corev1.ServicePort{{
				Name: "https", Protocol: tcpProto, Port: 443, TargetPort: intstr.FromInt(tcp.Port),
			}},
		},
	}
	key := storage.Key(servicesGR, metav1.NamespaceDefault, kubernetesService)
	// An existing one is kept as it is. Another server may create it
	// meanwhile, and take the address first.
	exists := func() bool { return s.store.Get(ctx, servicesGR, key, &corev1.Service{}) == nil }
	if !exists() {
		if err := s.services.Save(ctx, key, 0, nil, svc); err != nil && !exists() {
			return fmt.Errorf("bootstrap the kubernetes Service: %w", err)
		} else if err == nil {
			s.logger.Info("kubernetes Service created", "clusterIP", svc.Spec.ClusterIP)
		}
	}
	if tcp.IP.IsUnspecified() {
		s.logger.Warn("the kubernetes Service has no endpoints: the server listens on every address", "address", addr.String())
		return nil
	}
	addressType := discoveryv1.AddressTypeIPv4
	if tcp.IP.To4() == nil {
		addressType = discoveryv1.AddressTypeIPv6
	}
	ready, name, port := true, "https", int32(tcp.Port)
	want := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: kubernetesService, Namespace: metav1.NamespaceDefault,
			// kube-apiserver's reconciler labels it with the Service
			// alone; no controller manages it.
			Labels: map[string]string{discoveryv1.LabelServiceName: kubernetesService},
		},
		AddressType: addressType,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{tcp.IP.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: &name, Protocol: &tcpProto, Port: &port}},
	}
	sliceKey := storage.Key(endpointSlicesGR, metav1.NamespaceDefault, kubernetesService)
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		stored := &discoveryv1.EndpointSlice{}
		err := s.store.Get(ctx, endpointSlicesGR, sliceKey, stored)
		if errors.Is(err, storage.ErrNotFound) {
			want.UID = types.UID(uuid.NewString())
			want.CreationTimestamp = metav1.NewTime(time.Now().Truncate(time.Second))
			err = s.store.Create(ctx, endpointSlicesGR, sliceKey, want)
			if errors.Is(err, storage.ErrAlreadyExists) {
				continue
			}
			return err
		}
		if err != nil {
			return err
		}
		if stored.AddressType == want.AddressType && equality.Semantic.DeepEqual(stored.Endpoints, want.Endpoints) && equality.Semantic.DeepEqual(stored.Ports, want.Ports) {
			return nil
		}
		rev, _ := storage.ParseResourceVersion(stored.ResourceVersion)
		stored.AddressType, stored.Endpoints, stored.Ports = want.AddressType, want.Endpoints, want.Ports
		err = s.store.Update(ctx, endpointSlicesGR, sliceKey, rev, stored)
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		return err
	}
	return fmt.Errorf("bootstrap the kubernetes EndpointSlice: still changing after %d attempts", maxUpdateAttempts)
}
