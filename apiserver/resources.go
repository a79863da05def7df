package apiserver

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// resource is one served REST resource and the rules particular to it.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	singular   string
	namespaced bool
	shortNames []string
	newObject  func() runtime.Object
	newList    func() runtime.Object
	// nameValidator checks metadata.name.
	nameValidator apimachineryvalidation.ValidateNameFunc
	// defaults sets kube's defaults on a decoded object.
	defaults func(obj runtime.Object)
	// prepareCreate resets what a client may not set on create.
	prepareCreate func(obj runtime.Object)
	// prepareUpdate keeps what a client may not change on update.
	prepareUpdate func(obj, old runtime.Object)
	// validate checks the object beyond its metadata; old is nil on create.
	validate func(obj, old runtime.Object) field.ErrorList
	// validateStatus checks an update of the status subresource.
	validateStatus func(obj, old runtime.Object) field.ErrorList
	// gracePeriod is how long a deleted object lingers for its node agent
	// to stop it; nil or 0 deletes at once.
	gracePeriod func(obj runtime.Object, opts *metav1.DeleteOptions) int64
	// fields are the field selector labels beyond metadata.name and
	// metadata.namespace.
	fields func(obj runtime.Object) fields.Set
	// subresources are served below an object of the resource.
	subresources []subresource
	// categories group resources for kubectl (e.g. "all").
	categories []string
	// tracksGeneration: metadata.generation starts at 1 and counts changes
	// of the spec.
	tracksGeneration bool
	// supportedFields are the field selector labels; see fieldLabels.
	supportedFields map[string]bool
	// review, when set, makes this a create-only resource that is
	// computed, never stored.
	review *review
	// view, when set, serves this resource from another's storage.
	view *storageView
}

// subresource is one subresource of a resource, for discovery.
type subresource struct {
	name  string
	kind  schema.GroupVersionKind
	verbs metav1.Verbs
}

// hasStatus reports whether the status is written through a subresource.
func (r *resource) hasStatus() bool {
	for _, sub := range r.subresources {
		if sub.name == "status" {
			return true
		}
	}
	return false
}

func (r *resource) subresource(name string) (subresource, bool) {
	for _, sub := range r.subresources {
		if sub.name == name {
			return sub, true
		}
	}
	return subresource{}, false
}

func (r *resource) gvk() schema.GroupVersionKind { return r.gvr.GroupVersion().WithKind(r.kind) }

func (r *resource) groupResource() schema.GroupResource { return r.gvr.GroupResource() }

// verbs are the verbs the resource supports.
func (r *resource) verbs() metav1.Verbs {
	if r.review != nil {
		return metav1.Verbs{"create"}
	}
	return metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
}

