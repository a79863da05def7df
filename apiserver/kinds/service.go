package kinds

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultService sets kube's defaults on svc: type ClusterIP, session
// affinity None, TCP ports whose targetPort is their port, the traffic
// policies Cluster, single-stack, node ports for a LoadBalancer, and
// clusterIP from clusterIPs. The cluster IP and node ports themselves are
// the allocator's, when the Service is stored.
func DefaultService(svc *corev1.Service) {
	spec := &svc.Spec
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if spec.ClusterIP == "" && len(spec.ClusterIPs) > 0 {
		spec.ClusterIP = spec.ClusterIPs[0]
	}
	if spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	if spec.InternalTrafficPolicy == nil {
		cluster := corev1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &cluster
	}
	if spec.IPFamilyPolicy == nil {
		single := corev1.IPFamilyPolicySingleStack
		spec.IPFamilyPolicy = &single
	}
	if spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer {
		if spec.ExternalTrafficPolicy == "" {
			spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		yes := true
		spec.AllocateLoadBalancerNodePorts = &yes
	}
}

// KeepAllocated carries what the server allocated to old into svc, an
// update that leaves it out, as kube does: the cluster IP while svc still
// has one, and the node port of each port still served on the same port
// number while svc still has node ports.
func KeepAllocated(svc, old *corev1.Service) {
	if svc.Spec.Type != corev1.ServiceTypeExternalName && old.Spec.Type != corev1.ServiceTypeExternalName &&
		svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) == 0 {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = old.Spec.ClusterIP, old.Spec.ClusterIPs
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort && svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return
	}
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if p.NodePort != 0 {
			continue
		}
		for _, o := range old.Spec.Ports {
			if o.Port == p.Port && o.Protocol == p.Protocol && o.NodePort != 0 {
				p.NodePort = o.NodePort
				break
			}
		}
	}
}

var (
	serviceTypes      = sets.New(corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName)
	sessionAffinities = sets.New(corev1.ServiceAffinityNone, corev1.ServiceAffinityClientIP)
)

// ValidateService checks a Service on create (old nil) or update, by
// kube's rules for the fields this server acts on: the type, ports,
// selector, cluster IP (one, of the server's single family) and external
// name. On update the cluster IP may change only to or from
// ExternalName.
func ValidateService(svc, old *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	p := field.NewPath("spec")
	var errs field.ErrorList
	if !serviceTypes.Has(spec.Type) {
		errs = append(errs, field.NotSupported(p.Child("type"), spec.Type, sets.List(serviceTypes)))
	}
	if !sessionAffinities.Has(spec.SessionAffinity) {
		errs = append(errs, field.NotSupported(p.Child("sessionAffinity"), spec.SessionAffinity, sets.List(sessionAffinities)))
	}
	headless := spec.ClusterIP == corev1.ClusterIPNone
	switch {
	case spec.Type == corev1.ServiceTypeExternalName:
		if spec.ClusterIP != "" {
			errs = append(errs, field.Forbidden(p.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if spec.ExternalName == "" {
			errs = append(errs, field.Required(p.Child("externalName"), ""))
		} else {
			errs = append(errs, validateDNS1123Subdomain(spec.ExternalName, p.Child("externalName"))...)
		}
	case len(spec.Ports) == 0 && !headless:
		errs = append(errs, field.Required(p.Child("ports"), ""))
	}
	if len(spec.ClusterIPs) > 1 {
		errs = append(errs, field.Invalid(p.Child("clusterIPs"), spec.ClusterIPs, "this server allocates from a single-stack range: at most one cluster IP"))
	}
	if len(spec.ClusterIPs) == 1 && spec.ClusterIPs[0] != spec.ClusterIP {
		errs = append(errs, field.Invalid(p.Child("clusterIPs").Index(0), spec.ClusterIPs[0], "must match `clusterIP`"))
	}
	if spec.ClusterIP != "" && !headless {
		if _, err := netip.ParseAddr(spec.ClusterIP); err != nil {
			errs = append(errs, field.Invalid(p.Child("clusterIPs").Index(0), spec.ClusterIP, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff) or 'None'"))
		}
	}
	if headless && spec.Type != corev1.ServiceTypeClusterIP && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Invalid(p.Child("clusterIPs").Index(0), spec.ClusterIP, "may not be set to 'None' for "+string(spec.Type)+" services"))
	}
	errs = append(errs, validateServicePorts(svc, p.Child("ports"))...)
	errs = append(errs, metav1validation.ValidateLabels(spec.Selector, p.Child("selector"))...)
	if old != nil {
		externalName := spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName
		if !externalName && spec.ClusterIP != old.Spec.ClusterIP {
			errs = append(errs, field.Invalid(p.Child("clusterIPs").Index(0), spec.ClusterIP, "may not change once set"))
		}
	}
	return errs
}

func validateServicePorts(svc *corev1.Service, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	type portProto struct {
		port  int32
		proto corev1.Protocol
	}
	seen := map[portProto]bool{}
	nodePorts := map[portProto]bool{}
	nodePortsAllowed := svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
	for i, port := range svc.Spec.Ports {
		path := fldPath.Index(i)
		if len(svc.Spec.Ports) > 1 || port.Name != "" {
			if port.Name == "" {
				errs = append(errs, field.Required(path.Child("name"), ""))
			} else {
				errs = append(errs, validateDNS1123Label(port.Name, path.Child("name"))...)
				if names.Has(port.Name) {
					errs = append(errs, field.Duplicate(path.Child("name"), port.Name))
				}
				names.Insert(port.Name)
			}
		}
		for _, msg := range validation.IsValidPortNum(int(port.Port)) {
			errs = append(errs, field.Invalid(path.Child("port"), port.Port, msg))
		}
		errs = append(errs, validateProtocol(port.Protocol, path.Child("protocol"))...)
		errs = append(errs, validatePortNumOrName(port.TargetPort, path.Child("targetPort"))...)
		key := portProto{port.Port, port.Protocol}
		if seen[key] {
			errs = append(errs, field.Duplicate(path, key))
		}
		seen[key] = true
		if port.NodePort == 0 {
			continue
		}
		if !nodePortsAllowed {
			errs = append(errs, field.Forbidden(path.Child("nodePort"), "may not be used when `type` is '"+string(svc.Spec.Type)+"'"))
			continue
		}
		for _, msg := range validation.IsValidPortNum(int(port.NodePort)) {
			errs = append(errs, field.Invalid(path.Child("nodePort"), port.NodePort, msg))
		}
		nodeKey := portProto{port.NodePort, port.Protocol}
		if nodePorts[nodeKey] {
			errs = append(errs, field.Duplicate(path.Child("nodePort"), port.NodePort))
		}
		nodePorts[nodeKey] = true
	}
	return errs
}

// ValidateServiceStatusUpdate checks a status update: the load balancer
// ingress points, each an IP or a hostname.
func ValidateServiceStatusUpdate(svc, _ *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("status", "loadBalancer", "ingress")
	for i, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" {
			if _, err := netip.ParseAddr(ing.IP); err != nil {
				errs = append(errs, field.Invalid(p.Index(i).Child("ip"), ing.IP, "must be a valid IP address"))
			}
		}
		if ing.Hostname != "" {
			errs = append(errs, validateDNS1123Subdomain(ing.Hostname, p.Index(i).Child("hostname"))...)
		}
	}
	return errs
}
