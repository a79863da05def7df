package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/net/http2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage/value"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/trustplane/trustplane/admission"
	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/apiserver/allocator"
	"github.com/trustplane/trustplane/apiserver/authn"
	"github.com/trustplane/trustplane/apiserver/authn/serviceaccount"
	"github.com/trustplane/trustplane/apiserver/filters"
	"github.com/trustplane/trustplane/apiserver/handlers"
	"github.com/trustplane/trustplane/apiserver/openapi"
	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/apiserver/responses"
	"github.com/trustplane/trustplane/apiserver/storage"

	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/pki"
	"github.com/trustplane/trustplane/rbac"
	"github.com/trustplane/trustplane/rbac/bootstrapper"
	"github.com/trustplane/trustplane/rbac/node"
)

// AuditSink stores audit events. An error means the event was not stored,
// and the request it describes is refused.
type AuditSink = filters.AuditSink

// Config is a validated API server configuration; see Options for the
// flags it is built from.
type Config struct {
	// ServingCert is the server's TLS certificate.
	ServingCert tls.Certificate
	// ClientCA verifies client certificates.
	ClientCA *x509.CertPool
	// Etcd is the client to etcd, as the API server's etcd identity.
	Etcd *clientv3.Client
	// Encryption encrypts resources at rest, Secrets always; it reloads
	// its file while the server runs.
	Encryption  *storage.Encryption
	AuditPolicy *audit.Policy
	AuditSink   AuditSink
	// AdmissionPolicies are the Rego admission policies, run last in both
	// admission chains, each evaluation bounded by AdmissionTimeout. An
	// empty set runs nothing; a nil one is refused.
	AdmissionPolicies *opa.Set
	AdmissionTimeout  time.Duration
	// AdmissionData is what the policies read besides their input, the
	// data they were compiled with: the objects of AdmissionReplicate,
	// from the watch caches.
	AdmissionData      *opa.Data
	AdmissionReplicate []schema.GroupResource
	// AdmissionPolicyDir, when set, is watched: a change of its policies
	// is loaded, its tests passing, without a restart.
	AdmissionPolicyDir string
	// TokenIssuer signs and TokenVerifier checks ServiceAccount tokens,
	// for APIAudiences unless a request names others.
	TokenIssuer   *serviceaccount.Issuer
	TokenVerifier *serviceaccount.Verifier
	APIAudiences  []string
	// MaxTokenExpiration bounds the tokens a TokenRequest may ask for.
	MaxTokenExpiration time.Duration
	// OIDC authenticates ID tokens from the AuthenticationConfiguration's
	// issuers; nil when there is none.
	OIDC authenticator.Token
	// AnonymousPaths, when set, are the paths served without credentials
	// instead of the health probes; AnonymousAll serves every path so.
	// Both come from the AuthenticationConfiguration's anonymous block.
	AnonymousPaths []string
	AnonymousAll   bool
	// RequestTimeout bounds each request; EtcdTimeout each etcd call.
	RequestTimeout time.Duration
	EtcdTimeout    time.Duration
	// MaxRequestBodyBytes caps request bodies; larger ones get 413.
	MaxRequestBodyBytes int64
	// MaxRequestsInFlight bounds concurrent requests; beyond it, 429.
	MaxRequestsInFlight int
	// MaxWatchesPerUser bounds the watches one user holds open; beyond
	// it, 429.
	MaxWatchesPerUser int
	// DisableCompressionForClientIPs are the client addresses never sent
	// a compressed body, whatever they accept; nil compresses for every
	// client that accepts it.
	DisableCompressionForClientIPs []netip.Prefix
	// Profiling serves the Go runtime's profiles at /debug/pprof/ to
	// those allowed to get those paths (cluster-admin, by default), as
	// kube-apiserver's --profiling; off, they are not served at all.
	Profiling bool
	// ServiceIPRange and NodePortRange are where Services' cluster IPs
	// and node ports come from.
	ServiceIPRange allocator.IPRange
	NodePortRange  allocator.PortRange
	Logger         *slog.Logger

	// DefaultNotReadyTolerationSeconds and
	// DefaultUnreachableTolerationSeconds are the seconds of the
	// tolerations a pod created without them is given; nil is
	// kube-apiserver's default, 300.
	DefaultNotReadyTolerationSeconds, DefaultUnreachableTolerationSeconds *int64

	// Tests only: extraAdmission plugins go last in the admission chains;
	// observeWrite is told of each stage a write enters; without leaves
	// guards out, for BenchmarkSecretCreateLayers to measure what each
	// costs. No option or flag sets them, and no file but a test does
	// (TestGuardsOffOnlyInTests).
	extraAdmission []k8sadmission.Interface
	observeWrite   func(ctx context.Context, stage string)
	without        guards
}