// resources are the served resources, in discovery order.
func resources() []*resource {
	rbacGV := rbacv1.SchemeGroupVersion
	return []*resource{
		{
			gvr: corev1.SchemeGroupVersion.WithResource("namespaces"), kind: "Namespace", singular: "namespace",
			shortNames:    []string{"ns"},
			newObject:     func() runtime.Object { return &corev1.Namespace{} },
			newList:       func() runtime.Object { return &corev1.NamespaceList{} },
			nameValidator: apimachineryvalidation.ValidateNamespaceName,
			prepareCreate: func(obj runtime.Object) {
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
			prepareUpdate: func(obj, old runtime.Object) {
				ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
				ns.Spec.Finalizers = oldNS.Spec.Finalizers
				ns.Status = oldNS.Status
				if ns.Labels == nil {
					ns.Labels = map[string]string{}
				}
				ns.Labels[corev1.LabelMetadataName] = ns.Name
			},
			fields: func(obj runtime.Object) fields.Set {
				return fields.Set{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
			},
			subresources: []subresource{
				{name: "status", kind: corev1.SchemeGroupVersion.WithKind("Namespace"), verbs: statusVerbs},
				{name: "finalize", kind: corev1.SchemeGroupVersion.WithKind("Namespace"), verbs: metav1.Verbs{"update"}},
			},
		},
		{
			gvr: corev1.SchemeGroupVersion.WithResource("configmaps"), kind: "ConfigMap", singular: "configmap",
			namespaced: true, shortNames: []string{"cm"},
			newObject:     func() runtime.Object { return &corev1.ConfigMap{} },
			newList:       func() runtime.Object { return &corev1.ConfigMapList{} },
			nameValidator: apimachineryvalidation.NameIsDNSSubdomain,
			validate:      validateConfigMap,
		},
		{
			gvr: corev1.SchemeGroupVersion.WithResource("secrets"), kind: "Secret", singular: "secret",
			namespaced:    true,
			newObject:     func() runtime.Object { return &corev1.Secret{} },
			newList:       func() runtime.Object { return &corev1.SecretList{} },
			nameValidator: apimachineryvalidation.NameIsDNSSubdomain,
			prepareCreate: func(obj runtime.Object) {
				if s := obj.(*corev1.Secret); s.Type == "" {
					s.Type = corev1.SecretTypeOpaque
				}
			},
			prepareUpdate: func(obj, _ runtime.Object) {
				if s := obj.(*corev1.Secret); s.Type == "" {
					s.Type = corev1.SecretTypeOpaque
				}
			},
			validate: validateSecret,
			fields: func(obj runtime.Object) fields.Set {
				return fields.Set{"type": string(obj.(*corev1.Secret).Type)}
			},
		},
		{
			gvr: rbacGV.WithResource("clusterroles"), kind: "ClusterRole", singular: "clusterrole",
			newObject:     func() runtime.Object { return &rbacv1.ClusterRole{} },
			newList:       func() runtime.Object { return &rbacv1.ClusterRoleList{} },
			nameValidator: path.ValidatePathSegmentName,
			validate: func(obj, _ runtime.Object) field.ErrorList {
				return validateRules(obj.(*rbacv1.ClusterRole).Rules, false, field.NewPath("rules"))
			},
		},
		{
			gvr: rbacGV.WithResource("clusterrolebindings"), kind: "ClusterRoleBinding", singular: "clusterrolebinding",
			newObject:     func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
			newList:       func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
			nameValidator: path.ValidatePathSegmentName,
			validate: func(obj, old runtime.Object) field.ErrorList {
				b := obj.(*rbacv1.ClusterRoleBinding)
				var oldRef *rbacv1.RoleRef
				if old != nil {
					oldRef = &old.(*rbacv1.ClusterRoleBinding).RoleRef
				}
				return validateBinding(b.RoleRef, oldRef, b.Subjects, false)
			},
		},
		{
			gvr: rbacGV.WithResource("roles"), kind: "Role", singular: "role",
			namespaced:    true,
			newObject:     func() runtime.Object { return &rbacv1.Role{} },
			newList:       func() runtime.Object { return &rbacv1.RoleList{} },
			nameValidator: path.ValidatePathSegmentName,
			validate: func(obj, _ runtime.Object) field.ErrorList {
				return validateRules(obj.(*rbacv1.Role).Rules, true, field.NewPath("rules"))
			},
		},
		{
			gvr: rbacGV.WithResource("rolebindings"), kind: "RoleBinding", singular: "rolebinding",
			namespaced:    true,
			newObject:     func() runtime.Object { return &rbacv1.RoleBinding{} },
			newList:       func() runtime.Object { return &rbacv1.RoleBindingList{} },
			nameValidator: path.ValidatePathSegmentName,
			validate: func(obj, old runtime.Object) field.ErrorList {
				b := obj.(*rbacv1.RoleBinding)
				var oldRef *rbacv1.RoleRef
				if old != nil {
					oldRef = &old.(*rbacv1.RoleBinding).RoleRef
				}
				return validateBinding(b.RoleRef, oldRef, b.Subjects, true)
			},
		},
	}
}

// registry finds served resources by group, version and resource.
type registry struct {
	byGVR map[schema.GroupVersionResource]*resource
	all   []*resource
}

func newRegistry(s *runtime.Scheme) (*registry, error) {
	r := &registry{byGVR: map[schema.GroupVersionResource]*resource{}}
	for _, res := range append(append(resources(), workloadResources()...), reviewResources()...) {
		// Every served kind must be registered, or nothing could decode it.
		if !s.Recognizes(res.gvk()) {
			return nil, fmt.Errorf("kind %s is not in the scheme", res.gvk())
		}
		res.computeFieldLabels()
		r.byGVR[res.gvr] = res
		r.all = append(r.all, res)
	}
	return r, nil
}

func (r *registry) lookup(group, version, res string) (*resource, bool) {
	x, ok := r.byGVR[schema.GroupVersionResource{Group: group, Version: version, Resource: res}]
	return x, ok
}

// stored are the resources kept in etcd under their own keys.
func (r *registry) stored() []*resource {
	var out []*resource
	for _, res := range r.all {
		if res.review == nil && res.view == nil {
			out = append(out, res)
		}
	}
	return out
}

// namespaced are the resources deleted with their namespace.
func (r *registry) namespaced() []*resource {
	var out []*resource
	for _, res := range r.stored() {
		if res.namespaced {
			out = append(out, res)
		}
	}
	return out
}

// objectFields are the field selector labels of obj.
func (r *resource) objectFields(obj runtime.Object) (fields.Set, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	set := fields.Set{"metadata.name": accessor.GetName()}
	if r.namespaced {
		set["metadata.namespace"] = accessor.GetNamespace()
	}
	if r.fields != nil {
		for k, v := range r.fields(obj) {
			set[k] = v
		}
	}
	return set, nil
}

// fieldLabels are the field selector labels the resource supports,
// computed once by newRegistry.
func (r *resource) fieldLabels() map[string]bool { return r.supportedFields }

func (r *resource) computeFieldLabels() {
	set, _ := r.objectFields(r.newObject())
	r.supportedFields = map[string]bool{}
	for k := range set {
		r.supportedFields[k] = true
	}
}
