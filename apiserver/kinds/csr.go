package kinds

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"reflect"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// csrUsages are the key usages a CertificateSigningRequest may ask for,
// kube's list.
var csrUsages = sets.New(
	certificatesv1.UsageSigning, certificatesv1.UsageDigitalSignature, certificatesv1.UsageContentCommitment,
	certificatesv1.UsageKeyEncipherment, certificatesv1.UsageKeyAgreement, certificatesv1.UsageDataEncipherment,
	certificatesv1.UsageCertSign, certificatesv1.UsageCRLSign, certificatesv1.UsageEncipherOnly,
	certificatesv1.UsageDecipherOnly, certificatesv1.UsageAny, certificatesv1.UsageServerAuth,
	certificatesv1.UsageClientAuth, certificatesv1.UsageCodeSigning, certificatesv1.UsageEmailProtection,
	certificatesv1.UsageSMIME, certificatesv1.UsageIPsecEndSystem, certificatesv1.UsageIPsecTunnel,
	certificatesv1.UsageIPsecUser, certificatesv1.UsageTimestamping, certificatesv1.UsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC, certificatesv1.UsageNetscapeSGC,
)

// legacyUnknownSignerName is the signer certificates/v1beta1 gave a CSR
// that named none; certificates/v1, the only version served, refuses it
// on create, as kube does.
const legacyUnknownSignerName = "kubernetes.io/legacy-unknown"

// ValidateCertificateSigningRequest validates a CSR on create (old == nil)
// or update, as kube's certificates validation does: the request is one
// PEM CERTIFICATE REQUEST whose signature verifies, the signer a qualified
// name domain/path and not the legacy one, the usages known and each
// once, expirationSeconds at least ten minutes. On update the spec is immutable; the status is the
// subresources' (see ValidateCertificateSigningRequestStatus).
func ValidateCertificateSigningRequest(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	spec := field.NewPath("spec")
	if old != nil {
		if !apiequality.Semantic.DeepEqual(csr.Spec, old.Spec) {
			return field.ErrorList{field.Invalid(spec, "", "field is immutable")}
		}
		return nil
	}
	var errs field.ErrorList
	if _, err := ParseCSR(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), "", err.Error()))
	}
	if csr.Spec.SignerName == legacyUnknownSignerName {
		errs = append(errs, field.Invalid(spec.Child("signerName"), csr.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, ValidateSignerName(spec.Child("signerName"), csr.Spec.SignerName)...)
	}
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), "usages must be provided"))
	}
	seen := sets.New[certificatesv1.KeyUsage]()
	for i, u := range csr.Spec.Usages {
		p := spec.Child("usages").Index(i)
		switch {
		case !csrUsages.Has(u):
			errs = append(errs, field.NotSupported(p, u, sets.List(csrUsages)))
		case seen.Has(u):
			errs = append(errs, field.Duplicate(p, u))
		}
		seen.Insert(u)
	}
	if s := csr.Spec.ExpirationSeconds; s != nil && *s < 600 {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *s, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	return errs
}

// ParseCSR parses a CSR's spec.request: one PEM CERTIFICATE REQUEST block
// and nothing else, whose self-signature verifies.
func ParseCSR(request []byte) (*x509.CertificateRequest, error) {
	b, rest := pem.Decode(request)
	if b == nil || b.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("PEM block type must be CERTIFICATE REQUEST")
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("must hold one PEM block only")
	}
	req, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("does not parse: %v", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("signature does not verify: %v", err)
	}
	return req, nil
}

