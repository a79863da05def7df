package controllers

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/trustplane/trustplane/rbac"
)

// newCSRSigningController signs the approved node client CSRs with the
// cluster CA, as kube's csrsigning controller does for the signer
// kubernetes.io/kube-apiserver-client-kubelet: for the configured
// duration, or the shorter one the request asks for (expirationSeconds),
// and never beyond the CA's own expiry. It checks the request again
// before it signs (an approval by someone else is not taken on trust):
// one that is not a node's client request, or that the CA refuses, gets
// the Failed condition and no certificate.
func newCSRSigningController(c *controllerContext) (runner, error) {
	if c.signer == nil {
		return nil, fmt.Errorf("csrsigning: no cluster signing CA (--cluster-signing-cert-file, --cluster-signing-key-file)")
	}
	csrs := c.informers.Certificates().V1().CertificateSigningRequests()
	lister := csrs.Lister()
	w := newWorker("csrsigning", c.logger, func(ctx context.Context, name string) error {
		csr, err := lister.Get(name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if csr.Spec.SignerName != rbac.KubeletClientSigner || !signable(csr) {
			return nil
		}
		next := csr.DeepCopy()
		cert, signErr := c.signer.sign(csr)
		if signErr != nil {
			next.Status.Conditions = append(next.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue,
				Reason: "SignerValidationFailure", Message: signErr.Error(), LastUpdateTime: metav1.Now(),
			})
		} else {
			next.Status.Certificate = cert
		}
		_, err = c.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		switch {
		case err != nil:
		case signErr != nil:
			c.logger.Warn("csrsigning: refused to sign", "csr", name, "requester", csr.Spec.Username, "err", signErr)
		default:
			c.logger.Info("csrsigning: signed", "csr", name, "requester", csr.Spec.Username)
		}
		return err
	})
	if _, err := csrs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.enqueue,
		UpdateFunc: func(_, obj any) { w.enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	return func(ctx context.Context, workers int) { w.run(ctx, workers, csrs.Informer().HasSynced) }, nil
}

// signable reports whether a request is approved, not denied or failed,
// and has no certificate yet.
func signable(csr *certificatesv1.CertificateSigningRequest) bool {
	if len(csr.Status.Certificate) > 0 {
		return false
	}
	approved := false
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false
		}
	}
	return approved
}

// clientCA signs node client certificates: the cluster CA's key, read
// from its file, and how long what it signs lives.
type clientCA interface {
	SignClientCSR(csrPEM []byte, usages []string, notAfter time.Time) ([]byte, error)
}

// csrSigner is the signer of node client certificates.
type csrSigner struct {
	ca       clientCA
	duration time.Duration
}

// sign issues the certificate a node client request asks for, after
// checking it again.
func (s *csrSigner) sign(csr *certificatesv1.CertificateSigningRequest) ([]byte, error) {
	if _, err := nodeClientRequest(csr); err != nil {
		return nil, err
	}
	d := s.duration
	if e := csr.Spec.ExpirationSeconds; e != nil && time.Duration(*e)*time.Second < d {
		d = time.Duration(*e) * time.Second
	}
	usages := make([]string, len(csr.Spec.Usages))
	for i, u := range csr.Spec.Usages {
		usages[i] = string(u)
	}
	return s.ca.SignClientCSR(csr.Spec.Request, usages, time.Now().Add(d))
}
