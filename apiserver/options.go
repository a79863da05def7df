package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"

	"github.com/trustplane/trustplane/admission"
	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/apiserver/allocator"
	"github.com/trustplane/trustplane/apiserver/authn/oidc"
	"github.com/trustplane/trustplane/apiserver/authn/serviceaccount"
	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/etcd"
	"github.com/trustplane/trustplane/pki"
)

// Options are the API server's flags, named as kube-apiserver's.
type Options struct {
	DataDir             string
	BindAddress         string
	SecurePort          int
	EtcdServers         []string
	RequestTimeout      time.Duration
	MaxRequestBodyBytes int64
	MaxRequestsInFlight int
	// ServiceAccountIssuer is the iss of the tokens the server issues and
	// the audience it accepts by default.
	ServiceAccountIssuer string
	MaxTokenExpiration   time.Duration
	// AuthenticationConfig is an AuthenticationConfiguration file with
	// OIDC issuers; "" uses DIR/authentication-config.yaml when it exists.
	AuthenticationConfig string
	// AdmissionPolicyDir holds the Rego admission policies; "" is
	// DIR/policies. It must exist, and its policies load and pass their
	// tests, or the server does not start.
	AdmissionPolicyDir string
	// AdmissionPolicyTimeout bounds the policies' evaluation per request.
	AdmissionPolicyTimeout time.Duration
	// ServiceClusterIPRange is the CIDR Services' cluster IPs come from;
	// its first address is the kubernetes Service's.
	ServiceClusterIPRange string
	// ServiceNodePortRange is the range of node ports, "30000-32767".
	ServiceNodePortRange string
	// DefaultNotReadyTolerationSeconds and
	// DefaultUnreachableTolerationSeconds are the seconds of the
	// tolerations of the not-ready and unreachable NoExecute taints that
	// a pod without them is given (admission.DefaultTolerationSeconds).
	DefaultNotReadyTolerationSeconds, DefaultUnreachableTolerationSeconds int64
	// Audit is how the audit log rotates, and the webhook backend (see
	// auditoptions.go).
	Audit AuditOptions
	// DisableCompressionForClientIPs are CIDRs of clients never sent a
	// compressed body, as kube-apiserver's flag of the name; unlike
	// kube's, the default is the loopback ranges (see
	// DefaultDisableCompressionForClientIPs).
	DisableCompressionForClientIPs []string
	// Profiling serves the Go runtime's profiles at /debug/pprof/ to
	// those RBAC allows to get them (cluster-admin), as kube-apiserver's
	// flag; off by default, as the CIS benchmark asks of kube's.
	Profiling bool
}

// DefaultDisableCompressionForClientIPs are the loopback ranges: a client
// on the server's own machine gains nothing from a compressed body, whose
// only saving is the bytes on a network, and it costs both ends CPU. A
// client-go LIST of 10,000 JSON ConfigMaps took 793-934 ms at p99
// compressed and 509-617 ms plain, two servers over one etcd benched in
// turns (trustplane bench, list-large; see the README). The controllers and the scheduler that trustplane up runs are such clients,
// as are kubectl and tools on the control-plane machine. kube disables
// compression in its own control-plane components for the same reason.
var DefaultDisableCompressionForClientIPs = []string{"127.0.0.0/8", "::1/128"}

// Defaults of the Service ranges, as kubeadm's and kube-apiserver's.
const (
	DefaultServiceClusterIPRange = "10.96.0.0/12"
	DefaultServiceNodePortRange  = "30000-32767"
)

// Defaults of the ServiceAccount token flags, as kube-apiserver's.
const (
	DefaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
	DefaultMaxTokenExpiration   = 24 * time.Hour
)

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		DataDir:                datadir.DefaultDir,
		BindAddress:            "127.0.0.1",
		SecurePort:             6443,
		EtcdServers:            []string{"https://127.0.0.1:2379"},
		RequestTimeout:         DefaultRequestTimeout,
		MaxRequestBodyBytes:    DefaultMaxRequestBodyBytes,
		MaxRequestsInFlight:    DefaultMaxRequestsInFlight,
		ServiceAccountIssuer:   DefaultServiceAccountIssuer,
		MaxTokenExpiration:     DefaultMaxTokenExpiration,
		AdmissionPolicyTimeout: opa.DefaultTimeout,
		ServiceClusterIPRange:  DefaultServiceClusterIPRange,
		ServiceNodePortRange:   DefaultServiceNodePortRange,

		DefaultNotReadyTolerationSeconds:    admission.KubeDefaultTolerationSeconds,
		DefaultUnreachableTolerationSeconds: admission.KubeDefaultTolerationSeconds,
		Audit:                               DefaultAuditOptions(),

		DisableCompressionForClientIPs: slices.Clone(DefaultDisableCompressionForClientIPs),
	}
}

// Address is where the server listens.
func (o *Options) Address() string {
	return net.JoinHostPort(o.BindAddress, strconv.Itoa(o.SecurePort))
}