// ValidateSignerName checks a signerName: a fully qualified domain, a
// slash, and a path of DNS-1123 subdomain form, as kube requires.
func ValidateSignerName(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	domain, path, ok := strings.Cut(name, "/")
	if !ok || path == "" {
		return field.ErrorList{field.Invalid(p, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	if es := validation.IsFullyQualifiedDomainName(p, domain); len(es) > 0 {
		errs = append(errs, field.Invalid(p, name, "the domain must be a fully qualified domain name"))
	}
	for _, msg := range validation.IsDNS1123Subdomain(path) {
		errs = append(errs, field.Invalid(p, name, "the path after the domain: "+msg))
	}
	return errs
}

// ValidateCertificateSigningRequestStatus validates a write of a CSR's
// status, through status or approval: conditions of a known status, each of
// Approved, Denied and Failed at most once, never both Approved and Denied;
// an Approved or Denied condition, once there, stays; a certificate only on
// an approved CSR, of PEM CERTIFICATE blocks only, and never changed once
// issued. Which of the conditions a subresource may change is the
// caller's: status may not touch Approved or Denied (approval, through
// its own subresource, is authorized by the approve verb).
func ValidateCertificateSigningRequestStatus(csr, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
	p := field.NewPath("status")
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	for i, c := range csr.Status.Conditions {
		cp := p.Child("conditions").Index(i)
		if c.Type == "" {
			errs = append(errs, field.Required(cp.Child("type"), ""))
		}
		switch c.Status {
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		case "":
			errs = append(errs, field.Required(cp.Child("status"), ""))
		default:
			errs = append(errs, field.NotSupported(cp.Child("status"), c.Status, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown}))
		}
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied:
			if c.Status != corev1.ConditionTrue {
				errs = append(errs, field.NotSupported(cp.Child("status"), c.Status, []corev1.ConditionStatus{corev1.ConditionTrue}))
			}
			fallthrough
		case certificatesv1.CertificateFailed:
			if seen[c.Type] {
				errs = append(errs, field.Duplicate(cp.Child("type"), c.Type))
			}
		}
		seen[c.Type] = true
	}
	if seen[certificatesv1.CertificateApproved] && seen[certificatesv1.CertificateDenied] {
		errs = append(errs, field.Invalid(p.Child("conditions"), certificatesv1.CertificateDenied, "Approved and Denied conditions are mutually exclusive"))
	}
	if old != nil {
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			if hasCondition(old, t) && !seen[t] {
				errs = append(errs, field.Forbidden(p.Child("conditions"), fmt.Sprintf("updates may not remove a condition of type %q", t)))
			}
		}
		if len(old.Status.Certificate) > 0 && !bytes.Equal(old.Status.Certificate, csr.Status.Certificate) {
			errs = append(errs, field.Forbidden(p.Child("certificate"), "updates may not modify existing certificate content"))
		}
	}
	if cert := csr.Status.Certificate; len(cert) > 0 {
		if !seen[certificatesv1.CertificateApproved] || seen[certificatesv1.CertificateFailed] {
			errs = append(errs, field.Forbidden(p.Child("certificate"), "may only be set on an approved request that has not failed"))
		}
		if err := validateCertificatePEM(cert); err != nil {
			errs = append(errs, field.Invalid(p.Child("certificate"), "<certificate data>", err.Error()))
		}
	}
	return errs
}

// ApprovalUnchanged reports whether a status write leaves the Approved and
// Denied conditions as they were, which a write of the status, rather
// than of the approval, must.
func ApprovalUnchanged(csr, old *certificatesv1.CertificateSigningRequest) bool {
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
		if !reflect.DeepEqual(condition(csr, t), condition(old, t)) {
			return false
		}
	}
	return true
}

func condition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequestCondition {
	for i := range csr.Status.Conditions {
		if csr.Status.Conditions[i].Type == t {
			return &csr.Status.Conditions[i]
		}
	}
	return nil
}

func hasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	return condition(csr, t) != nil
}

// validateCertificatePEM: PEM CERTIFICATE blocks, each a certificate, and
// nothing else.
func validateCertificatePEM(data []byte) error {
	n := 0
	for rest := data; len(bytes.TrimSpace(rest)) > 0; n++ {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil || b.Type != "CERTIFICATE" {
			return fmt.Errorf("must hold PEM CERTIFICATE blocks only")
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("certificate %d does not parse: %v", n, err)
		}
	}
	if n == 0 {
		return fmt.Errorf("holds no certificate")
	}
	return nil
}
