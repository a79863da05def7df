package apiserver

import (
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/trustplane/trustplane/apiserver/kinds"
)

var (
	statusVerbs = metav1.Verbs{"get", "patch", "update"}
	scaleKind   = autoscalingv1.SchemeGroupVersion.WithKind("Scale")
)

// workloadResources are the kinds that scheduling, controllers and node
// agents work with.
func workloadResources() []*resource {
	core := corev1.SchemeGroupVersion
	apps := appsv1.SchemeGroupVersion
	coreEvents := &resource{
		gvr: core.WithResource("events"), kind: "Event", singular: "event",
		namespaced: true, shortNames: []string{"ev"},
		newObject:     func() runtime.Object { return &corev1.Event{} },
		newList:       func() runtime.Object { return &corev1.EventList{} },
		nameValidator: apimachineryvalidation.NameIsDNSSubdomain,
		defaults:      func(obj runtime.Object) { kinds.DefaultEvent(obj.(*corev1.Event)) },
		validate: func(obj, old runtime.Object) field.ErrorList {
			var o *corev1.Event
			if old != nil {
				o = old.(*corev1.Event)
			}
			return kinds.ValidateEvent(obj.(*corev1.Event), o)
		},
		fields: func(obj runtime.Object) fields.Set { return kinds.EventFields(obj.(*corev1.Event)) },
	}
	eventsV1 := eventsResource(coreEvents)
	return []*resource{
		{
			gvr: core.WithResource("pods"), kind: "Pod", singular: "pod",
			namespaced: true, shortNames: []string{"po"}, categories: []string{"all"},
			newObject:     func() runtime.Object { return &corev1.Pod{} },
			newList:       func() runtime.Object { return &corev1.PodList{} },
			nameValidator: apimachineryvalidation.NameIsDNSSubdomain,
			defaults:      func(obj runtime.Object) { kinds.DefaultPod(obj.(*corev1.Pod)) },
			prepareCreate: func(obj runtime.Object) {
				p := obj.(*corev1.Pod)
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: kinds.QOSClass(&p.Spec)}
			},
			validate: func(obj, old runtime.Object) field.ErrorList {
				var o *corev1.Pod
				if old != nil {
					o = old.(*corev1.Pod)
				}
				return kinds.ValidatePod(obj.(*corev1.Pod), o)
			},
			validateStatus: func(obj, old runtime.Object) field.ErrorList {
				return kinds.ValidatePodStatusUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
			},
			fields: func(obj runtime.Object) fields.Set { return kinds.PodFields(obj.(*corev1.Pod)) },
			gracePeriod: func(obj runtime.Object, opts *metav1.DeleteOptions) int64 {
				return kinds.PodGracePeriod(obj.(*corev1.Pod), opts)
			},
			subresources: []subresource{
				{name: "status", kind: core.WithKind("Pod"), verbs: statusVerbs},
				{name: "binding", kind: core.WithKind("Binding"), verbs: metav1.Verbs{"create"}},
			},
		},
		{
			gvr: core.WithResource("nodes"), kind: "Node", singular: "node",
			shortNames:    []string{"no"},
			newObject:     func() runtime.Object { return &corev1.Node{} },
			newList:       func() runtime.Object { return &corev1.NodeList{} },
			nameValidator: apimachineryvalidation.NameIsDNSSubdomain,
			defaults:      func(obj runtime.Object) { kinds.DefaultNode(obj.(*corev1.Node)) },
			validate: func(obj, old runtime.Object) field.ErrorList {
				var o *corev1.Node
				if old != nil {
					o = old.(*corev1.Node)
				}
				return kinds.ValidateNode(obj.(*corev1.Node), o)
			},
			validateStatus: func(obj, old runtime.Object) field.ErrorList {
				return kinds.ValidateNode(obj.(*corev1.Node), old.(*corev1.Node))
			},
			fields: func(obj runtime.Object) fields.Set { return kinds.NodeFields(obj.(*corev1.Node)) },
			subresources: []subresource{
				{name: "status", kind: core.WithKind("Node"), verbs: statusVerbs},
			},
		},
		{
			gvr: core.WithResource("serviceaccounts"), kind: "ServiceAccount", singular: "serviceaccount",
			namespaced: true, shortNames: []string{"sa"},
			newObject:     func() runtime.Object { return &corev1.ServiceAccount{} },
			newList:       func() runtime.Object { return &corev1.ServiceAccountList{} },
			nameValidator: apimachineryvalidation.ValidateServiceAccountName,
			subresources: []subresource{
				{name: "token", kind: authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"), verbs: metav1.Verbs{"create"}},
			},
			validate: func(obj, old runtime.Object) field.ErrorList {
				var o *corev1.ServiceAccount
				if old != nil {
					o = old.(*corev1.ServiceAccount)
				}
				return kinds.ValidateServiceAccount(obj.(*corev1.ServiceAccount), o)
			},
		},
		coreEvents,
		eventsV1,
		{
			gvr: apps.WithResource("deployments"), kind: "Deployment", singular: "deployment",
			namespaced: true, shortNames: []string{"deploy"}, categories: []string{"all"},
			tracksGeneration: true,
			newObject:        func() runtime.Object { return &appsv1.Deployment{} },
			newList:          func() runtime.Object { return &appsv1.DeploymentList{} },
			nameValidator:    apimachineryvalidation.NameIsDNSSubdomain,
			defaults:         func(obj runtime.Object) { kinds.DefaultDeployment(obj.(*appsv1.Deployment)) },
			prepareCreate:    func(obj runtime.Object) { obj.(*appsv1.Deployment).Status = appsv1.DeploymentStatus{} },
			validate: func(obj, old runtime.Object) field.ErrorList {
				var o *appsv1.Deployment
				if old != nil {
					o = old.(*appsv1.Deployment)
				}
				return kinds.ValidateDeployment(obj.(*appsv1.Deployment), o)
			},
			validateStatus: func(obj, old runtime.Object) field.ErrorList {
				return kinds.ValidateDeploymentStatusUpdate(obj.(*appsv1.Deployment), old.(*appsv1.Deployment))
			},
			subresources: []subresource{
				{name: "status", kind: apps.WithKind("Deployment"), verbs: statusVerbs},
				{name: "scale", kind: scaleKind, verbs: metav1.Verbs{"get", "patch", "update"}},
			},
		},
		{
			gvr: apps.WithResource("replicasets"), kind: "ReplicaSet", singular: "replicaset",
			namespaced: true, shortNames: []string{"rs"}, categories: []string{"all"},
			tracksGeneration: true,
			newObject:        func() runtime.Object { return &appsv1.ReplicaSet{} },
			newList:          func() runtime.Object { return &appsv1.ReplicaSetList{} },
			nameValidator:    apimachineryvalidation.NameIsDNSSubdomain,
			defaults:         func(obj runtime.Object) { kinds.DefaultReplicaSet(obj.(*appsv1.ReplicaSet)) },
			prepareCreate:    func(obj runtime.Object) { obj.(*appsv1.ReplicaSet).Status = appsv1.ReplicaSetStatus{} },
			validate: func(obj, old runtime.Object) field.ErrorList {
				var o *appsv1.ReplicaSet
				if old != nil {
					o = old.(*appsv1.ReplicaSet)
				}
				return kinds.ValidateReplicaSet(obj.(*appsv1.ReplicaSet), o)
			},
			validateStatus: func(obj, old runtime.Object) field.ErrorList {
				return kinds.ValidateReplicaSetStatusUpdate(obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet))
			},
			fields: func(obj runtime.Object) fields.Set { return kinds.ReplicaSetFields(obj.(*appsv1.ReplicaSet)) },
			subresources: []subresource{
				{name: "status", kind: apps.WithKind("ReplicaSet"), verbs: statusVerbs},
				{name: "scale", kind: scaleKind, verbs: metav1.Verbs{"get", "patch", "update"}},
			},
		},
		{
			gvr: coordinationv1.SchemeGroupVersion.WithResource("leases"), kind: "Lease", singular: "lease",
			namespaced:    true,
			newObject:     func() runtime.Object { return &coordinationv1.Lease{} },
			newList:       func() runtime.Object { return &coordinationv1.LeaseList{} },
			nameValidator: apimachineryvalidation.NameIsDNSSubdomain,
			validate: func(obj, old runtime.Object) field.ErrorList {
				var o *coordinationv1.Lease
				if old != nil {
					o = old.(*coordinationv1.Lease)
				}
				return kinds.ValidateLease(obj.(*coordinationv1.Lease), o)
			},
		},
	}
}

