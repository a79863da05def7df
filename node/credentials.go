package node

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
)

const (
	// certPrefix names the node's certificate files in its directory:
	// node-client-<time>.pem, each its certificate and key, and
	// node-client-current.pem, a link to the one in use.
	certPrefix = "node-client"
	// nodesGroup is the organization of every node's certificate.
	nodesGroup = "system:nodes"
	// userPrefix starts a node's user name.
	userPrefix = "system:node:"
	// kubeletClientSigner is the signer of node client certificates.
	kubeletClientSigner = certificatesv1.KubeAPIServerClientKubeletSignerName
)

// currentCertFile is the file, in dir, holding the node's certificate and
// key in use.
func currentCertFile(dir string) string {
	return filepath.Join(dir, certPrefix+"-current.pem")
}

// credentials are the node's client certificate, obtained with a
// bootstrap token and renewed with the certificate itself by client-go's
// certificate manager.
type credentials struct {
	manager certificate.Manager
	// certFile holds the certificate and key in use; the clients read it
	// again when it changes.
	certFile string

	mu sync.Mutex
	// token is the bootstrap token until the first certificate is
	// issued, then empty: the node does not keep it.
	token string
}

// newCredentials prepares the node's certificate manager. A node whose
// directory holds a certificate uses it and needs no token; one without
// needs token, and uses it for its first CSR only.
func newCredentials(ctx context.Context, c *Config, base *rest.Config) (*credentials, error) {
	store, err := certificate.NewFileStore(certPrefix, c.Dir, c.Dir, "", "")
	if err != nil {
		return nil, fmt.Errorf("node %s: certificate store: %w", c.Name, err)
	}
	cr := &credentials{certFile: currentCertFile(c.Dir), token: c.Token}
	var lifetime *time.Duration
	if c.CertificateLifetime > 0 {
		lifetime = &c.CertificateLifetime
	}
	cr.manager, err = certificate.NewManager(&certificate.Config{
		Ctx: &ctx,
		ClientsetFn: func(current *tls.Certificate) (kubernetes.Interface, error) {
			return cr.client(base, current)
		},
		Template: &x509.CertificateRequest{Subject: pkix.Name{
			CommonName:   userPrefix + c.Name,
			Organization: []string{nodesGroup},
		}},
		SignerName:                   kubeletClientSigner,
		RequestedCertificateLifetime: lifetime,
		GetUsages: func(key any) []certificatesv1.KeyUsage {
			// What the approver allows: digital signature and client
			// auth, with key encipherment for an RSA key only.
			if _, ok := key.(*ecdsa.PrivateKey); ok {
				return []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
			}
			return []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
		},
		CertificateStore: store,
		Name:             "node " + c.Name,
	})
	if err != nil {
		return nil, fmt.Errorf("node %s: certificate manager: %w", c.Name, err)
	}
	if cr.manager.Current() == nil && c.Token == "" {
		return nil, fmt.Errorf("node %s: no certificate in %s and no bootstrap token: create one with trustplane token create and pass --token", c.Name, c.Dir)
	}
	return cr, nil
}

// client is the clientset the certificate manager submits a CSR with: the
// bootstrap token's before the first certificate, the certificate's after.
func (cr *credentials) client(base *rest.Config, current *tls.Certificate) (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(base)
	if current != nil {
		cfg.CertFile, cfg.KeyFile = cr.certFile, cr.certFile
		return kubernetes.NewForConfig(cfg)
	}
	cr.mu.Lock()
	token := cr.token
	cr.mu.Unlock()
	if token == "" {
		return nil, errors.New("the node's certificate has expired and it holds no bootstrap token: join it again with a new one")
	}
	cfg.BearerToken = token
	return kubernetes.NewForConfig(cfg)
}

// start runs the certificate manager and waits until the node holds a
// certificate, then forgets the bootstrap token.
func (cr *credentials) start(ctx context.Context) error {
	cr.manager.Start()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		return cr.manager.Current() != nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the node's certificate (is the CSR approved? kubectl get csr): %w", err)
	}
	cr.mu.Lock()
	cr.token = ""
	cr.mu.Unlock()
	return nil
}

// config is base with the node's certificate, which client-go reads
// again, and reconnects with, when the manager renews it.
func (cr *credentials) config(base *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.CertFile, cfg.KeyFile = cr.certFile, cr.certFile
	return cfg
}

func (cr *credentials) stop() { cr.manager.Stop() }
