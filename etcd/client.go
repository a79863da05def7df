package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/trustplane/trustplane/pki"
)

// ClientConfig says how the API server reaches etcd.
type ClientConfig struct {
	Endpoints []string
	// CAFile is the etcd CA; CertFile and KeyFile the client identity.
	CAFile, CertFile, KeyFile string
	DialTimeout               time.Duration
}

// APIServerClientConfig is the API server's etcd client configuration in
// the PKI directory pkiDir (DIR/pki).
func APIServerClientConfig(pkiDir string, endpoints []string) ClientConfig {
	return ClientConfig{
		Endpoints: endpoints,
		CAFile:    filepath.Join(pkiDir, pki.EtcdDir, "ca.crt"),
		CertFile:  filepath.Join(pkiDir, pki.APIServerEtcdClient+".crt"),
		KeyFile:   filepath.Join(pkiDir, pki.APIServerEtcdClient+".key"),
	}
}

// TLSConfig is the client TLS configuration: the etcd CA as the only root,
// and the client certificate.
func (c ClientConfig) TLSConfig() (*tls.Config, error) {
	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read etcd CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("etcd CA %s holds no certificate", c.CAFile)
	}
	pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("load etcd client certificate: %w", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		CipherSuites: pki.CipherSuites(),
		RootCAs:      pool,
		Certificates: []tls.Certificate{pair},
	}, nil
}

// NewClient connects to etcd and checks the connection with one read of
// the registry prefix.
func NewClient(ctx context.Context, c ClientConfig) (*clientv3.Client, error) {
	if len(c.Endpoints) == 0 {
		return nil, errors.New("no etcd endpoints")
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 10 * time.Second
	}
	tlsConfig, err := c.TLSConfig()
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints,
		TLS:         tlsConfig,
		DialTimeout: c.DialTimeout,
		Logger:      zap.NewNop(),
		Context:     ctx,
	})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %v: %w", c.Endpoints, err)
	}
	checkCtx, cancel := context.WithTimeout(ctx, c.DialTimeout)
	defer cancel()
	if _, err := cli.Get(checkCtx, RegistryPrefix, clientv3.WithKeysOnly()); err != nil {
		cli.Close()
		return nil, fmt.Errorf("read etcd %v: %w", c.Endpoints, err)
	}
	return cli, nil
}
