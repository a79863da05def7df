package registry

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/trustplane/trustplane/apiserver/kinds"
)

// coordinationResources are the kinds of coordination.k8s.io/v1.
func coordinationResources() []*Resource {
	return []*Resource{
		{
			GVR: coordinationv1.SchemeGroupVersion.WithResource("leases"), Kind: "Lease", Singular: "lease",
			Namespaced:    true,
			NewObject:     func() runtime.Object { return &coordinationv1.Lease{} },
			NewList:       func() runtime.Object { return &coordinationv1.LeaseList{} },
			NameValidator: apimachineryvalidation.NameIsDNSSubdomain,
			Validate:      typed(kinds.ValidateLease),
		},
	}
}