// Validate reports every problem with the options at once.
func (o *Options) Validate() error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("--dir is empty"))
	}
	if net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address %q is not an IP address", o.BindAddress))
	}
	if o.SecurePort < 0 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d is out of range", o.SecurePort))
	}
	if len(o.EtcdServers) == 0 {
		errs = append(errs, errors.New("--etcd-servers is empty"))
	}
	if o.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--request-timeout %s must be positive", o.RequestTimeout))
	}
	if o.AdmissionPolicyTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--admission-policy-timeout %s must be positive", o.AdmissionPolicyTimeout))
	}
	if _, err := allocator.ParseIPRange(o.ServiceClusterIPRange); err != nil {
		errs = append(errs, fmt.Errorf("--service-cluster-ip-range: %w", err))
	}
	if _, err := allocator.ParsePortRange(o.ServiceNodePortRange); err != nil {
		errs = append(errs, fmt.Errorf("--service-node-port-range: %w", err))
	}
	if o.DefaultNotReadyTolerationSeconds < 0 {
		errs = append(errs, fmt.Errorf("--default-not-ready-toleration-seconds %d is negative", o.DefaultNotReadyTolerationSeconds))
	}
	if o.DefaultUnreachableTolerationSeconds < 0 {
		errs = append(errs, fmt.Errorf("--default-unreachable-toleration-seconds %d is negative", o.DefaultUnreachableTolerationSeconds))
	}
	if _, err := parseClientCIDRs(o.DisableCompressionForClientIPs); err != nil {
		errs = append(errs, fmt.Errorf("--disable-compression-for-client-ips: %w", err))
	}
	errs = append(errs, o.Audit.validate())
	return errors.Join(errs...)
}

