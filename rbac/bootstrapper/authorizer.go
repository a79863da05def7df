// Package bootstrapper authorizes what RBAC cannot say of a bootstrap
// token: that it may read the CertificateSigningRequests it created, and
// no one else's.
//
// A bootstrap token's user (system:bootstrap:<id>, in system:bootstrappers)
// creates a CSR and then waits for it, by get or by a list or watch of its
// name (fieldSelector metadata.name=<name>). RBAC grants by resource and
// name, never by requester, so kube's system:node-bootstrapper lets a
// token read every CSR. This authorizer allows those reads of a CSR whose
// spec.username, which the API server sets, is the token's user; RBAC
// grants the token only create.
package bootstrapper

import (
	"context"
	"errors"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// CSRGetter reads a CertificateSigningRequest live (the API server passes
// its watch cache, which falls back to etcd); a missing one is (nil, nil).
// Implementations must be safe for concurrent use.
type CSRGetter interface {
	CertificateSigningRequest(ctx context.Context, name string) (*certificatesv1.CertificateSigningRequest, error)
}

// Kube's names of a bootstrap token's user and group.
const (
	userPrefix = "system:bootstrap:"
	group      = "system:bootstrappers"
)

// Authorizer allows a bootstrap token's reads of its own CSRs. It never
// denies: everything else gets authorizer.DecisionNoOpinion, for RBAC to
// decide. It is safe for concurrent use when its CSRGetter is.
type Authorizer struct {
	csrs CSRGetter
}

var _ authorizer.Authorizer = (*Authorizer)(nil)

// New returns the authorizer; a nil csrs is an error.
func New(csrs CSRGetter) (*Authorizer, error) {
	if csrs == nil {
		return nil, errors.New("bootstrapper authorizer: nil CSR getter")
	}
	return &Authorizer{csrs: csrs}, nil
}

// Authorize implements authorizer.Authorizer.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.GetUser()
	if u == nil || !strings.HasPrefix(u.GetName(), userPrefix) || !slices.Contains(u.GetGroups(), group) {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if !attrs.IsResourceRequest() || attrs.GetAPIGroup() != certificatesv1.GroupName ||
		attrs.GetResource() != "certificatesigningrequests" || attrs.GetSubresource() != "" {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if !slices.Contains([]string{"get", "list", "watch"}, attrs.GetVerb()) {
		return authorizer.DecisionNoOpinion, "", nil
	}
	// A list or watch names one CSR only by its field selector; one that
	// names none would read everyone's.
	if attrs.GetName() == "" {
		return authorizer.DecisionNoOpinion, "a bootstrap token may read its own CSRs by name only", nil
	}
	csr, err := a.csrs.CertificateSigningRequest(ctx, attrs.GetName())
	if err != nil {
		// The union of authorizers reports it, and RBAC decides.
		return authorizer.DecisionNoOpinion, "", err
	}
	if csr == nil || csr.Spec.Username != u.GetName() {
		return authorizer.DecisionNoOpinion, "a bootstrap token may read only the CSRs it created", nil
	}
	return authorizer.DecisionAllow, "a bootstrap token reads the CSR it created", nil
}

// ConditionsAwareAuthorize implements authorizer.Authorizer. This
// authorizer has no conditions: the decision is exactly Authorize's.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions implements authorizer.Authorizer. It never returns a
// conditional decision, so it has none to evaluate and denies.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
