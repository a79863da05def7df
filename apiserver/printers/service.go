package printers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// serviceRow prints a Service as kube's printer does.
func serviceRow(svc *corev1.Service, now time.Time) metav1.TableRow {
	selector := "<none>"
	if len(svc.Spec.Selector) > 0 {
		selector = labels.FormatLabels(svc.Spec.Selector)
	}
	clusterIP := svc.Spec.ClusterIP
	if clusterIP == "" {
		clusterIP = "<none>"
	}
	return metav1.TableRow{Cells: []any{
		svc.Name,
		string(svc.Spec.Type),
		clusterIP,
		serviceExternalIP(svc),
		servicePorts(svc.Spec.Ports),
		age(svc.CreationTimestamp.Time, now),
		selector,
	}}
}

// serviceExternalIP is kube's External-IP cell: the external IPs, a load
// balancer's ingress points (or <pending>), an ExternalName's name.
func serviceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	case corev1.ServiceTypeLoadBalancer:
		var ips []string
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if ing.IP != "" {
				ips = append(ips, ing.IP)
			} else if ing.Hostname != "" {
				ips = append(ips, ing.Hostname)
			}
		}
		ips = append(ips, svc.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	}
	if len(svc.Spec.ExternalIPs) > 0 {
		return strings.Join(svc.Spec.ExternalIPs, ",")
	}
	return "<none>"
}

// servicePorts is "80/TCP" per port, "80:30080/TCP" with a node port.
func servicePorts(ports []corev1.ServicePort) string {
	if len(ports) == 0 {
		return "<none>"
	}
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		s := strconv.Itoa(int(p.Port))
		if p.NodePort > 0 {
			s += ":" + strconv.Itoa(int(p.NodePort))
		}
		out = append(out, s+"/"+string(p.Protocol))
	}
	return strings.Join(out, ",")
}

// endpointSliceRow prints an EndpointSlice as kube's printer does: its
// ports, and its first three addresses.
func endpointSliceRow(s *discoveryv1.EndpointSlice, now time.Time) metav1.TableRow {
	ports := "<unset>"
	if len(s.Ports) > 0 {
		var ps []string
		for _, p := range s.Ports {
			if p.Port == nil {
				ps = append(ps, "<unset>")
			} else {
				ps = append(ps, strconv.Itoa(int(*p.Port)))
			}
		}
		ports = strings.Join(ps, ",")
	}
	var addrs []string
	for _, e := range s.Endpoints {
		addrs = append(addrs, e.Addresses...)
	}
	endpoints := "<unset>"
	switch n := len(addrs); {
	case n > 3:
		endpoints = strings.Join(addrs[:3], ",") + fmt.Sprintf(" + %d more...", n-3)
	case n > 0:
		endpoints = strings.Join(addrs, ",")
	}
	return metav1.TableRow{Cells: []any{s.Name, string(s.AddressType), ports, endpoints, age(s.CreationTimestamp.Time, now)}}
}
