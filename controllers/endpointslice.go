package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

const (
	// endpointSliceManagedBy is the managed-by label of kube's
	// EndpointSlice controller's slices; it touches no others.
	endpointSliceManagedBy = "endpointslice-controller.k8s.io"
	// maxEndpointsPerSlice is kube's default --max-endpoints-per-slice.
	maxEndpointsPerSlice = 100
)

// newEndpointSliceController keeps, for each Service with a selector, one
// set of EndpointSlices listing the pods the selector matches that have an
// IP, with their ready, serving and terminating conditions, node and the
// Service's ports resolved against their containers, at most 100 to a
// slice, as kube's EndpointSlice controller does. A pod or Service
// changed enqueues the Services concerned.
func newEndpointSliceController(c *controllerContext) (runner, error) {
	services := c.informers.Core().V1().Services()
	pods := c.informers.Core().V1().Pods()
	slices := c.informers.Discovery().V1().EndpointSlices()
	e := &endpointSlices{c: c, services: services.Lister(), pods: pods.Lister(), slices: slices.Lister()}
	w := newWorker("endpointslice", c.logger, e.sync)
	e.w = w
	if _, err := services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.enqueue,
		UpdateFunc: func(_, obj any) { w.enqueue(obj) },
		DeleteFunc: w.enqueue,
	}); err != nil {
		return nil, err
	}
	podChanged := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if pod, ok := obj.(*corev1.Pod); ok {
			e.enqueueServicesOf(pod)
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: podChanged,
		UpdateFunc: func(old, obj any) {
			// A pod whose labels changed may leave Services it no
			// longer matches.
			podChanged(old)
			podChanged(obj)
		},
		DeleteFunc: podChanged,
	}); err != nil {
		return nil, err
	}
	// A slice of ours changed or deleted by someone else is put back.
	if _, err := slices.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { e.enqueueOwner(obj) },
		DeleteFunc: e.enqueueOwner,
	}); err != nil {
		return nil, err
	}
	synced := []cache.InformerSynced{services.Informer().HasSynced, pods.Informer().HasSynced, slices.Informer().HasSynced}
	return func(ctx context.Context, workers int) { w.run(ctx, workers, synced...) }, nil
}

type endpointSlices struct {
	c        *controllerContext
	w        *worker
	services corelisters.ServiceLister
	pods     corelisters.PodLister
	slices   discoverylisters.EndpointSliceLister
}

// enqueueServicesOf enqueues the Services whose selector matches pod.
func (e *endpointSlices) enqueueServicesOf(pod *corev1.Pod) {
	svcs, err := e.services.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, svc := range svcs {
		if len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			e.w.enqueue(svc)
		}
	}
}

// enqueueOwner enqueues the Service of a slice this controller manages.
func (e *endpointSlices) enqueueOwner(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	slice, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || slice.Labels[discoveryv1.LabelManagedBy] != endpointSliceManagedBy {
		return
	}
	if name := slice.Labels[discoveryv1.LabelServiceName]; name != "" {
		e.w.queue.Add(slice.Namespace + "/" + name)
	}
}

// sync makes the slices of the Service key what its pods say.
func (e *endpointSlices) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	existing, err := e.slices.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name,
		discoveryv1.LabelManagedBy:   endpointSliceManagedBy,
	}))
	if err != nil {
		return err
	}
	slices.SortFunc(existing, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	svc, err := e.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		svc = nil
	} else if err != nil {
		return err
	}
	var want []*discoveryv1.EndpointSlice
	// A Service without a selector has its slices written by others.
	if svc != nil && len(svc.Spec.Selector) > 0 && svc.DeletionTimestamp == nil {
		pods, err := e.pods.Pods(ns).List(labels.SelectorFromSet(svc.Spec.Selector))
		if err != nil {
			return err
		}
		want = desiredSlices(svc, pods)
	}
	var errs []error
	for i, w := range want {
		if i < len(existing) {
			old := existing[i]
			if old.AddressType == w.AddressType && equality.Semantic.DeepEqual(old.Endpoints, w.Endpoints) &&
				equality.Semantic.DeepEqual(old.Ports, w.Ports) && equality.Semantic.DeepEqual(old.Labels, w.Labels) {
				continue
			}
			if old.AddressType == w.AddressType {
				next := old.DeepCopy()
				next.Labels, next.Endpoints, next.Ports, next.OwnerReferences = w.Labels, w.Endpoints, w.Ports, w.OwnerReferences
				_, err := e.c.client.DiscoveryV1().EndpointSlices(ns).Update(ctx, next, metav1.UpdateOptions{})
				errs = append(errs, err)
				continue
			}
			// The address type never changes: replace the slice.
			errs = append(errs, e.delete(ctx, old))
		}
		_, err := e.c.client.DiscoveryV1().EndpointSlices(ns).Create(ctx, w, metav1.CreateOptions{})
		errs = append(errs, err)
	}
	for i := len(want); i < len(existing); i++ {
		errs = append(errs, e.delete(ctx, existing[i]))
	}
	return errors.Join(errs...)
}

