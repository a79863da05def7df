package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/auth"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/trustplane/trustplane/pki"
)

// RegistryPrefix is the only key prefix the API server may use.
const RegistryPrefix = "/registry/"

// APIServerRole is the etcd role granting read and write on RegistryPrefix.
const APIServerRole = "kube-apiserver"

// Config configures an embedded etcd member.
type Config struct {
	// Name is the member name.
	Name string
	// DataDir holds etcd's data; created 0700.
	DataDir string
	// PKIDir is DIR/pki/etcd: ca.crt, server.{crt,key}, peer.{crt,key}.
	PKIDir string
	// ClientAddress and PeerAddress are host:port to listen on.
	ClientAddress string
	PeerAddress   string
	// HTTPAddress is host:port for etcd's HTTP endpoints (/health,
	// /version, /metrics), behind the same mutual TLS as the client
	// address. It keeps them off ClientAddress, where etcd would serve
	// gRPC through net/http, which costs the API server about 15% more
	// CPU per write than etcd's own gRPC server.
	HTTPAddress string
	// StartTimeout bounds the wait for the member to be ready.
	StartTimeout time.Duration
	Logger       *slog.Logger
}

func (c *Config) validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("etcd member name is empty"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("etcd data directory is empty"))
	}
	for _, f := range []string{"ca.crt", "server.crt", "server.key", "peer.crt", "peer.key"} {
		if _, err := os.Stat(filepath.Join(c.PKIDir, f)); err != nil {
			errs = append(errs, fmt.Errorf("etcd PKI: %w", err))
		}
	}
	for what, a := range map[string]string{"client": c.ClientAddress, "peer": c.PeerAddress, "HTTP": c.HTTPAddress} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, fmt.Errorf("etcd %s address %q: %w", what, a, err))
		}
	}
	if c.StartTimeout <= 0 {
		errs = append(errs, fmt.Errorf("etcd start timeout must be positive, got %s", c.StartTimeout))
	}
	if c.Logger == nil {
		errs = append(errs, errors.New("etcd logger is nil"))
	}
	return errors.Join(errs...)
}

// Server is a running embedded etcd member.
type Server struct {
	etcd      *embed.Etcd
	clientURL string
	httpURL   string
	closing   *atomic.Bool
	closeOnce sync.Once
}

// Start starts the member, waits until it serves, and on first start turns
// on etcd authentication with the API server as its only user.
func Start(ctx context.Context, c Config) (*Server, error) {
	if c.StartTimeout == 0 {
		c.StartTimeout = time.Minute
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("etcd config: %w", err)
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, err
	}
	clientURL := url.URL{Scheme: "https", Host: c.ClientAddress}
	peerURL := url.URL{Scheme: "https", Host: c.PeerAddress}

	cfg := embed.NewConfig()
	cfg.Name = c.Name
	cfg.Dir = c.DataDir
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenClientHttpUrls = []url.URL{{Scheme: "https", Host: c.HTTPAddress}}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = fmt.Sprintf("%s=%s", c.Name, peerURL.String())
	cfg.InitialClusterToken = "trustplane"
	cfg.ClientAutoTLS = false
	cfg.PeerAutoTLS = false
	cfg.ClientTLSInfo = transport.TLSInfo{
		CertFile:       filepath.Join(c.PKIDir, "server.crt"),
		KeyFile:        filepath.Join(c.PKIDir, "server.key"),
		TrustedCAFile:  filepath.Join(c.PKIDir, "ca.crt"),
		ClientCertAuth: true,
	}
	cfg.PeerTLSInfo = transport.TLSInfo{
		CertFile:       filepath.Join(c.PKIDir, "peer.crt"),
		KeyFile:        filepath.Join(c.PKIDir, "peer.key"),
		TrustedCAFile:  filepath.Join(c.PKIDir, "ca.crt"),
		ClientCertAuth: true,
	}
	cfg.CipherSuites = pki.CipherSuiteNames()
	cfg.TlsMinVersion = "TLS1.2"
	cfg.EnableGRPCGateway = false
	closing := new(atomic.Bool)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newZapLogger(c.Logger, closing))
	// kube-apiserver compacts every five minutes; keep an hour of history
	// so watchers can resume across short disconnections.
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = "1h"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	stop := func() { closing.Store(true); e.Close() }
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		stop()
		return nil, fmt.Errorf("start etcd: %w", err)
	case <-time.After(c.StartTimeout):
		stop()
		return nil, fmt.Errorf("start etcd: not ready after %s", c.StartTimeout)
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	}
	s := &Server{etcd: e, clientURL: clientURL.String(), httpURL: "https://" + c.HTTPAddress, closing: closing}
	if err := s.enableAuth(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("enable etcd authentication: %w", err)
	}
	c.Logger.Info("etcd ready", "client_url", s.clientURL, "data_dir", c.DataDir)
	return s, nil
}

// enableAuth creates the users and roles and turns authentication on. It
// runs in process, before any client could connect with authentication off,
// and does nothing once authentication is on. Each step tolerates having
// been done by an earlier, interrupted start.
func (s *Server) enableAuth(ctx context.Context) error {
	srv := s.etcd.Server
	if srv.AuthStore().IsAuthEnabled() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	noPassword := &authpb.UserAddOptions{NoPassword: true}
	steps := []struct {
		what string
		do   func() error
		ok   error
	}{
		{"add user root", func() error {
			_, err := srv.UserAdd(ctx, &pb.AuthUserAddRequest{Name: "root", Options: noPassword})
			return err
		}, auth.ErrUserAlreadyExist},
		{"add role root", func() error { _, err := srv.RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: "root"}); return err }, auth.ErrRoleAlreadyExist},
		{"grant root", func() error {
			_, err := srv.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"})
			return err
		}, nil},
		{"add role " + APIServerRole, func() error {
			_, err := srv.RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: APIServerRole})
			return err
		}, auth.ErrRoleAlreadyExist},
		{"grant " + RegistryPrefix, func() error {
			_, err := srv.RoleGrantPermission(ctx, &pb.AuthRoleGrantPermissionRequest{Name: APIServerRole, Perm: &authpb.Permission{
				PermType: authpb.READWRITE,
				Key:      []byte(RegistryPrefix),
				RangeEnd: []byte(clientv3.GetPrefixRangeEnd(RegistryPrefix)),
			}})
			return err
		}, nil},
		{"add user " + pki.EtcdClientCommonName, func() error {
			_, err := srv.UserAdd(ctx, &pb.AuthUserAddRequest{Name: pki.EtcdClientCommonName, Options: noPassword})
			return err
		}, auth.ErrUserAlreadyExist},
		{"grant " + APIServerRole, func() error {
			_, err := srv.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: pki.EtcdClientCommonName, Role: APIServerRole})
			return err
		}, nil},
		{"enable authentication", func() error { _, err := srv.AuthEnable(ctx, &pb.AuthEnableRequest{}); return err }, nil},
	}
	for _, st := range steps {
		if err := st.do(); err != nil && (st.ok == nil || !errors.Is(err, st.ok)) {
			return fmt.Errorf("%s: %w", st.what, err)
		}
	}
	return nil
}

// ClientURL is the URL clients dial.
func (s *Server) ClientURL() string { return s.clientURL }

// HTTPURL is the URL of etcd's HTTP endpoints, such as /health.
func (s *Server) HTTPURL() string { return s.httpURL }

// Err reports a fatal error of the running member.
func (s *Server) Err() <-chan error { return s.etcd.Err() }

// Close stops serving clients and peers, stops the member and waits for it
// to flush its data. Calls after the first do nothing.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		s.etcd.Close()
	})
}
