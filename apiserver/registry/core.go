package registry

import (
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/trustplane/trustplane/apiserver/kinds"
)

var statusVerbs = metav1.Verbs{"get", "patch", "update"}

// coreResources are the served kinds of the core group, v1.
func coreResources() []*Resource {
	core := corev1.SchemeGroupVersion
	return []*Resource{
		{
			GVR: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace", Singular: "namespace",
			ShortNames:    []string{"ns"},
			NewObject:     func() runtime.Object { return &corev1.Namespace{} },
			NewList:       func() runtime.Object { return &corev1.NamespaceList{} },
			NameValidator: apimachineryvalidation.ValidateNamespaceName,
			PrepareCreate: func(obj runtime.Object) {
				ns := obj.(*corev1.Namespace)
				ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
				if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
					ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
				}
				// Namespaces carry their name as a label, as in
				// kube-apiserver, so they can be selected by it.
				if ns.Labels == nil {
					ns.Labels = map[string]string{}
				}
				ns.Labels[corev1.LabelMetadataName] = ns.Name
			},
			PrepareUpdate: func(obj, old runtime.Object) {
				ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
				ns.Spec.Finalizers = oldNS.Spec.Finalizers
				ns.Status = oldNS.Status
				if ns.Labels == nil {
					ns.Labels = map[string]string{}
				}
				ns.Labels[corev1.LabelMetadataName] = ns.Name
			},
			Fields: func(obj runtime.Object) fields.Set {
				return fields.Set{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
			},
			Subresources: []Subresource{
				{Name: "status", Kind: corev1.SchemeGroupVersion.WithKind("Namespace"), Verbs: statusVerbs},
				{Name: "finalize", Kind: corev1.SchemeGroupVersion.WithKind("Namespace"), Verbs: metav1.Verbs{"update"}},
			},
		},
		{
			GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Singular: "configmap",
			Namespaced: true, ShortNames: []string{"cm"},
			NewObject:     func() runtime.Object { return &corev1.ConfigMap{} },
			NewList:       func() runtime.Object { return &corev1.ConfigMapList{} },
			NameValidator: apimachineryvalidation.NameIsDNSSubdomain,
			Validate:      validateConfigMap,
		},
		{
			GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret", Singular: "secret",
			Namespaced:    true,
			NewObject:     func() runtime.Object { return &corev1.Secret{} },
			NewList:       func() runtime.Object { return &corev1.SecretList{} },
			NameValidator: apimachineryvalidation.NameIsDNSSubdomain,
			Defaults:      func(obj runtime.Object) { kinds.DefaultSecret(obj.(*corev1.Secret)) },
			Validate:      validateSecret,
			Fields: func(obj runtime.Object) fields.Set {
				return fields.Set{"type": string(obj.(*corev1.Secret).Type)}
			},
		},
		{
			GVR: core.WithResource("pods"), Kind: "Pod", Singular: "pod",
			Namespaced: true, ShortNames: []string{"po"}, Categories: []string{"all"},
			NewObject:     func() runtime.Object { return &corev1.Pod{} },
			NewList:       func() runtime.Object { return &corev1.PodList{} },
			NameValidator: apimachineryvalidation.NameIsDNSSubdomain,
			Defaults:      func(obj runtime.Object) { kinds.DefaultPod(obj.(*corev1.Pod)) },
			PrepareCreate: func(obj runtime.Object) {
				p := obj.(*corev1.Pod)
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: kinds.QOSClass(&p.Spec)}
			},
			Validate:       typed(kinds.ValidatePod),
			ValidateStatus: typed(kinds.ValidatePodStatusUpdate),
			Fields:         func(obj runtime.Object) fields.Set { return kinds.PodFields(obj.(*corev1.Pod)) },
			GracePeriod: func(obj runtime.Object, opts *metav1.DeleteOptions) int64 {
				return kinds.PodGracePeriod(obj.(*corev1.Pod), opts)
			},
			Subresources: []Subresource{
				{Name: "status", Kind: core.WithKind("Pod"), Verbs: statusVerbs},
				{Name: "binding", Kind: core.WithKind("Binding"), Verbs: metav1.Verbs{"create"}},
			},
		},
		{
			GVR: core.WithResource("services"), Kind: "Service", Singular: "service",
			Namespaced: true, ShortNames: []string{"svc"}, Categories: []string{"all"},
			NewObject:     func() runtime.Object { return &corev1.Service{} },
			NewList:       func() runtime.Object { return &corev1.ServiceList{} },
			NameValidator: apimachineryvalidation.NameIsDNS1035Label,
			Defaults:      func(obj runtime.Object) { kinds.DefaultService(obj.(*corev1.Service)) },
			PrepareCreate: func(obj runtime.Object) { obj.(*corev1.Service).Status = corev1.ServiceStatus{} },
			PrepareUpdate: func(obj, old runtime.Object) {
				kinds.KeepAllocated(obj.(*corev1.Service), old.(*corev1.Service))
			},
			Validate:       typed(kinds.ValidateService),
			ValidateStatus: typed(kinds.ValidateServiceStatusUpdate),
			Subresources: []Subresource{
				{Name: "status", Kind: core.WithKind("Service"), Verbs: statusVerbs},
			},
		},
		{
			GVR: core.WithResource("nodes"), Kind: "Node", Singular: "node",
			ShortNames:     []string{"no"},
			NewObject:      func() runtime.Object { return &corev1.Node{} },
			NewList:        func() runtime.Object { return &corev1.NodeList{} },
			NameValidator:  apimachineryvalidation.NameIsDNSSubdomain,
			Defaults:       func(obj runtime.Object) { kinds.DefaultNode(obj.(*corev1.Node)) },
			Validate:       typed(kinds.ValidateNode),
			ValidateStatus: typed(kinds.ValidateNode),
			Fields:         func(obj runtime.Object) fields.Set { return kinds.NodeFields(obj.(*corev1.Node)) },
			Subresources: []Subresource{
				{Name: "status", Kind: core.WithKind("Node"), Verbs: statusVerbs},
			},
		},
		{
			GVR: core.WithResource("serviceaccounts"), Kind: "ServiceAccount", Singular: "serviceaccount",
			Namespaced: true, ShortNames: []string{"sa"},
			NewObject:     func() runtime.Object { return &corev1.ServiceAccount{} },
			NewList:       func() runtime.Object { return &corev1.ServiceAccountList{} },
			NameValidator: apimachineryvalidation.ValidateServiceAccountName,
			Subresources: []Subresource{
				{Name: "token", Kind: authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"), Verbs: metav1.Verbs{"create"}},
			},
			Validate: typed(kinds.ValidateServiceAccount),
		},
		{
			GVR: core.WithResource("events"), Kind: "Event", Singular: "event",
			Namespaced: true, ShortNames: []string{"ev"},
			NewObject:     func() runtime.Object { return &corev1.Event{} },
			NewList:       func() runtime.Object { return &corev1.EventList{} },
			NameValidator: apimachineryvalidation.NameIsDNSSubdomain,
			Defaults:      func(obj runtime.Object) { kinds.DefaultEvent(obj.(*corev1.Event)) },
			Validate:      typed(kinds.ValidateEvent),
			Fields:        func(obj runtime.Object) fields.Set { return kinds.EventFields(obj.(*corev1.Event)) },
		},
	}
}
