package controllers

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"

	"github.com/trustplane/trustplane/pki"
	"github.com/trustplane/trustplane/rbac"
)

// Kube's names for a node's client certificate and the groups it
// authenticates with.
const (
	nodeUserPrefix    = "system:node:"
	nodesGroup        = "system:nodes"
	bootstrapUserPref = "system:bootstrap:"
)

// newCSRApprovingController approves the node client CSRs (signer
// kubernetes.io/kube-apiserver-client-kubelet) that kube's rules allow and
// denies, with the reason, the others of that signer; other signers'
// requests are not its to judge. A request is approved when it asks for
// exactly a node's client certificate (nodeClientRequest) and its
// requester may have it: a bootstrap token's user when RBAC lets it create
// certificatesigningrequests/nodeclient, or the node itself, renewing, when
// RBAC lets it create certificatesigningrequests/selfnodeclient. RBAC is
// asked through a SubjectAccessReview of the requester the API server
// recorded on the request, so that who may have a node certificate is
// policy, not code.
func newCSRApprovingController(c *controllerContext) (runner, error) {
	csrs := c.informers.Certificates().V1().CertificateSigningRequests()
	lister := csrs.Lister()
	w := newWorker("csrapproving", c.logger, func(ctx context.Context, name string) error {
		csr, err := lister.Get(name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if csr.Spec.SignerName != rbac.KubeletClientSigner || decided(csr) {
			return nil
		}
		reason, message, err := judgeNodeClient(ctx, c, csr)
		if err != nil {
			return err
		}
		next := csr.DeepCopy()
		cond := certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
			Reason: reason, Message: message, LastUpdateTime: metav1.Now(),
		}
		if reason != reasonAutoApproved {
			cond.Type = certificatesv1.CertificateDenied
		}
		next.Status.Conditions = append(next.Status.Conditions, cond)
		_, err = c.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, next, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			// Why a node could not join is the first thing its operator
			// asks.
			c.logger.Info("csrapproving: decided", "csr", name, "requester", csr.Spec.Username, "condition", cond.Type, "reason", reason, "message", message)
		}
		// A conflict is retried from the informer's newer copy.
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

const reasonAutoApproved = "AutoApproved"

// decided reports whether a request has been approved or denied.
func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
			return true
		}
	}
	return false
}

// judgeNodeClient decides a node client request: the reason and message
// of its approval (reasonAutoApproved) or denial; an error only when the
// API server could not be asked.
func judgeNodeClient(ctx context.Context, c *controllerContext, csr *certificatesv1.CertificateSigningRequest) (reason, message string, err error) {
	node, err := nodeClientRequest(csr)
	if err != nil {
		return "NotANodeClientRequest", err.Error(), nil
	}
	var subresource string
	switch {
	case csr.Spec.Username == nodeUserPrefix+node:
		subresource = "selfnodeclient"
	case strings.HasPrefix(csr.Spec.Username, bootstrapUserPref) && slices.Contains(csr.Spec.Groups, rbac.BootstrappersGroup):
		subresource = "nodeclient"
	default:
		return "RequesterNotPermitted", fmt.Sprintf("%s may not ask for the client certificate of node %q: only a bootstrap token or the node itself may", csr.Spec.Username, node), nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := c.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: subresource, Verb: "create",
		},
	}}, metav1.CreateOptions{})
	if err != nil {
		return "", "", fmt.Errorf("subject access review of %s: %w", csr.Spec.Username, err)
	}
	if !sar.Status.Allowed {
		return "RequesterNotPermitted", fmt.Sprintf("%s may not create certificatesigningrequests/%s", csr.Spec.Username, subresource), nil
	}
	if subresource == "selfnodeclient" {
		return reasonAutoApproved, "Auto approving self kubelet client certificate after SubjectAccessReview.", nil
	}
	return reasonAutoApproved, "Auto approving kubelet client certificate after SubjectAccessReview.", nil
}

// nodeClientRequest checks that a CSR asks for a node's client
// certificate and nothing more, and returns the node's name: a subject of
// exactly CN=system:node:<name> and O=system:nodes; no DNS name, address,
// email or URI; not a CA; and the usages digital signature and client
// auth (with key encipherment for an RSA key), nothing more. The signer
// checks the same before it signs.
func nodeClientRequest(csr *certificatesv1.CertificateSigningRequest) (string, error) {
	b, _ := pem.Decode(csr.Spec.Request)
	if b == nil || b.Type != "CERTIFICATE REQUEST" {
		return "", errors.New("the request is not a PEM CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		return "", errors.New("the request does not parse")
	}
	if err := req.CheckSignature(); err != nil {
		return "", errors.New("the request's signature does not verify")
	}
	node, ok := strings.CutPrefix(req.Subject.CommonName, nodeUserPrefix)
	if !ok || node == "" {
		return "", fmt.Errorf("the subject's common name %q is not %s<node name>", req.Subject.CommonName, nodeUserPrefix)
	}
	if errs := validation.IsDNS1123Subdomain(node); len(errs) > 0 {
		return "", fmt.Errorf("the node name %q is not a valid name: %s", node, strings.Join(errs, "; "))
	}
	if err := strongKey(req.PublicKey); err != nil {
		return "", err
	}
	if !slices.Equal(req.Subject.Organization, []string{nodesGroup}) {
		return "", fmt.Errorf("the subject's organizations %q are not exactly [%s]", req.Subject.Organization, nodesGroup)
	}
	// The common name and the organization, and no other attribute.
	if len(req.Subject.Names) != 2 || len(req.Subject.ExtraNames) > 0 {
		return "", errors.New("the subject holds more than a common name and an organization")
	}
	if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return "", errors.New("a client certificate names no DNS name, address, email or URI")
	}
	if pki.AsksForCA(req) {
		return "", errors.New("the request asks for a CA certificate")
	}
	want := [][]certificatesv1.KeyUsage{{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}
	if _, isRSA := req.PublicKey.(*rsa.PublicKey); isRSA {
		want = append(want, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth})
	}
	usages := slices.Clone(csr.Spec.Usages)
	slices.Sort(usages)
	for _, w := range want {
		slices.Sort(w)
		if slices.Equal(usages, w) {
			return node, nil
		}
	}
	return "", fmt.Errorf("the usages %q are not digital signature and client auth (with key encipherment for an RSA key)", csr.Spec.Usages)
}

// strongKey refuses a key weaker than the cluster's own: RSA of fewer than
// 2,048 bits, or an elliptic curve other than P-256 or P-384.
func strongKey(key any) error {
	switch k := key.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("the RSA key has %d bits; a node's needs 2048 or more", k.N.BitLen())
		}
		return nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return fmt.Errorf("the ECDSA curve %s is not P-256 or P-384", k.Curve.Params().Name)
		}
		return nil
	}
	return fmt.Errorf("a %T key is not RSA or ECDSA", key)
}