func (e *endpointSlices) delete(ctx context.Context, s *discoveryv1.EndpointSlice) error {
	err := e.c.client.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// desiredSlices are the slices of svc from its pods: the pods with an IP
// of the Service's family that have not finished, grouped by the ports
// their containers resolve the Service's to, sorted by address, at most
// maxEndpointsPerSlice to a slice.
func desiredSlices(svc *corev1.Service, pods []*corev1.Pod) []*discoveryv1.EndpointSlice {
	addressType := discoveryv1.AddressTypeIPv4
	if len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] == corev1.IPv6Protocol {
		addressType = discoveryv1.AddressTypeIPv6
	}
	type group struct {
		ports     []discoveryv1.EndpointPort
		endpoints []discoveryv1.Endpoint
	}
	groups := map[string]*group{}
	for _, pod := range pods {
		ip, err := netip.ParseAddr(pod.Status.PodIP)
		if err != nil || ip.Is4() != (addressType == discoveryv1.AddressTypeIPv4) {
			continue
		}
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		ports := endpointPorts(svc, pod)
		k := portsKey(ports)
		g, ok := groups[k]
		if !ok {
			g = &group{ports: ports}
			groups[k] = g
		}
		serving := podReady(pod)
		terminating := pod.DeletionTimestamp != nil
		ready := serving && !terminating || svc.Spec.PublishNotReadyAddresses
		ep := discoveryv1.Endpoint{
			Addresses: []string{ip.String()},
			Conditions: discoveryv1.EndpointConditions{
				Ready:       &ready,
				Serving:     &serving,
				Terminating: &terminating,
			},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		}
		if pod.Spec.NodeName != "" {
			node := pod.Spec.NodeName
			ep.NodeName = &node
		}
		g.endpoints = append(g.endpoints, ep)
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	sliceLabels := map[string]string{}
	for k, v := range svc.Labels {
		sliceLabels[k] = v
	}
	sliceLabels[discoveryv1.LabelServiceName] = svc.Name
	sliceLabels[discoveryv1.LabelManagedBy] = endpointSliceManagedBy
	isController := true
	var out []*discoveryv1.EndpointSlice
	for _, k := range keys {
		g := groups[k]
		slices.SortFunc(g.endpoints, func(a, b discoveryv1.Endpoint) int { return strings.Compare(a.Addresses[0], b.Addresses[0]) })
		for start := 0; start < len(g.endpoints); start += maxEndpointsPerSlice {
			end := min(start+maxEndpointsPerSlice, len(g.endpoints))
			out = append(out, &discoveryv1.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{
					GenerateName: svc.Name + "-",
					Namespace:    svc.Namespace,
					Labels:       sliceLabels,
					OwnerReferences: []metav1.OwnerReference{{
						APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID, Controller: &isController,
					}},
				},
				AddressType: addressType,
				Endpoints:   g.endpoints[start:end],
				Ports:       g.ports,
			})
		}
	}
	// A Service whose pods are all gone still has one, empty, slice, as
	// in kube: it says the Service has no endpoints.
	if len(out) == 0 {
		out = append(out, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				GenerateName: svc.Name + "-", Namespace: svc.Namespace, Labels: sliceLabels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID, Controller: &isController}},
			},
			AddressType: addressType,
			Endpoints:   []discoveryv1.Endpoint{},
			Ports:       []discoveryv1.EndpointPort{},
		})
	}
	return out
}

// endpointPorts are svc's ports as pod serves them: a named targetPort is
// the pod's container port of that name and protocol; a port the pod does
// not name is left out.
func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	out := []discoveryv1.EndpointPort{}
	for _, sp := range svc.Spec.Ports {
		port, ok := resolvePort(sp, pod)
		if !ok {
			continue
		}
		name, proto := sp.Name, sp.Protocol
		p := discoveryv1.EndpointPort{Name: &name, Protocol: &proto, Port: &port, AppProtocol: sp.AppProtocol}
		out = append(out, p)
	}
	return out
}

func resolvePort(sp corev1.ServicePort, pod *corev1.Pod) (int32, bool) {
	if sp.TargetPort.Type == intstr.Int {
		if sp.TargetPort.IntVal == 0 {
			return sp.Port, true
		}
		return sp.TargetPort.IntVal, true
	}
	for _, c := range pod.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == sp.TargetPort.StrVal && cp.Protocol == sp.Protocol {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

func portsKey(ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%s/%s/%d;", *p.Name, *p.Protocol, *p.Port)
	}
	return b.String()
}
