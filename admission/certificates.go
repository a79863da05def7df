package admission

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Certificates are kube's three admission checks of CertificateSigningRequests,
// in one plugin because they judge the same writes by the same signer:
//
//   - CertificateApproval: a write of the approval subresource needs the
//     approve verb on the resource signers of certificates.k8s.io, named
//     the CSR's signerName or "<domain>/*";
//   - CertificateSigning: a status write that sets or changes the
//     certificate needs the sign verb there, named the same way;
//   - CertificateSubjectRestriction: no CSR may ask for a subject in the
//     group system:masters, whatever its signer (kube refuses it for the
//     kube-apiserver-client signer only; trustplane grants nothing to that
//     group, but a certificate naming it would be trusted by any kube
//     cluster that shares the CA).
type Certificates struct {
	*admission.Handler
	authz authorizer.Authorizer
}

var _ admission.ValidationInterface = (*Certificates)(nil)

// NewCertificates returns the plugin; authz may not be nil.
func NewCertificates(authz authorizer.Authorizer) (*Certificates, error) {
	if authz == nil {
		return nil, errors.New("certificates admission: authorizer is required")
	}
	return &Certificates{Handler: admission.NewHandler(admission.Create, admission.Update), authz: authz}, nil
}

// Validate implements admission.ValidationInterface.
func (p *Certificates) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != certificatesv1.Resource("certificatesigningrequests") {
		return nil
	}
	csr, ok := a.GetObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return nil
	}
	switch {
	case a.GetOperation() == admission.Create && a.GetSubresource() == "":
		return p.restrictSubject(a, csr)
	case a.GetOperation() == admission.Update && a.GetSubresource() == "approval":
		if !p.authorizedFor(ctx, a.GetUserInfo(), "approve", csr.Spec.SignerName) {
			return admission.NewForbidden(a, fmt.Errorf("user not permitted to approve requests with signerName %q", csr.Spec.SignerName))
		}
	case a.GetOperation() == admission.Update && a.GetSubresource() == "status":
		old, ok := a.GetOldObject().(*certificatesv1.CertificateSigningRequest)
		if !ok {
			return admission.NewForbidden(a, errors.New("the stored request is not a CertificateSigningRequest"))
		}
		if bytes.Equal(old.Status.Certificate, csr.Status.Certificate) {
			return nil
		}
		if !p.authorizedFor(ctx, a.GetUserInfo(), "sign", csr.Spec.SignerName) {
			return admission.NewForbidden(a, fmt.Errorf("user not permitted to sign requests with signerName %q", csr.Spec.SignerName))
		}
	}
	return nil
}

// restrictSubject refuses a request for a certificate in system:masters.
func (p *Certificates) restrictSubject(a admission.Attributes, csr *certificatesv1.CertificateSigningRequest) error {
	b, _ := pem.Decode(csr.Spec.Request)
	if b == nil {
		// Validation, before this plugin, has refused it already.
		return admission.NewForbidden(a, errors.New("the request is not PEM"))
	}
	req, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		return admission.NewForbidden(a, errors.New("the request does not parse"))
	}
	if slices.Contains(req.Subject.Organization, user.SystemPrivilegedGroup) {
		return admission.NewForbidden(a, fmt.Errorf("use of %s signer with %s group is not allowed", csr.Spec.SignerName, user.SystemPrivilegedGroup))
	}
	return nil
}

// authorizedFor reports whether u may verb the signer signerName, by its
// name or by its domain's wildcard "<domain>/*", as kube's plugins ask.
func (p *Certificates) authorizedFor(ctx context.Context, u user.Info, verb, signerName string) bool {
	names := []string{signerName}
	if domain, _, ok := strings.Cut(signerName, "/"); ok {
		names = append(names, domain+"/*")
	}
	for _, name := range names {
		d, _, _ := p.authz.Authorize(ctx, authorizer.AttributesRecord{
			User: u, Verb: verb, APIGroup: certificatesv1.GroupName, Resource: "signers", Name: name, ResourceRequest: true,
		})
		if d == authorizer.DecisionAllow {
			return true
		}
	}
	return false
}