// guards are the stages of the write path that a benchmark may leave out
// of a server: admission (the built-in plugins and the policies) and
// encryption at rest. The zero value leaves nothing out. The benchmark
// leaves the audit and authorization filters out of the chain itself.
type guards struct {
	admission, encryption bool
}

// Default limits, as kube-apiserver's.
const (
	DefaultRequestTimeout      = 60 * time.Second
	DefaultEtcdTimeout         = 30 * time.Second
	DefaultMaxRequestBodyBytes = 3 << 20
	DefaultMaxRequestsInFlight = 600
	DefaultMaxWatchesPerUser   = 10000
)

// maxStreamsPerConnection is how many requests one HTTP/2 connection may
// have open at once: Go's default. client-go sends all of a client's
// requests, watches included, over one connection while the server allows
// it, and reads each connection from one goroutine. kube-apiserver allows
// 1,000; measured here with 1,000 client-go watchers in one process, 1,000
// put them all on one connection and made their median delivery several
// times slower than 250, which spreads them over four.
const maxStreamsPerConnection = 250

// newHTTP2Server is the HTTP/2 configuration of the API server.
//
// Its write scheduler picks among the streams that have frames to send.
// The default one, round robin, walks the ring of every open stream on each
// pick: with hundreds of watches on a connection, a watch event written to
// each costs a walk of all of them per frame, quadratic in the watches,
// which the CPU profile of a fan-out to 1,000 watchers showed as its
// largest cost.
func newHTTP2Server() *http2.Server {
	return &http2.Server{
		MaxConcurrentStreams: maxStreamsPerConnection,
		NewWriteScheduler:    func() http2.WriteScheduler { return http2.NewRandomWriteScheduler() },
	}
}

func (c *Config) validate() error {
	var errs []error
	if len(c.ServingCert.Certificate) == 0 {
		errs = append(errs, errors.New("serving certificate is not set"))
	}
	if c.ClientCA == nil {
		errs = append(errs, errors.New("client CA is not set"))
	}
	if c.Etcd == nil {
		errs = append(errs, errors.New("etcd client is not set"))
	}
	if c.Encryption == nil {
		errs = append(errs, errors.New("encryption at rest is not configured: secrets would be stored in plain text"))
	}
	if c.TokenIssuer == nil || c.TokenVerifier == nil {
		errs = append(errs, errors.New("service account token issuer and verifier are not set"))
	}
	if len(c.APIAudiences) == 0 {
		errs = append(errs, errors.New("API audiences are not set"))
	}
	if c.MaxTokenExpiration < handlers.MinTokenExpiration {
		errs = append(errs, fmt.Errorf("max token expiration %s is below the minimum %s", c.MaxTokenExpiration, handlers.MinTokenExpiration))
	}
	if c.AuditPolicy == nil {
		errs = append(errs, errors.New("audit policy is not set"))
	}
	if c.AuditSink == nil {
		errs = append(errs, errors.New("audit sink is not set"))
	}
	if c.AdmissionPolicies == nil || c.AdmissionData == nil || c.AdmissionTimeout <= 0 {
		errs = append(errs, fmt.Errorf("admission policies, their data and a positive timeout are required, got timeout %s", c.AdmissionTimeout))
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("request timeout must be positive, got %s", c.RequestTimeout))
	}
	if c.EtcdTimeout <= 0 {
		errs = append(errs, fmt.Errorf("etcd timeout must be positive, got %s", c.EtcdTimeout))
	}
	if c.MaxRequestBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("max request body bytes must be positive, got %d", c.MaxRequestBodyBytes))
	}
	if c.MaxWatchesPerUser <= 0 {
		errs = append(errs, fmt.Errorf("max watches per user must be positive, got %d", c.MaxWatchesPerUser))
	}
	if c.MaxRequestsInFlight <= 0 {
		errs = append(errs, fmt.Errorf("max requests in flight must be positive, got %d", c.MaxRequestsInFlight))
	}
	if c.ServiceIPRange == (allocator.IPRange{}) || c.NodePortRange == (allocator.PortRange{}) {
		errs = append(errs, errors.New("the service cluster IP and node port ranges are not set"))
	}
	if c.Logger == nil {
		errs = append(errs, errors.New("logger is not set"))
	}
	return errors.Join(errs...)
}

