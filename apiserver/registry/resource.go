package registry

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Resource is one served REST resource and the rules particular to it.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Singular   string
	Namespaced bool
	ShortNames []string
	NewObject  func() runtime.Object
	NewList    func() runtime.Object
	// NameValidator checks metadata.name.
	NameValidator apimachineryvalidation.ValidateNameFunc
	// Defaults sets kube's defaults on a decoded object.
	Defaults func(obj runtime.Object)
	// PrepareCreate resets what a client may not set on create.
	PrepareCreate func(obj runtime.Object)
	// PrepareUpdate keeps what a client may not change on update.
	PrepareUpdate func(obj, old runtime.Object)
	// Validate checks the object beyond its metadata; old is nil on create.
	Validate func(obj, old runtime.Object) field.ErrorList
	// ValidateStatus checks an update of the status subresource.
	ValidateStatus func(obj, old runtime.Object) field.ErrorList
	// ValidateApproval checks an update of the approval subresource (a
	// CertificateSigningRequest's).
	ValidateApproval func(obj, old runtime.Object) field.ErrorList
	// SetRequester records on a new object who created it, for kinds
	// that carry their requester (a CertificateSigningRequest's
	// spec.username, groups, uid and extra); u is the authenticated user.
	SetRequester func(obj runtime.Object, u user.Info)
	// GracePeriod is how long a deleted object lingers for its node agent
	// to stop it; nil or 0 deletes at once.
	GracePeriod func(obj runtime.Object, opts *metav1.DeleteOptions) int64
	// Fields are the field selector labels beyond metadata.name and
	// metadata.namespace.
	Fields func(obj runtime.Object) fields.Set
	// Subresources are served below an object of the resource.
	Subresources []Subresource
	// Categories group resources for kubectl (e.g. "all").
	Categories []string
	// TracksGeneration: metadata.generation starts at 1 and counts changes
	// of the spec.
	TracksGeneration bool
	// supportedFields are the field selector labels; see FieldLabels.
	supportedFields map[string]bool
	// Review, when set, makes this a create-only resource that is
	// computed, never stored.
	Review *Review
	// View, when set, serves this resource from another's storage.
	View *View
}

// Subresource is one subresource of a resource, for discovery.
type Subresource struct {
	Name  string
	Kind  schema.GroupVersionKind
	Verbs metav1.Verbs
}

// HasStatus reports whether the status is written through a subresource.
func (r *Resource) HasStatus() bool {
	for _, sub := range r.Subresources {
		if sub.Name == "status" {
			return true
		}
	}
	return false
}

// Subresource finds a subresource of the resource by name.
func (r *Resource) Subresource(name string) (Subresource, bool) {
	for _, sub := range r.Subresources {
		if sub.Name == name {
			return sub, true
		}
	}
	return Subresource{}, false
}

// GVK is the kind of the resource's objects.
func (r *Resource) GVK() schema.GroupVersionKind { return r.GVR.GroupVersion().WithKind(r.Kind) }

// GroupResource is the resource without its version.
func (r *Resource) GroupResource() schema.GroupResource { return r.GVR.GroupResource() }

// Verbs are the verbs the resource supports.
func (r *Resource) Verbs() metav1.Verbs {
	if r.Review != nil {
		return metav1.Verbs{"create"}
	}
	return metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
}

// Registry finds served resources by group, version and resource.
type Registry struct {
	byGVR map[schema.GroupVersionResource]*Resource
	all   []*Resource
}

// New returns the registry of every served resource, in discovery order;
// scheme must know every served kind.
func New(s *runtime.Scheme) (*Registry, error) {
	r := &Registry{byGVR: map[schema.GroupVersionResource]*Resource{}}
	core := coreResources()
	coreEvents := core[slices.IndexFunc(core, func(res *Resource) bool { return res.GVR.Resource == "events" })]
	all := slices.Concat(core, rbacResources(), []*Resource{eventsResource(coreEvents)}, appsResources(), discoveryResources(), coordinationResources(), certificatesResources(), reviewResources())
	for _, res := range all {
		// Every served kind must be registered, or nothing could decode it.
		if !s.Recognizes(res.GVK()) {
			return nil, fmt.Errorf("kind %s is not in the scheme", res.GVK())
		}
		res.computeFieldLabels()
		r.byGVR[res.GVR] = res
		r.all = append(r.all, res)
	}
	return r, nil
}

// All are the served resources, in discovery order.
func (r *Registry) All() []*Resource { return r.all }

// Lookup finds a served resource.
func (r *Registry) Lookup(group, version, res string) (*Resource, bool) {
	x, ok := r.byGVR[schema.GroupVersionResource{Group: group, Version: version, Resource: res}]
	return x, ok
}

// Stored are the resources kept in etcd under their own keys.
func (r *Registry) Stored() []*Resource {
	var out []*Resource
	for _, res := range r.all {
		if res.Review == nil && res.View == nil {
			out = append(out, res)
		}
	}
	return out
}

// Namespaced are the resources deleted with their namespace.
func (r *Registry) Namespaced() []*Resource {
	var out []*Resource
	for _, res := range r.Stored() {
		if res.Namespaced {
			out = append(out, res)
		}
	}
	return out
}

// ObjectFields are the field selector labels of obj.
func (r *Resource) ObjectFields(obj runtime.Object) (fields.Set, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	set := fields.Set{"metadata.name": accessor.GetName()}
	if r.Namespaced {
		set["metadata.namespace"] = accessor.GetNamespace()
	}
	if r.Fields != nil {
		for k, v := range r.Fields(obj) {
			set[k] = v
		}
	}
	return set, nil
}

// FieldLabels are the field selector labels the resource supports,
// computed once by New.
func (r *Resource) FieldLabels() map[string]bool { return r.supportedFields }

func (r *Resource) computeFieldLabels() {
	set, _ := r.ObjectFields(r.NewObject())
	r.supportedFields = map[string]bool{}
	for k := range set {
		r.supportedFields[k] = true
	}
}

// View serves a resource as another kind that is stored as the
// objects of stored, converting on every read and write, as kube-apiserver
// serves events.k8s.io/v1 Events from core/v1 Event storage.
type View struct {
	Stored     *Resource
	ToStored   func(runtime.Object) runtime.Object
	FromStored func(runtime.Object) runtime.Object
}
