package registry

import "k8s.io/apimachinery/pkg/runtime/schema"

// ForKind finds the served resource whose objects are of kind gvk, the
// first in discovery order. A subresource's kind (Binding, Scale) is not
// one: it is served below the resource that owns it.
func (r *Registry) ForKind(gvk schema.GroupVersionKind) (*Resource, bool) {
	for _, res := range r.all {
		if res.GVK() == gvk {
			return res, true
		}
	}
	return nil, false
}
