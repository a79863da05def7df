package allocator

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/trustplane/trustplane/apiserver/storage"
)

// The records, where kube-apiserver keeps its own.
const (
	IPsKey   = storage.Prefix + "ranges/serviceips"
	PortsKey = storage.Prefix + "ranges/servicenodeports"
)

var (
	servicesGR = schema.GroupResource{Resource: "services"}
	rangesGR   = schema.GroupResource{Resource: "rangeallocations"}
)

// Services stores Services with the cluster IPs and node ports they hold.
// It is safe for concurrent use.
type Services struct {
	store *storage.Store
	ips   IPRange
	ports PortRange
	// mu serializes this server's writes of the records: without it,
	// concurrent creates would mostly lose their transactions to each
	// other and read again.
	mu sync.Mutex
}

// New returns the allocator of ips and ports over store.
func New(store *storage.Store, ips IPRange, ports PortRange) (*Services, error) {
	if store == nil {
		return nil, errors.New("allocator: store is nil")
	}
	if ips.size == 0 || ports.Size == 0 {
		return nil, errors.New("allocator: the cluster IP and node port ranges are required")
	}
	return &Services{store: store, ips: ips, ports: ports}, nil
}

// IPs is the cluster IP range.
func (s *Services) IPs() IPRange { return s.ips }

// Save stores obj, a Service, at key: created when rev is 0, else in place
// of old if that is still at revision rev. In the same transaction it
// takes the cluster IP and node ports obj asks for, or free ones where it
// names none (which it then holds), and frees what old held that obj does
// not. A requested value that is taken or out of range is Invalid; a full
// range is an internal error naming the range.
func (s *Services) Save(ctx context.Context, key string, rev int64, old, obj runtime.Object) error {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return fmt.Errorf("allocator: %T is not a Service", obj)
	}
	oldSvc, _ := old.(*corev1.Service)
	return s.retry(ctx, func() error {
		// Each attempt starts from what the request asked for.
		next := svc.DeepCopy()
		rec, err := s.read(ctx)
		if err != nil {
			return err
		}
		rec.release(oldSvc)
		if err := rec.allocate(next); err != nil {
			return err
		}
		also := rec.changed()
		if rev == 0 {
			err = s.store.Create(ctx, servicesGR, key, next, also...)
		} else {
			err = s.store.Update(ctx, servicesGR, key, rev, next, also...)
		}
		if err == nil {
			*svc = *next
		}
		return err
	})
}

// Delete removes the Service old, at key, if it is still at revision rev,
// freeing what it held in the same transaction.
func (s *Services) Delete(ctx context.Context, key string, rev int64, old runtime.Object) error {
	oldSvc, ok := old.(*corev1.Service)
	if !ok {
		return fmt.Errorf("allocator: %T is not a Service", old)
	}
	return s.retry(ctx, func() error {
		rec, err := s.read(ctx)
		if err != nil {
			return err
		}
		rec.release(oldSvc)
		_, err = s.store.DeleteAlso(ctx, key, rev, nil, rec.changed())
		return err
	})
}