// parseClientCIDRs parses CIDRs, as 127.0.0.0/8 or ::1/128; empty
// strings, which an empty flag gives, are skipped.
func parseClientCIDRs(cidrs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var errs []error
	for _, c := range cidrs {
		if c = strings.TrimSpace(c); c == "" {
			continue
		}
		p, err := netip.ParsePrefix(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("%q is not a CIDR (as 127.0.0.0/8 or ::1/128)", c))
			continue
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			// Clients' addresses are judged unmapped (::ffff:127.0.0.1
			// as 127.0.0.1), so a range written mapped is too, as
			// kube's net.IPNet matches it.
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, errors.Join(errs...)
}

// Config reads the data directory and connects to etcd. The returned
// close function closes the etcd client and the audit log.
func (o *Options) Config(ctx context.Context, logger *slog.Logger) (*Config, func() error, error) {
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	l := datadir.Layout{Dir: o.DataDir}
	serving, err := pki.LoadKeyPair(l.PKI(), pki.APIServerName)
	if err != nil {
		return nil, nil, err
	}
	// The CA follows the server's certificate, so that a joining node
	// checks it against the pin that token create printed.
	if serving, err = pki.WithIssuer(serving, filepath.Join(l.PKI(), pki.ClusterCAName+".crt")); err != nil {
		return nil, nil, err
	}
	clientCA, err := pki.LoadCertPool(filepath.Join(l.PKI(), pki.ClusterCAName+".crt"))
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(l.EncryptionConfig()); err != nil {
		return nil, nil, fmt.Errorf("encryption config: %w (run trustplane init)", err)
	}
	encryption, err := storage.LoadEncryption(ctx, l.EncryptionConfig(), logger)
	if err != nil {
		return nil, nil, err
	}
	issuer, verifier, err := LoadServiceAccountKeys(l.PKI(), o.ServiceAccountIssuer)
	if err != nil {
		return nil, nil, err
	}
	oidcAuth, anonymous, err := o.loadOIDC(ctx, l)
	if err != nil {
		return nil, nil, err
	}
	plainTo, err := parseClientCIDRs(o.DisableCompressionForClientIPs)
	if err != nil {
		return nil, nil, err
	}
	auditPolicy := o.Audit.PolicyFile
	if auditPolicy == "" {
		auditPolicy = l.AuditPolicy()
	}
	policy, err := audit.LoadPolicy(auditPolicy)
	if err != nil {
		return nil, nil, err
	}
	policyDir := o.AdmissionPolicyDir
	if policyDir == "" {
		policyDir = l.Policies()
	}
	if _, err := os.Stat(policyDir); err != nil {
		return nil, nil, fmt.Errorf("admission policies: %w (run trustplane init)", err)
	}
	data := opa.NewData()
	policies, err := data.LoadDirs(ctx, policyDir)
	if err != nil {
		return nil, nil, fmt.Errorf("admission policies in %s: %w", policyDir, err)
	}
	if err := policies.Unmerged(); err != nil {
		logger.WarnContext(ctx, "admission policies evaluated rule by rule: their merged rules did not compile", "err", err)
	}
	replicate, err := opa.LoadReplication(filepath.Join(policyDir, opa.ReplicationFile))
	if err != nil {
		return nil, nil, fmt.Errorf("admission policies: %w", err)
	}
	etcdClient, err := etcd.NewClient(ctx, etcd.APIServerClientConfig(l.PKI(), o.EtcdServers))
	if err != nil {
		return nil, nil, err
	}
	auditSigner, err := audit.LoadSigner(l.PKI())
	if err != nil {
		etcdClient.Close()
		return nil, nil, err
	}
	auditSink, closeAudit, err := o.Audit.open(l.AuditLog(), auditSigner, logger)
	if err != nil {
		etcdClient.Close()
		return nil, nil, err
	}
	// Validate parsed them.
	serviceIPs, _ := allocator.ParseIPRange(o.ServiceClusterIPRange)
	nodePorts, _ := allocator.ParsePortRange(o.ServiceNodePortRange)
	c := &Config{
		ServiceIPRange:      serviceIPs,
		NodePortRange:       nodePorts,
		ServingCert:         serving,
		ClientCA:            clientCA,
		Etcd:                etcdClient,
		Encryption:          encryption,
		AuditPolicy:         policy,
		AuditSink:           auditSink,
		AdmissionPolicies:   policies,
		AdmissionData:       data,
		AdmissionReplicate:  replicate,
		AdmissionPolicyDir:  policyDir,
		AdmissionTimeout:    o.AdmissionPolicyTimeout,
		TokenIssuer:         issuer,
		TokenVerifier:       verifier,
		APIAudiences:        []string{o.ServiceAccountIssuer},
		MaxTokenExpiration:  o.MaxTokenExpiration,
		OIDC:                oidcAuth,
		AnonymousAll:        anonymous.all,
		AnonymousPaths:      anonymous.paths,
		RequestTimeout:      o.RequestTimeout,
		EtcdTimeout:         DefaultEtcdTimeout,
		MaxRequestBodyBytes: o.MaxRequestBodyBytes,
		MaxRequestsInFlight: o.MaxRequestsInFlight,
		MaxWatchesPerUser:   DefaultMaxWatchesPerUser,
		Logger:              logger,

		DisableCompressionForClientIPs: plainTo,
		Profiling:                      o.Profiling,

		DefaultNotReadyTolerationSeconds:    &o.DefaultNotReadyTolerationSeconds,
		DefaultUnreachableTolerationSeconds: &o.DefaultUnreachableTolerationSeconds,
	}
	closeAll := func() error { return errors.Join(etcdClient.Close(), closeAudit()) }
	return c, closeAll, nil
}

// LoadServiceAccountKeys reads the token signing key, pkiDir/sa.key, and
// the keys tokens are verified with, pkiDir/sa.pub, for tokens with the
// given issuer. sa.pub may hold several public keys, so that a key can be
// rotated: sign with a new sa.key, keep the old public key in sa.pub until
// the tokens it signed have expired, then remove it. sa.pub must hold the
// public key of sa.key, or the server could not verify its own tokens.
func LoadServiceAccountKeys(pkiDir, issuer string) (*serviceaccount.Issuer, *serviceaccount.Verifier, error) {
	keyPEM, err := os.ReadFile(filepath.Join(pkiDir, pki.ServiceAccountKey))
	if err != nil {
		return nil, nil, fmt.Errorf("service account signing key: %w", err)
	}
	pubPEM, err := os.ReadFile(filepath.Join(pkiDir, pki.ServiceAccountPub))
	if err != nil {
		return nil, nil, fmt.Errorf("service account public key: %w", err)
	}
	i, err := serviceaccount.LoadIssuer(keyPEM, issuer)
	if err != nil {
		return nil, nil, err
	}
	v, err := serviceaccount.LoadVerifier([][]byte{pubPEM}, issuer, []string{issuer})
	if err != nil {
		return nil, nil, err
	}
	if !v.HasKey(i.KeyID()) {
		return nil, nil, fmt.Errorf("service account keys: %s does not hold the public key of %s (key id %s)", pki.ServiceAccountPub, pki.ServiceAccountKey, i.KeyID())
	}
	return i, v, nil
}

// loadOIDC reads and validates the AuthenticationConfiguration, if any, and
// builds its authenticator, which waits for each issuer's discovery. A bad
// file or an unreachable issuer stops the start.
func (o *Options) loadOIDC(ctx context.Context, l datadir.Layout) (authenticator.Token, anonymousConfig, error) {
	path := o.AuthenticationConfig
	if path == "" {
		path = filepath.Join(l.Dir, "authentication-config.yaml")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, anonymousConfig{}, nil
		}
	}
	cfg, err := oidc.Load(path, []string{o.ServiceAccountIssuer})
	if err != nil {
		return nil, anonymousConfig{}, err
	}
	var anonymous anonymousConfig
	if cfg.AnonymousEnabled {
		anonymous = anonymousConfig{all: len(cfg.AnonymousPaths) == 0, paths: cfg.AnonymousPaths}
	}
	tok, err := cfg.Authenticator(ctx)
	return tok, anonymous, err
}

// anonymousConfig is the anonymous block of the AuthenticationConfiguration;
// its zero value keeps the default, the health probes alone.
type anonymousConfig struct {
	all   bool
	paths []string
}