// eventsResource serves events.k8s.io/v1 Events from the core/v1 Events
// they are stored as, as kube-apiserver does: one set of events, two APIs.
func eventsResource(coreEvents *resource) *resource {
	toCore := func(obj runtime.Object) *corev1.Event {
		if obj == nil {
			return nil
		}
		return kinds.EventToV1(obj.(*eventsv1.Event))
	}
	return &resource{
		gvr: eventsv1.SchemeGroupVersion.WithResource("events"), kind: "Event", singular: "event",
		namespaced: true, shortNames: []string{"ev"},
		newObject:     func() runtime.Object { return &eventsv1.Event{} },
		newList:       func() runtime.Object { return &eventsv1.EventList{} },
		nameValidator: apimachineryvalidation.NameIsDNSSubdomain,
		validate: func(obj, old runtime.Object) field.ErrorList {
			return kinds.ValidateEvent(toCore(obj), toCore(old))
		},
		fields: func(obj runtime.Object) fields.Set { return kinds.EventFields(toCore(obj)) },
		view: &storageView{
			stored:     coreEvents,
			toStored:   func(obj runtime.Object) runtime.Object { return toCore(obj) },
			fromStored: func(obj runtime.Object) runtime.Object { return kinds.EventFromV1(obj.(*corev1.Event)) },
		},
	}
}