// Server is the API server.
type Server struct {
	logger         *slog.Logger
	scheme         *runtime.Scheme
	codecs         runtime.NegotiatedSerializer
	registry       *registry.Registry
	discovery      *discovery
	openapi        *openapi.Builder
	openapiBuilt   time.Time // the Last-Modified of the OpenAPI documents
	store          *storage.Store
	encryption     *storage.Encryption
	requestInfo    request.RequestInfoResolver
	authn          authenticator.Request
	tokenAuthn     authenticator.Token
	reader         cacheReader
	authz          authorizer.Authorizer
	rbac           *rbac.Authorizer
	auditor        *filters.Auditor
	metrics        *prometheus.Registry // served at /metrics
	limits         *filters.Limits
	respond        *responses.Writer
	tlsConfig      *tls.Config
	handler        http.Handler
	resources      *handlers.Handler
	policies       policyStage
	etcd           *clientv3.Client
	caches         map[schema.GroupResource]*storage.Cacher
	services       *allocator.Services
	anonymous      *filters.AnonymousPolicy
	requestTimeout time.Duration
	profiling      bool
}

// watchHistory is how many events each watch cache remembers for watches
// that resume at an earlier resourceVersion.
const watchHistory = 10000

// New builds the server from c.
func New(c Config) (*Server, error) {
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("apiserver config: %w", err)
	}
	scheme, err := registry.NewScheme()
	if err != nil {
		return nil, err
	}
	reg, err := registry.New(scheme)
	if err != nil {
		return nil, err
	}
	var transformers value.ResourceTransformers = c.Encryption
	if c.without.encryption {
		transformers = nil
	}
	store, err := storage.New(c.Etcd, scheme, transformers, c.EtcdTimeout)
	if err != nil {
		return nil, err
	}
	caches := map[schema.GroupResource]*storage.Cacher{}
	for _, res := range reg.Stored() {
		caches[res.GroupResource()] = storage.NewCacher(store, res.GroupResource(), res.NewObject, watchHistory, c.Logger)
	}
	services, err := allocator.New(store, c.ServiceIPRange, c.NodePortRange)
	if err != nil {
		return nil, err
	}
	indexBindings(caches)
	indexPods(caches)
	reader := cacheReader{store: store, caches: caches}
	docs, err := newOpenAPI(reg)
	if err != nil {
		return nil, err
	}
	// client-go's schema has no Scale; our OpenAPI definitions do.
	scaleTypes, err := docs.TypeConverter()
	if err != nil {
		return nil, err
	}
	authenticators, err := authn.New(authn.Config{ClientCA: c.ClientCA, ServiceAccounts: c.TokenVerifier, Audiences: c.APIAudiences, Objects: reader, Secrets: reader, OIDC: c.OIDC})
	if err != nil {
		return nil, err
	}
	rbacAuthz, err := rbac.New(reader)
	if err != nil {
		return nil, err
	}
	nodeAuthz, err := node.New(reader)
	if err != nil {
		return nil, err
	}
	bootstrapAuthz, err := bootstrapper.New(reader)
	if err != nil {
		return nil, err
	}
	// Nodes first: it decides for node identities only; then a bootstrap
	// token's reads of its own CSRs; everyone else, and what they have no
	// opinion on, goes to RBAC.
	authz, err := union.New(
		union.NamedAuthorizer{AuthorizerName: "Node", Authorizer: nodeAuthz},
		union.NamedAuthorizer{AuthorizerName: "Bootstrapper", Authorizer: bootstrapAuthz},
		union.NamedAuthorizer{AuthorizerName: "RBAC", Authorizer: rbacAuthz},
	)
	if err != nil {
		return nil, err
	}
	rego, err := opa.NewPlugin(c.AdmissionPolicies, c.AdmissionTimeout, c.Logger)
	if err != nil {
		return nil, err
	}
	for _, gr := range c.AdmissionReplicate {
		if _, ok := caches[gr]; !ok {
			return nil, fmt.Errorf("admission policies: %s cannot be replicated: it is not a stored resource", gr)
		}
	}
	notReadySecs, unreachableSecs := admission.KubeDefaultTolerationSeconds, admission.KubeDefaultTolerationSeconds
	if c.DefaultNotReadyTolerationSeconds != nil {
		notReadySecs = *c.DefaultNotReadyTolerationSeconds
	}
	if c.DefaultUnreachableTolerationSeconds != nil {
		unreachableSecs = *c.DefaultUnreachableTolerationSeconds
	}
	tolerations, err := admission.NewDefaultTolerationSeconds(notReadySecs, unreachableSecs)
	if err != nil {
		return nil, err
	}
	mutating, validating, err := admissionChains(reader, authz, rbacAuthz, tolerations, c.APIAudiences, append([]k8sadmission.Interface{rego}, c.extraAdmission...))
	if err != nil {
		return nil, err
	}
	if c.without.admission {
		mutating, validating = k8sadmission.NewChainHandler(), k8sadmission.NewChainHandler()
	}
	codecs := registry.NewCodecs(scheme)
	respond := responses.New(scheme, codecs, c.Logger, c.DisableCompressionForClientIPs)
	resources, err := handlers.New(handlers.Config{
		Scheme:             scheme,
		Codecs:             codecs,
		Registry:           reg,
		Store:              store,
		Caches:             caches,
		Allocators:         map[schema.GroupResource]handlers.Allocator{servicesGR: services},
		ScaleTypes:         scaleTypes,
		Mutating:           mutating,
		Validating:         validating,
		Reviewer:           reviewer{Authorizer: authz, Token: authenticators.Token, rbac: rbacAuthz, logger: c.Logger},
		TokenIssuer:        c.TokenIssuer,
		TokenObjects:       reader,
		APIAudiences:       c.APIAudiences,
		MaxTokenExpiration: c.MaxTokenExpiration,
		MaxWatchesPerUser:  c.MaxWatchesPerUser,
		Responses:          respond,
		Logger:             c.Logger,
		Observe:            c.observeWrite,
	})
	if err != nil {
		return nil, err
	}
	metrics := prometheus.NewRegistry()
	auditMetrics, err := audit.NewMetrics(metrics)
	if err != nil {
		return nil, err
	}
	if err := metrics.Register(c.Encryption.Wear()); err != nil {
		return nil, err
	}
	s := &Server{
		logger:         c.Logger,
		metrics:        metrics,
		scheme:         scheme,
		codecs:         codecs,
		registry:       reg,
		discovery:      newDiscovery(reg),
		openapi:        docs,
		openapiBuilt:   time.Now(),
		store:          store,
		encryption:     c.Encryption,
		requestInfo:    filters.NewRequestInfoResolver(),
		authn:          authenticators.Request,
		tokenAuthn:     authenticators.Token,
		reader:         reader,
		authz:          authz,
		rbac:           rbacAuthz,
		auditor:        filters.NewAuditor(c.AuditPolicy, c.AuditSink, auditMetrics, c.Logger),
		limits:         filters.NewLimits(c.MaxRequestBodyBytes, c.RequestTimeout, c.MaxRequestsInFlight),
		etcd:           c.Etcd,
		caches:         caches,
		services:       services,
		requestTimeout: c.RequestTimeout,
		profiling:      c.Profiling,
		resources:      resources,
		respond:        respond,
		policies: policyStage{
			plugin:    rego,
			data:      c.AdmissionData,
			replicate: c.AdmissionReplicate,
			dir:       c.AdmissionPolicyDir,
		},
	}
	// A request that follows a write to a replicated kind is decided by
	// it: the policies' data waits for the server's own writes.
	if c.AdmissionData != nil && len(c.AdmissionReplicate) > 0 {
		byResource := map[string]schema.GroupResource{}
		var replicated []string
		for _, gr := range c.AdmissionReplicate {
			byResource[gr.Resource] = gr
			replicated = append(replicated, gr.Resource)
		}
		c.AdmissionData.Follow(replicated, func(resource string) int64 { return store.Written(byResource[resource]) })
	}
	s.anonymous = filters.HealthOnly()
	if c.AnonymousAll || len(c.AnonymousPaths) > 0 {
		s.anonymous = filters.NewAnonymousPolicy(c.AnonymousAll, c.AnonymousPaths)
	}
	s.tlsConfig = &tls.Config{
		MinVersion:   tls.VersionTLS12,
		CipherSuites: pki.CipherSuites(),
		Certificates: []tls.Certificate{c.ServingCert},
		// A client certificate is optional (health probes need none),
		// but one that does not verify against the cluster CA fails the
		// handshake.
		ClientAuth: tls.VerifyClientCertIfGiven,
		ClientCAs:  c.ClientCA,
		NextProtos: []string{"h2", "http/1.1"},
	}
	s.handler = buildChain(http.HandlerFunc(s.route), s.pipeline(), nil)
	return s, nil
}