// retry runs attempt under the lock until the records it read were not
// changed meanwhile by another server.
func (s *Services) retry(ctx context.Context, attempt func() error) error {
	for {
		s.mu.Lock()
		err := attempt()
		s.mu.Unlock()
		if !errors.Is(err, storage.ErrAlsoChanged) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// records are the two bitmaps as read, and as changed by one write.
type records struct {
	s                   *Services
	ips, ports          *bitmap
	ipRec, portRec      *corev1.RangeAllocation
	ipsDirty, portDirty bool
}

// read reads both records; a missing one is empty.
func (s *Services) read(ctx context.Context) (*records, error) {
	ipRec, err := s.readRecord(ctx, IPsKey, s.ips.String())
	if err != nil {
		return nil, err
	}
	portRec, err := s.readRecord(ctx, PortsKey, s.ports.String())
	if err != nil {
		return nil, err
	}
	return &records{
		s:       s,
		ips:     newBitmap(s.ips.size, ipRec.Data),
		ports:   newBitmap(s.ports.Size, portRec.Data),
		ipRec:   ipRec,
		portRec: portRec,
	}, nil
}

func (s *Services) readRecord(ctx context.Context, key, want string) (*corev1.RangeAllocation, error) {
	rec := &corev1.RangeAllocation{}
	err := s.store.Get(ctx, rangesGR, key, rec)
	if errors.Is(err, storage.ErrNotFound) {
		return &corev1.RangeAllocation{ObjectMeta: metav1.ObjectMeta{Name: key[len(storage.Prefix):]}, Range: want}, nil
	}
	if err != nil {
		return nil, err
	}
	// The bitmap's offsets mean nothing in another range: a changed flag
	// must not hand out addresses that Services hold.
	if rec.Range != want {
		return nil, fmt.Errorf("allocator: %s records the range %s, but the server is configured with %s", key, rec.Range, want)
	}
	return rec, nil
}

// changed are the writes of the records that changed, each held to the
// revision it was read at.
func (r *records) changed() []storage.Also {
	var also []storage.Also
	add := func(key string, rec *corev1.RangeAllocation, b *bitmap) {
		rev, _ := storage.ParseResourceVersion(rec.ResourceVersion)
		rec.Data = b.bits
		also = append(also, storage.Also{GR: rangesGR, Key: key, Rev: rev, Obj: rec})
	}
	if r.ipsDirty {
		add(IPsKey, r.ipRec, r.ips)
	}
	if r.portDirty {
		add(PortsKey, r.portRec, r.ports)
	}
	return also
}

// release frees what svc holds; nil holds nothing.
func (r *records) release(svc *corev1.Service) {
	if svc == nil {
		return
	}
	if ip, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil && holdsClusterIP(svc) {
		if i, ok := r.s.ips.offset(ip); ok && r.ips.has(i) {
			r.ips.clear(i)
			r.ipsDirty = true
		}
	}
	if !holdsNodePorts(svc) {
		return
	}
	for _, p := range svc.Spec.Ports {
		if i, ok := r.s.ports.offset(p.NodePort); ok && r.ports.has(i) {
			r.ports.clear(i)
			r.portDirty = true
		}
	}
}

// allocate takes what svc asks for, filling in what it leaves to the
// server, and the IP family of what it holds.
func (r *records) allocate(svc *corev1.Service) error {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if holdsClusterIP(svc) {
		if svc.Spec.ClusterIP == "" {
			i, ok := r.ips.free()
			if !ok {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: the service cluster IP range %s is full", r.s.ips))
			}
			r.ips.set(i)
			r.ipsDirty = true
			svc.Spec.ClusterIP = r.s.ips.addr(i).String()
		} else {
			path := spec.Child("clusterIPs").Index(0)
			ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
			i, in := r.s.ips.offset(ip)
			switch {
			case err != nil:
				errs = append(errs, field.Invalid(path, svc.Spec.ClusterIP, "must be a valid IP address"))
			case !in:
				errs = append(errs, field.Invalid(path, svc.Spec.ClusterIP, fmt.Sprintf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", svc.Spec.ClusterIP, r.s.ips)))
			case r.ips.has(i):
				errs = append(errs, field.Invalid(path, svc.Spec.ClusterIP, "provided IP is already allocated"))
			default:
				r.ips.set(i)
				r.ipsDirty = true
			}
		}
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
	if svc.Spec.Type != corev1.ServiceTypeExternalName && len(svc.Spec.IPFamilies) == 0 {
		family := corev1.IPv4Protocol
		if r.s.ips.prefix.Addr().Is6() {
			family = corev1.IPv6Protocol
		}
		svc.Spec.IPFamilies = []corev1.IPFamily{family}
	}
	if holdsNodePorts(svc) {
		for n := range svc.Spec.Ports {
			p := &svc.Spec.Ports[n]
			if p.NodePort == 0 {
				i, ok := r.ports.free()
				if !ok {
					return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: the service node port range %s is full", r.s.ports))
				}
				r.ports.set(i)
				r.portDirty = true
				p.NodePort = int32(r.s.ports.Base + i)
				continue
			}
			path := spec.Child("ports").Index(n).Child("nodePort")
			i, in := r.s.ports.offset(p.NodePort)
			switch {
			case !in:
				errs = append(errs, field.Invalid(path, p.NodePort, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", r.s.ports)))
			case r.ports.has(i):
				errs = append(errs, field.Invalid(path, p.NodePort, "provided port is already allocated"))
			default:
				r.ports.set(i)
				r.portDirty = true
			}
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, errs)
	}
	return nil
}

// holdsClusterIP reports whether svc has, or is to get, a cluster IP: not
// an ExternalName Service, nor a headless one.
func holdsClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

// holdsNodePorts reports whether svc's ports have node ports: a NodePort
// Service, or a LoadBalancer one that does not opt out.
func holdsNodePorts(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}
