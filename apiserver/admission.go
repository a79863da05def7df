package apiserver

import (
	"errors"

	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/trustplane/trustplane/admission"
	"github.com/trustplane/trustplane/rbac"
)

// admissionChains are the mutating and the validating admission chains,
// each in kube-apiserver's plugin order. A plugin is in the chain of each
// interface it implements: of the built-in plugins, ServiceAccount
// mutates (and validates), DefaultTolerationSeconds (tolerations, built
// from the server's flags) only mutates, the others only validate; extra
// plugins (the Rego stage, which mutates and validates, as kube's
// admission webhooks) go last.
func admissionChains(reader cacheReader, authz authorizer.Authorizer, rbacAuthz *rbac.Authorizer, tolerations *admission.DefaultTolerationSeconds, apiAudiences []string, extra []k8sadmission.Interface) (k8sadmission.MutationInterface, k8sadmission.ValidationInterface, error) {
	lifecycle, err := admission.NewNamespaceLifecycle(reader)
	if err != nil {
		return nil, nil, err
	}
	// The namespace controller's deletes and namespace writes, held to
	// namespaces being deleted: not a kube plugin (kube's controller
	// holds "*"), it goes beside NamespaceLifecycle, whose reads it
	// shares.
	namespaceController, err := admission.NewNamespaceControllerRestriction(rbac.ControllerUser(rbac.NamespaceControllerServiceAccount), reader)
	if err != nil {
		return nil, nil, err
	}
	policyConfigMaps, err := admission.NewPolicyConfigMaps(rbac.ClusterAdminsGroup)
	if err != nil {
		return nil, nil, err
	}
	serviceAccount, err := admission.NewServiceAccount(reader)
	if err != nil {
		return nil, nil, err
	}
	nodeRestriction, err := admission.NewNodeRestriction(reader)
	if err != nil {
		return nil, nil, err
	}
	escalation, err := admission.NewRBACEscalation(authz, rbacAuthz)
	if err != nil {
		return nil, nil, err
	}
	certificates, err := admission.NewCertificates(authz)
	if err != nil {
		return nil, nil, err
	}
	var controllerAccounts []string
	for _, sa := range rbac.ControllerServiceAccounts() {
		controllerAccounts = append(controllerAccounts, sa.Name)
	}
	controllerIdentities, err := admission.NewControllerIdentities(admission.ControllerIdentitiesConfig{
		GarbageCollector:  rbac.ControllerUser(rbac.GarbageCollectorServiceAccount),
		ControllerManager: rbac.ControllerManagerUser,
		LeaseHolder:       rbac.ControllerUser(rbac.LeaderElectionServiceAccount),
		Lease:             rbac.ControllerManagerLease,
		Namespace:         rbac.ControllersNamespace,
		ServiceAccounts:   controllerAccounts,
		APIAudiences:      apiAudiences,
	})
	if err != nil {
		return nil, nil, err
	}
	if tolerations == nil {
		return nil, nil, errors.New("admission: the DefaultTolerationSeconds plugin is nil")
	}
	// DefaultTolerationSeconds, then CertificateApproval,
	// CertificateSigning and CertificateSubjectRestriction come after
	// NodeRestriction in kube's order, as here.
	// NamespaceControllerRestriction and ControllerIdentities are
	// trustplane's: its controllers each have an identity of their own,
	// which kube's do not by default.
	plugins := append([]k8sadmission.Interface{lifecycle, namespaceController, policyConfigMaps, serviceAccount, nodeRestriction, tolerations, certificates, escalation, controllerIdentities}, extra...)
	var mutating, validating []k8sadmission.Interface
	for _, p := range plugins {
		if _, ok := p.(k8sadmission.MutationInterface); ok {
			mutating = append(mutating, p)
		}
		if _, ok := p.(k8sadmission.ValidationInterface); ok {
			validating = append(validating, p)
		}
	}
	return k8sadmission.NewChainHandler(mutating...), k8sadmission.NewChainHandler(validating...), nil
}
