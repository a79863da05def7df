package admission

import (
	"context"
	"errors"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// PolicyLabel marks a ConfigMap of kube-system whose .rego keys are
// admission policies.
const PolicyLabel = "trustplane.io/policy"

var configMaps = schema.GroupResource{Resource: "configmaps"}

// PolicyConfigMaps keeps the admission policies that ConfigMaps carry to
// the cluster's administrators: in kube-system, only a member of the
// admins group may create, change or delete a ConfigMap labelled
// trustplane.io/policy, or add or remove the label. Others who may write
// ConfigMaps there (the controller manager, for one) cannot load, change
// or remove a policy, which decides what every request may do.
type PolicyConfigMaps struct {
	*admission.Handler
	admins string
}

var _ admission.ValidationInterface = (*PolicyConfigMaps)(nil)

// NewPolicyConfigMaps returns the plugin; admins is the group that may
// write policy ConfigMaps.
func NewPolicyConfigMaps(admins string) (*PolicyConfigMaps, error) {
	if admins == "" {
		return nil, errors.New("policy configmaps admission: the admins group is required")
	}
	return &PolicyConfigMaps{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete), admins: admins}, nil
}

// Validate implements admission.ValidationInterface.
func (p *PolicyConfigMaps) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != configMaps || a.GetNamespace() != metav1.NamespaceSystem {
		return nil
	}
	if !carriesPolicy(a.GetObject()) && !carriesPolicy(a.GetOldObject()) {
		return nil
	}
	if u := a.GetUserInfo(); u != nil && slices.Contains(u.GetGroups(), p.admins) {
		return nil
	}
	return admission.NewForbidden(a, errors.New("only cluster administrators may write the ConfigMaps that carry admission policies"))
}

func carriesPolicy(obj any) bool {
	m, ok := obj.(metav1.Object)
	if !ok || m == nil {
		return false
	}
	_, labelled := m.GetLabels()[PolicyLabel]
	return labelled
}

// IsPolicyConfigMapDeletion reports whether a is the deletion of a policy
// ConfigMap: the way out of a policy that refuses everything, which the
// policies themselves must not judge.
func IsPolicyConfigMapDeletion(a admission.Attributes) bool {
	return a.GetOperation() == admission.Delete && a.GetResource().GroupResource() == configMaps &&
		a.GetNamespace() == metav1.NamespaceSystem && carriesPolicy(a.GetOldObject())
}
