package kinds

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of an EndpointSlice, as kube's.
const (
	maxEndpoints          = 1000
	maxEndpointSlicePorts = 100
	maxEndpointAddresses  = 100
)

var addressTypes = sets.New(discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN)

// DefaultEndpointSlice sets kube's default: ports are TCP.
func DefaultEndpointSlice(s *discoveryv1.EndpointSlice) {
	for i := range s.Ports {
		if s.Ports[i].Protocol == nil {
			tcp := corev1.ProtocolTCP
			s.Ports[i].Protocol = &tcp
		}
	}
}

// ValidateEndpointSlice checks an EndpointSlice on create (old nil) or
// update by kube's rules: its address type, which never changes; each
// endpoint's addresses of that type, node name and hostname; its ports.
func ValidateEndpointSlice(s, old *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	if !addressTypes.Has(s.AddressType) {
		errs = append(errs, field.NotSupported(field.NewPath("addressType"), s.AddressType, sets.List(addressTypes)))
	}
	if old != nil && s.AddressType != old.AddressType {
		errs = append(errs, field.Invalid(field.NewPath("addressType"), s.AddressType, "field is immutable"))
	}
	ep := field.NewPath("endpoints")
	if len(s.Endpoints) > maxEndpoints {
		errs = append(errs, field.TooMany(ep, len(s.Endpoints), maxEndpoints))
	}
	for i, e := range s.Endpoints {
		path := ep.Index(i)
		addrs := path.Child("addresses")
		switch {
		case len(e.Addresses) == 0:
			errs = append(errs, field.Required(addrs, "must contain at least 1 address"))
		case len(e.Addresses) > maxEndpointAddresses:
			errs = append(errs, field.TooMany(addrs, len(e.Addresses), maxEndpointAddresses))
		}
		for j, a := range e.Addresses {
			errs = append(errs, validateEndpointAddress(a, s.AddressType, addrs.Index(j))...)
		}
		if e.NodeName != nil {
			errs = append(errs, validateDNS1123Subdomain(*e.NodeName, path.Child("nodeName"))...)
		}
		if e.Hostname != nil {
			errs = append(errs, validateDNS1123Label(*e.Hostname, path.Child("hostname"))...)
		}
	}
	pp := field.NewPath("ports")
	if len(s.Ports) > maxEndpointSlicePorts {
		errs = append(errs, field.TooMany(pp, len(s.Ports), maxEndpointSlicePorts))
	}
	names := sets.New[string]()
	for i, port := range s.Ports {
		path := pp.Index(i)
		if port.Name != nil {
			if *port.Name != "" {
				errs = append(errs, validateDNS1123Label(*port.Name, path.Child("name"))...)
			}
			if names.Has(*port.Name) {
				errs = append(errs, field.Duplicate(path.Child("name"), *port.Name))
			}
			names.Insert(*port.Name)
		}
		if port.Protocol != nil {
			errs = append(errs, validateProtocol(*port.Protocol, path.Child("protocol"))...)
		}
		if port.Port != nil {
			for _, msg := range validation.IsValidPortNum(int(*port.Port)) {
				errs = append(errs, field.Invalid(path.Child("port"), *port.Port, msg))
			}
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(s.Labels, field.NewPath("metadata", "labels"))...)
	return errs
}

func validateEndpointAddress(a string, t discoveryv1.AddressType, fldPath *field.Path) field.ErrorList {
	switch t {
	case discoveryv1.AddressTypeFQDN:
		return validateDNS1123Subdomain(a, fldPath)
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
		ip, err := netip.ParseAddr(a)
		if err != nil || ip.Is4() != (t == discoveryv1.AddressTypeIPv4) || ip.Is4In6() {
			return field.ErrorList{field.Invalid(fldPath, a, "must be a valid "+string(t)+" address")}
		}
	}
	return nil
}