// Run creates the bootstrap objects, starts the watch caches, then serves
// HTTPS on ln until ctx is done. Shutdown stops accepting connections,
// waits up to 10 seconds for requests in flight, then stops the caches.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	err := s.bootstrap(ctx)
	if err == nil {
		err = s.bootstrapAPIService(ctx, ln.Addr())
	}
	if err != nil {
		ln.Close()
		if ctx.Err() != nil {
			// Stopped while starting: not a failure.
			return nil
		}
		return err
	}
	cacheCtx, stopCaches := context.WithCancel(context.Background())
	var caches sync.WaitGroup
	defer func() {
		stopCaches()
		caches.Wait()
	}()
	for _, c := range s.caches {
		caches.Go(func() { c.Run(cacheCtx) })
	}
	caches.Go(func() { s.encryption.Run(cacheCtx, storage.EncryptionReloadInterval) })
	// Each server records the configuration it runs, for a rotation to
	// wait on; its id is its own, new at each start.
	caches.Go(func() { s.encryption.Publish(cacheCtx, s.etcd, uuid.NewString()) })
	caches.Go(func() { s.encryption.Wear().Run(cacheCtx, s.etcd, wearFlushInterval) })
	// Serve only once authorization can decide: before its caches are
	// filled it would refuse everything.
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for gr, c := range s.caches {
		if _, err := c.List(syncCtx, storage.ListPrefix(gr, ""), 0, func(runtime.Object) error { return nil }); err != nil {
			ln.Close()
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	caches.Go(func() { s.aggregateClusterRoles(cacheCtx) })
	// The policies decide by the replicated objects: serve once they
	// have them.
	if err := s.policies.start(cacheCtx, syncCtx, &caches, s.caches, s.logger); err != nil {
		ln.Close()
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	srv := &http.Server{
		Handler:           s.handler,
		TLSConfig:         s.tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       s.requestTimeout,
		WriteTimeout:      s.requestTimeout + 10*time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    1 << 20,
		// Refused TLS handshakes (a foreign CA, an old protocol) never
		// become requests, so they are not audited: they are logged.
		ErrorLog:    slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	if err := http2.ConfigureServer(srv, newHTTP2Server()); err != nil {
		ln.Close()
		return fmt.Errorf("configure HTTP/2: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	s.logger.Info("API server serving", "address", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
	}
	<-errc
	return nil
}

// route serves what passed the filter chain.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	info, _ := request.RequestInfoFrom(r.Context())
	if info != nil && info.IsResourceRequest {
		s.resources.ServeResource(w, r, info)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.respond.Error(w, r, responses.NotFound())
		return
	}
	switch r.URL.Path {
	case "/version", "/version/":
		s.respond.JSON(w, http.StatusOK, Version)
		return
	case "/livez", "/healthz", "/readyz":
		s.health(w, r)
		return
	case "/metrics":
		promhttp.HandlerFor(s.metrics, promhttp.HandlerOpts{}).ServeHTTP(w, r)
		return
	}
	if s.profiling && (r.URL.Path == "/debug/pprof" || strings.HasPrefix(r.URL.Path, "/debug/pprof/")) {
		s.serveProfile(w, r)
		return
	}
	if s.serveOpenAPI(w, r) {
		return
	}
	if !s.discovery.serve(w, r, s.respond) {
		s.respond.Error(w, r, responses.NotFound())
	}
}

// serveProfile answers /debug/pprof/ as net/http/pprof does: the index,
// a profile by name (heap, goroutine, allocs, block, mutex,
// threadcreate), profile?seconds=N (CPU), trace?seconds=N and symbol. The
// command line is not served: it is the server's flags, which no profile
// needs. A CPU profile or trace longer than the request timeout ends with
// it.
func (s *Server) serveProfile(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/debug/pprof" {
		// The index's links are relative to the directory.
		http.Redirect(w, r, "/debug/pprof/", http.StatusMovedPermanently)
		return
	}
	switch strings.TrimPrefix(r.URL.Path, "/debug/pprof/") {
	case "profile":
		pprof.Profile(w, r)
	case "trace":
		pprof.Trace(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "cmdline":
		s.respond.Error(w, r, responses.NotFound())
	default:
		pprof.Index(w, r)
	}
}

// wearFlushInterval is how often the server adds its count of each
// AES-GCM key's writes to etcd's.
const wearFlushInterval = 5 * time.Second

// health answers the probes: /livez when the process serves, /readyz and
// /healthz when etcd answers too. ?verbose lists each check, and warns of
// an AES-GCM key that has encrypted more values than it should: a warning,
// not a failure, since the server still serves.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	var checks []string
	failed := false
	if r.URL.Path != "/livez" {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := s.etcd.Get(ctx, storage.Prefix, clientv3.WithKeysOnly()); err != nil {
			s.logger.WarnContext(ctx, "readiness check failed", "err", err)
			checks, failed = append(checks, "[-]etcd failed: reason withheld"), true
		} else {
			checks = append(checks, "[+]etcd ok")
		}
		ready := true
		for gr, c := range s.caches {
			if !c.Ready() {
				checks, failed, ready = append(checks, "[-]watch cache "+gr.String()+" not ready"), true, false
			}
		}
		if ready {
			checks = append(checks, "[+]watch caches ok")
		}
		// Without its KMS plugin the server can neither read nor write
		// what the plugin protects.
		if err := s.encryption.Check(r); err != nil {
			s.logger.WarnContext(ctx, "readiness check failed: KMS plugin", "err", err)
			checks, failed = append(checks, "[-]kms-providers failed: reason withheld"), true
		} else {
			checks = append(checks, "[+]kms-providers ok")
		}
		wear := "[+]encryption-key-wear ok"
		for _, k := range s.encryption.Wear().Keys() {
			if k.Worn {
				wear += "; warning: " + k.String()
			}
		}
		checks = append(checks, wear)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if failed {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	var b strings.Builder
	for _, c := range checks {
		if failed && strings.HasPrefix(c, "[-]") || r.URL.Query().Has("verbose") {
			b.WriteString(c + "\n")
		}
	}
	probe := strings.TrimPrefix(r.URL.Path, "/")
	switch {
	case failed:
		b.WriteString(probe + " check failed\n")
	case r.URL.Query().Has("verbose"):
		b.WriteString(probe + " check passed\n")
	default:
		b.WriteString("ok")
	}
	w.Write([]byte(b.String()))
}
