package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"

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
//     mount another controller's token in a pod of its own.
type ControllerIdentities struct {
	*admission.Handler
	garbageCollector string
	namespace        string
	serviceAccounts  []string
}

var _ admission.ValidationInterface = (*ControllerIdentities)(nil)

// NewControllerIdentities returns the plugin: garbageCollector is the
// garbage collector's user name, serviceAccounts the names of the
// controllers' ServiceAccounts in namespace.
func NewControllerIdentities(garbageCollector, namespace string, serviceAccounts []string) (*ControllerIdentities, error) {
	if garbageCollector == "" || namespace == "" || len(serviceAccounts) == 0 {
		return nil, errors.New("controller identities admission: the garbage collector's user and the controllers' ServiceAccounts are required")
	}
	return &ControllerIdentities{
		Handler:          admission.NewHandler(admission.Create, admission.Update),
		garbageCollector: garbageCollector,
		namespace:        namespace,
		serviceAccounts:  slices.Clone(serviceAccounts),
	}, nil
}

// Validate implements admission.ValidationInterface.
func (p *ControllerIdentities) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetOperation() == admission.Create && a.GetResource().GroupResource() == podsResource && a.GetSubresource() == "" && a.GetNamespace() == p.namespace {
		if pod, ok := a.GetObject().(*corev1.Pod); ok && slices.Contains(p.serviceAccounts, pod.Spec.ServiceAccountName) {
			return admission.NewForbidden(a, fmt.Errorf("no pod may run as the controller ServiceAccount %s/%s", p.namespace, pod.Spec.ServiceAccountName))
		}
	}
	if u := a.GetUserInfo(); u == nil || u.GetName() != p.garbageCollector || a.GetOperation() != admission.Update {
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
