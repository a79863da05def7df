package registry

import (
	discoveryv1 "k8s.io/api/discovery/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/trustplane/trustplane/apiserver/kinds"
)

// discoveryResources are the kinds of discovery.k8s.io/v1.
func discoveryResources() []*Resource {
	return []*Resource{
		{
			GVR: discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), Kind: "EndpointSlice", Singular: "endpointslice",
			Namespaced:    true,
			NewObject:     func() runtime.Object { return &discoveryv1.EndpointSlice{} },
			NewList:       func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
			NameValidator: apimachineryvalidation.NameIsDNSSubdomain,
			Defaults:      func(obj runtime.Object) { kinds.DefaultEndpointSlice(obj.(*discoveryv1.EndpointSlice)) },
			Validate:      typed(kinds.ValidateEndpointSlice),
		},
	}
}
