package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

// ControllerIdentities keeps the controllers' identities to their jobs
// where RBAC cannot say it:
//   - the garbage collector, which must patch every kind that can own or
//     be owned, may change only ownerReferences and finalizers: not a
//     workload's template, a Lease's holder, or a ClusterRole's
//     aggregation labels (which would pour its rules into view, edit and
//     admin);
//   - no pod may run as one of the controllers' ServiceAccounts, whose
//     tokens only the controller manager obtains: a controller that may
//     create pods (ReplicaSet, DaemonSet, StatefulSet) could otherwise
//     mount another controller's token in a pod of its own;
//   - the controller manager's own identity obtains those tokens for the
//     API server only: for its audiences, bound to no object, for at
//     most MaxControllerTokenSeconds. It could otherwise mint tokens for
//     another service, or lasting a day;
//   - the account that holds the controller manager's Lease creates that
//     Lease only: RBAC cannot name what a create makes, and it could
//     otherwise create the scheduler's while there is none.
type ControllerIdentities struct {
	*admission.Handler
	garbageCollector  string
	controllerManager string
	leaseHolder       string
	lease             string
	namespace         string
	serviceAccounts   []string
	apiAudiences      []string
}

// MaxControllerTokenSeconds bounds the lifetime of a token the controller
// manager obtains for a controller: the hour it asks for.
const MaxControllerTokenSeconds = 3600

// ControllerIdentitiesConfig names the identities the plugin keeps.
type ControllerIdentitiesConfig struct {
	// GarbageCollector and ControllerManager are user names.
	GarbageCollector, ControllerManager string
	// LeaseHolder is the user that holds Lease, the controller
	// manager's, in Namespace.
	LeaseHolder, Lease string
	// Namespace holds the controllers' ServiceAccounts, named
	// ServiceAccounts.
	Namespace       string
	ServiceAccounts []string
	// APIAudiences are the API server's token audiences.
	APIAudiences []string
}

var _ admission.ValidationInterface = (*ControllerIdentities)(nil)

// NewControllerIdentities returns the plugin.
func NewControllerIdentities(c ControllerIdentitiesConfig) (*ControllerIdentities, error) {
	if c.GarbageCollector == "" || c.ControllerManager == "" || c.LeaseHolder == "" || c.Lease == "" || c.Namespace == "" || len(c.ServiceAccounts) == 0 || len(c.APIAudiences) == 0 {
		return nil, errors.New("controller identities admission: the garbage collector's, the controller manager's and its Lease holder's users, the Lease, the controllers' ServiceAccounts and the API audiences are required")
	}
	return &ControllerIdentities{
		Handler:           admission.NewHandler(admission.Create, admission.Update),
		garbageCollector:  c.GarbageCollector,
		controllerManager: c.ControllerManager,
		leaseHolder:       c.LeaseHolder,
		lease:             c.Lease,
		namespace:         c.Namespace,
		serviceAccounts:   slices.Clone(c.ServiceAccounts),
		apiAudiences:      slices.Sorted(slices.Values(c.APIAudiences)),
	}, nil
}

// Validate implements admission.ValidationInterface.
func (p *ControllerIdentities) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetOperation() == admission.Create && a.GetResource().GroupResource() == podsResource && a.GetSubresource() == "" && a.GetNamespace() == p.namespace {
		if pod, ok := a.GetObject().(*corev1.Pod); ok && slices.Contains(p.serviceAccounts, pod.Spec.ServiceAccountName) {
			return admission.NewForbidden(a, fmt.Errorf("no pod may run as the controller ServiceAccount %s/%s", p.namespace, pod.Spec.ServiceAccountName))
		}
	}
	u := a.GetUserInfo()
	if u == nil {
		return nil
	}
	if u.GetName() == p.leaseHolder && a.GetOperation() == admission.Create && a.GetResource().GroupResource() == leasesResource &&
		(a.GetNamespace() != p.namespace || a.GetName() != p.lease) {
		return admission.NewForbidden(a, fmt.Errorf("%s may create only the Lease %s/%s", p.leaseHolder, p.namespace, p.lease))
	}
	if u.GetName() == p.controllerManager && a.GetOperation() == admission.Create &&
		a.GetResource().GroupResource() == serviceAccountsResource && a.GetSubresource() == "token" {
		return p.controllerToken(a)
	}
	if u.GetName() != p.garbageCollector || a.GetOperation() != admission.Update {
		return nil
	}
	if a.GetSubresource() != "" {
		return admission.NewForbidden(a, fmt.Errorf("the garbage collector may not write %s/%s", a.GetResource().Resource, a.GetSubresource()))
	}
	same, err := sameButOwnership(a.GetOldObject(), a.GetObject())
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("the garbage collector's write could not be checked: %w", err))
	}
	if !same {
		return admission.NewForbidden(a, errors.New("the garbage collector may change only ownerReferences and finalizers"))
	}
	return nil
}

// controllerToken refuses a TokenRequest of the controller manager that
// asks for more than the API server's audiences, for an hour at most,
// bound to no object. Its defaults are set before admission.
func (p *ControllerIdentities) controllerToken(a admission.Attributes) error {
	tr, ok := a.GetObject().(*authenticationv1.TokenRequest)
	if !ok {
		return unexpectedObject(a, a.GetObject())
	}
	switch {
	case tr.Spec.BoundObjectRef != nil:
		return admission.NewForbidden(a, errors.New("the controller manager may not bind a controller's token to an object"))
	case tr.Spec.ExpirationSeconds == nil || *tr.Spec.ExpirationSeconds > MaxControllerTokenSeconds:
		return admission.NewForbidden(a, fmt.Errorf("the controller manager may obtain controller tokens for %d seconds at most", MaxControllerTokenSeconds))
	case !slices.Equal(slices.Sorted(slices.Values(tr.Spec.Audiences)), p.apiAudiences):
		return admission.NewForbidden(a, errors.New("the controller manager may obtain controller tokens for the API server's audiences only"))
	}
	return nil
}

// sameButOwnership reports whether old and updated differ at most in
// their ownerReferences and finalizers (and what every write changes:
// resourceVersion and managed fields).
func sameButOwnership(old, updated runtime.Object) (bool, error) {
	if old == nil || updated == nil {
		return false, errors.New("no object to compare")
	}
	var maps [2]map[string]any
	for i, obj := range []runtime.Object{old, updated} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return false, err
		}
		for _, f := range []string{"ownerReferences", "finalizers", "resourceVersion", "managedFields"} {
			unstructured.RemoveNestedField(m, "metadata", f)
		}
		maps[i] = m
	}
	return equality.Semantic.DeepEqual(maps[0], maps[1]), nil
}
