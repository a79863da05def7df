package registry

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/trustplane/trustplane/apiserver/kinds"
)

// certificatesResources are the kinds of certificates.k8s.io/v1.
func certificatesResources() []*Resource {
	csr := certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest")
	return []*Resource{
		{
			GVR: certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), Kind: "CertificateSigningRequest", Singular: "certificatesigningrequest",
			ShortNames:    []string{"csr"},
			NewObject:     func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
			NewList:       func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
			NameValidator: apimachineryvalidation.NameIsDNSSubdomain,
			PrepareCreate: func(obj runtime.Object) {
				obj.(*certificatesv1.CertificateSigningRequest).Status = certificatesv1.CertificateSigningRequestStatus{}
			},
			SetRequester:     setCSRRequester,
			Validate:         typed(kinds.ValidateCertificateSigningRequest),
			ValidateStatus:   typed(validateCSRStatus),
			ValidateApproval: typed(kinds.ValidateCertificateSigningRequestStatus),
			Fields: func(obj runtime.Object) fields.Set {
				return fields.Set{"spec.signerName": obj.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
			},
			Subresources: []Subresource{
				{Name: "status", Kind: csr, Verbs: statusVerbs},
				// Only a PUT of the approval: it is what kubectl
				// certificate approve and client-go's UpdateApproval send.
				{Name: "approval", Kind: csr, Verbs: metav1.Verbs{"get", "update"}},
			},
		},
	}
}

// setCSRRequester records who asked for a certificate, as kube's strategy
// does: whatever the client wrote there is replaced, so that an approver
// can trust spec.username and spec.groups.
func setCSRRequester(obj runtime.Object, u user.Info) {
	spec := &obj.(*certificatesv1.CertificateSigningRequest).Spec
	spec.Username, spec.UID, spec.Groups, spec.Extra = "", "", nil, nil
	if u == nil {
		return
	}
	spec.Username = u.GetName()
	spec.UID = u.GetUID()
	spec.Groups = append([]string(nil), u.GetGroups()...)
	if extra := u.GetExtra(); len(extra) > 0 {
		spec.Extra = map[string]certificatesv1.ExtraValue{}
		for k, v := range extra {
			spec.Extra[k] = append(certificatesv1.ExtraValue(nil), v...)
		}
	}
}

// validateCSRStatus validates a write of the status subresource, which
// may not approve or deny: that is the approval subresource's, authorized
// by the approve verb on the signer.
func validateCSRStatus(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	errs := kinds.ValidateCertificateSigningRequestStatus(csr, old)
	if !kinds.ApprovalUnchanged(csr, old) {
		errs = append(errs, field.Forbidden(field.NewPath("status", "conditions"), "the Approved and Denied conditions may only be changed through the approval subresource"))
	}
	return errs
}
