package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/google/uuid"

	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/apiserver/allocator"
	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/etcd/etcdtest"
	"github.com/trustplane/trustplane/pki"
	"github.com/trustplane/trustplane/rbac"
)

// testServer is an API server on a loopback port, over a real etcd with
// mutual TLS, stopped at cleanup.
type testServer struct {
	url      string
	etcd     *etcdtest.Etcd
	server   *Server
	auditLog string
}

type serverOption func(*Config)

func startServer(t testing.TB, opts ...serverOption) *testServer {
	t.Helper()
	return startServerOn(t, etcdtest.Start(t), opts...)
}

// startServerOn starts an API server over e, which other servers may
// share, as the API servers of one cluster do: the first writes the
// encryption key they all use; each has its own audit log.
func startServerOn(t testing.TB, e *etcdtest.Etcd, opts ...serverOption) *testServer {
	t.Helper()
	cfg, auditLog := testConfig(t, e, opts...)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return runServer(t, e, s, auditLog)
}

// testConfig is the configuration of a test server over e, with its audit
// log's path.
func testConfig(t testing.TB, e *etcdtest.Etcd, opts ...serverOption) (Config, string) {
	t.Helper()
	encPath := filepath.Join(e.Dir, "encryption-config.yaml")
	if _, err := os.Stat(encPath); errors.Is(err, fs.ErrNotExist) {
		enc, err := storage.NewEncryptionConfig()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(encPath, enc, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	encryption, err := storage.LoadEncryption(t.Context(), encPath, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := audit.ParsePolicy([]byte(audit.DefaultPolicy))
	if err != nil {
		t.Fatal(err)
	}
	auditLog := filepath.Join(t.TempDir(), "audit", "audit.log")
	if _, err := audit.EnsureSigningKey(e.PKI.Dir); err != nil {
		t.Fatal(err)
	}
	signer, err := audit.LoadSigner(e.PKI.Dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := audit.OpenWriter(auditLog, signer, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	serving, err := pki.LoadKeyPair(e.PKI.Dir, pki.APIServerName)
	if err != nil {
		t.Fatal(err)
	}
	issuer, verifier, err := LoadServiceAccountKeys(e.PKI.Dir, DefaultServiceAccountIssuer)
	if err != nil {
		t.Fatal(err)
	}
	data := opa.NewData()
	policies, err := data.Compile(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		AdmissionPolicies:   policies,
		AdmissionData:       data,
		AdmissionTimeout:    opa.DefaultTimeout,
		TokenIssuer:         issuer,
		TokenVerifier:       verifier,
		APIAudiences:        []string{DefaultServiceAccountIssuer},
		MaxTokenExpiration:  DefaultMaxTokenExpiration,
		ServingCert:         serving,
		ClientCA:            e.PKI.ClusterCA.Pool(),
		Etcd:                e.Client(t),
		Encryption:          encryption,
		AuditPolicy:         policy,
		AuditSink:           w,
		RequestTimeout:      DefaultRequestTimeout,
		EtcdTimeout:         DefaultEtcdTimeout,
		MaxRequestBodyBytes: DefaultMaxRequestBodyBytes,
		MaxRequestsInFlight: DefaultMaxRequestsInFlight,
		MaxWatchesPerUser:   DefaultMaxWatchesPerUser,
		ServiceIPRange:      mustIPRange(t, DefaultServiceClusterIPRange),
		NodePortRange:       mustPortRange(t, DefaultServiceNodePortRange),
		Logger:              slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg, auditLog
}

// runServer runs s, serving on a free loopback port, until the test ends.
func runServer(t testing.TB, e *etcdtest.Etcd, s *Server, auditLog string) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	ts := &testServer{url: "https://" + ln.Addr().String(), etcd: e, server: s, auditLog: auditLog}
	ts.waitReady(t)
	ts.defaultServiceAccount(t, metav1.NamespaceDefault)
	return ts
}

// defaultServiceAccount gives namespace its "default" ServiceAccount, as
// the controller manager does in a cluster, so that pods may be created
// there; written to storage, it is no request of the test's.
func (ts *testServer) defaultServiceAccount(t testing.TB, namespace string) {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: namespace, UID: types.UID(uuid.NewString())}}
	err := ts.server.store.Create(context.Background(), serviceAccountsGR, storage.Key(serviceAccountsGR, namespace, "default"), sa)
	if err != nil && !errors.Is(err, storage.ErrAlreadyExists) {
		t.Fatal(err)
	}
}

func (ts *testServer) waitReady(t testing.TB) {
	t.Helper()
	// As admin: the anonymous paths depend on the configuration.
	c := ts.httpClient(t, admin)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := c.Get(ts.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// identity is a client certificate from the cluster CA.
type identity struct {
	user   string
	groups []string
}

var (
	admin     = &identity{user: "admin", groups: []string{rbac.ClusterAdminsGroup}}
	scheduler = &identity{user: rbac.SchedulerUser}
)

func (ts *testServer) certificate(t testing.TB, id *identity) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := ts.etcd.PKI.ClusterCA.Issue(pki.Request{CommonName: id.user, Organizations: id.groups, Profile: pki.Client, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// restConfig is a client-go configuration for id, or without credentials
// when id is nil.
func (ts *testServer) restConfig(t testing.TB, id *identity) *rest.Config {
	t.Helper()
	cfg := &rest.Config{
		Host:            ts.url,
		TLSClientConfig: rest.TLSClientConfig{CAData: ts.etcd.PKI.ClusterCA.CertPEM},
		QPS:             -1,
	}
	if id != nil {
		cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = ts.certificate(t, id)
	}
	return cfg
}

func (ts *testServer) clientset(t testing.TB, id *identity) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(ts.restConfig(t, id))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// httpClient is a plain HTTPS client for id (nil: no certificate).
func (ts *testServer) httpClient(t testing.TB, id *identity) *http.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: ts.etcd.PKI.ClusterCA.Pool()}
	if id != nil {
		certPEM, keyPEM := ts.certificate(t, id)
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustIPRange(t testing.TB, s string) allocator.IPRange {
	t.Helper()
	r, err := allocator.ParseIPRange(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustPortRange(t testing.TB, s string) allocator.PortRange {
	t.Helper()
	r, err := allocator.ParsePortRange(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
