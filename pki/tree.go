package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Names of the files under DIR/pki. Each name X is the pair X.crt and X.key.
const (
	ClusterCAName       = "ca"
	APIServerName       = "apiserver"
	APIServerEtcdClient = "apiserver-etcd-client"
	EtcdDir             = "etcd"
	EtcdCAName          = "ca"
	EtcdServerName      = "server"
	EtcdPeerName        = "peer"
	ServiceAccountKey   = "sa.key"
	ServiceAccountPub   = "sa.pub"
)

// Identities of the certificates in the tree.
const (
	APIServerCommonName  = "kube-apiserver"
	EtcdClientCommonName = "kube-apiserver-etcd-client"
)

// Options configures Init.
type Options struct {
	// Dir is the PKI directory, DIR/pki.
	Dir string
	// Hosts are extra names and addresses for the API server and etcd
	// serving certificates, beyond LocalHosts and the host name.
	Hosts        []string
	CAValidity   time.Duration
	LeafValidity time.Duration
}

func (o Options) validate() error {
	var errs []error
	if o.Dir == "" {
		errs = append(errs, errors.New("pki directory is empty"))
	}
	if o.CAValidity <= 0 {
		errs = append(errs, fmt.Errorf("CA validity must be positive, got %s", o.CAValidity))
	}
	if o.LeafValidity <= 0 {
		errs = append(errs, fmt.Errorf("leaf validity must be positive, got %s", o.LeafValidity))
	}
	if o.LeafValidity > o.CAValidity {
		errs = append(errs, fmt.Errorf("leaf validity %s exceeds CA validity %s", o.LeafValidity, o.CAValidity))
	}
	return errors.Join(errs...)
}

// Tree is the loaded PKI of one cluster.
type Tree struct {
	Dir       string
	ClusterCA *CA
	EtcdCA    *CA
	// Created lists the files Init wrote, relative to Dir.
	Created []string
}

// APIServerHosts are the subject alternative names of the API server's
// serving certificate: loopback, the host name, the in-cluster service names
// and any extra hosts.
func APIServerHosts(extra []string) []string {
	hosts := append(LocalHosts(), "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	return withHostname(append(hosts, extra...))
}

// EtcdHosts are the subject alternative names of etcd's serving and peer
// certificates.
func EtcdHosts(extra []string) []string {
	return withHostname(append(LocalHosts(), extra...))
}

func withHostname(hosts []string) []string {
	if h, err := os.Hostname(); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	var out []string
	for _, h := range hosts {
		if h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// Init creates whatever is missing of the PKI tree under o.Dir and loads it.
// Existing keys and certificates are kept.
func Init(o Options) (*Tree, error) {
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("pki options: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, EtcdDir), 0o700); err != nil {
		return nil, err
	}
	t := &Tree{Dir: o.Dir}
	note := func(created bool, name string) {
		if created {
			t.Created = append(t.Created, name)
		}
	}
	var (
		created bool
		err     error
	)
	if t.ClusterCA, created, err = EnsureCA(o.Dir, ClusterCAName, "trustplane-ca", o.CAValidity); err != nil {
		return nil, err
	}
	note(created, ClusterCAName+".crt")
	etcdDir := filepath.Join(o.Dir, EtcdDir)
	if t.EtcdCA, created, err = EnsureCA(etcdDir, EtcdCAName, "trustplane-etcd-ca", o.CAValidity); err != nil {
		return nil, err
	}
	note(created, filepath.Join(EtcdDir, EtcdCAName+".crt"))

	leaves := []struct {
		ca   *CA
		dir  string
		name string
		req  Request
	}{
		{t.ClusterCA, o.Dir, APIServerName, Request{CommonName: APIServerCommonName, Hosts: APIServerHosts(o.Hosts), Profile: Server}},
		{t.EtcdCA, o.Dir, APIServerEtcdClient, Request{CommonName: EtcdClientCommonName, Profile: Client}},
		{t.EtcdCA, etcdDir, EtcdServerName, Request{CommonName: "etcd-server", Hosts: EtcdHosts(o.Hosts), Profile: Server}},
		{t.EtcdCA, etcdDir, EtcdPeerName, Request{CommonName: "etcd-peer", Hosts: EtcdHosts(o.Hosts), Profile: Peer}},
	}
	for _, l := range leaves {
		l.req.Validity = o.LeafValidity
		created, err := EnsureLeaf(l.ca, l.dir, l.name, l.req)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(o.Dir, filepath.Join(l.dir, l.name+".crt"))
		note(created, rel)
	}
	created, err = ensureServiceAccountKey(o.Dir)
	if err != nil {
		return nil, err
	}
	note(created, ServiceAccountKey)
	return t, nil
}

// ensureServiceAccountKey writes the ServiceAccount token signing key pair
// (ECDSA P-256, for ES256) unless it exists.
func ensureServiceAccountKey(dir string) (bool, error) {
	keyPath := filepath.Join(dir, ServiceAccountKey)
	pubPath := filepath.Join(dir, ServiceAccountPub)
	keyOK, err := exists(keyPath)
	if err != nil {
		return false, err
	}
	pubOK, err := exists(pubPath)
	if err != nil {
		return false, err
	}
	if keyOK && pubOK {
		return false, nil
	}
	if keyOK != pubOK {
		return false, fmt.Errorf("%s: only one of %s and %s exists; remove it to have both created again", dir, ServiceAccountKey, ServiceAccountPub)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return false, fmt.Errorf("generate service account key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return false, fmt.Errorf("encode service account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return false, fmt.Errorf("encode service account public key: %w", err)
	}
	if err := WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return false, fmt.Errorf("write %s: %w", keyPath, err)
	}
	if err := WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return false, fmt.Errorf("write %s: %w", pubPath, err)
	}
	return true, nil
}
