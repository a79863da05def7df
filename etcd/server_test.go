package etcd_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trustplane/trustplane/etcd"
	"github.com/trustplane/trustplane/etcd/etcdtest"
	"github.com/trustplane/trustplane/pki"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestAPIServerMayUseOnlyRegistry(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	if _, err := cli.Put(ctx(t), "/registry/configmaps/default/a", "v"); err != nil {
		t.Fatalf("put under /registry/: %v", err)
	}
	if r, err := cli.Get(ctx(t), "/registry/configmaps/default/a"); err != nil || len(r.Kvs) != 1 {
		t.Fatalf("get under /registry/: %v %v", r, err)
	}
	for _, key := range []string{"/other", "/registry", "/registrx/a", "a"} {
		if _, err := cli.Put(ctx(t), key, "v"); err == nil {
			t.Errorf("put %q outside /registry/ succeeded", key)
		}
		if _, err := cli.Get(ctx(t), key); err == nil {
			t.Errorf("get %q outside /registry/ succeeded", key)
		}
	}
	if _, err := cli.Get(ctx(t), "", clientv3.WithPrefix()); err == nil {
		t.Error("read of the whole keyspace succeeded")
	}
	if _, err := cli.UserList(ctx(t)); err == nil {
		t.Error("the API server could administer etcd users")
	}
}

func TestForeignIdentitiesAreRefused(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	if _, err := cli.Put(ctx(t), "/registry/secrets/default/s", "ciphertext"); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()

	// A certificate from the etcd CA for a user etcd does not know.
	if _, err := pki.EnsureLeaf(e.PKI.EtcdCA, other, "stranger", pki.Request{CommonName: "stranger", Profile: pki.Client, Validity: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// A certificate for the API server's name, but from the cluster CA.
	if _, err := pki.EnsureLeaf(e.PKI.ClusterCA, other, "impostor", pki.Request{CommonName: pki.EtcdClientCommonName, Profile: pki.Client, Validity: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// root has no password and no certificate is issued for it, but try a
	// root certificate from the cluster CA as well.
	if _, err := pki.EnsureLeaf(e.PKI.ClusterCA, other, "root", pki.Request{CommonName: "root", Profile: pki.Client, Validity: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"stranger", "impostor", "root"} {
		t.Run(name, func(t *testing.T) {
			cfg := e.ClientConfig
			cfg.CertFile = filepath.Join(other, name+".crt")
			cfg.KeyFile = filepath.Join(other, name+".key")
			cfg.DialTimeout = 2 * time.Second
			c, err := etcd.NewClient(ctx(t), cfg)
			if err == nil {
				defer c.Close()
				r, err := c.Get(ctx(t), "/registry/", clientv3.WithPrefix())
				t.Fatalf("%s read the registry: %v, %v", name, r, err)
			}
		})
	}

	t.Run("no client certificate", func(t *testing.T) {
		tlsConfig, err := e.ClientConfig.TLSConfig()
		if err != nil {
			t.Fatal(err)
		}
		tlsConfig.Certificates = nil
		addr := strings.TrimPrefix(e.Server.ClientURL(), "https://")
		conn, err := tls.Dial("tcp", addr, tlsConfig)
		if err == nil {
			// TLS 1.3 reports a missing client certificate on the first read.
			conn.SetDeadline(time.Now().Add(2 * time.Second))
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		if err == nil {
			t.Fatal("connection without a client certificate was accepted")
		}
	})
}

func TestRestartKeepsDataAndAuth(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	if _, err := cli.Put(ctx(t), "/registry/namespaces/a", "v"); err != nil {
		t.Fatal(err)
	}
	cli.Close()
	e.Server.Close()

	e2 := etcdtest.StartIn(t, e.Dir, e.PKI)
	cli2 := e2.Client(t)
	r, err := cli2.Get(ctx(t), "/registry/namespaces/a")
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("after restart: %v %v", r, err)
	}
	if _, err := cli2.Get(ctx(t), "/other"); err == nil {
		t.Error("after restart, authentication is off")
	}
}

func TestStartRejectsMissingPKI(t *testing.T) {
	_, err := etcd.Start(ctx(t), etcd.Config{Name: "x", DataDir: t.TempDir(), PKIDir: filepath.Join(t.TempDir(), "none"), ClientAddress: "127.0.0.1:1", PeerAddress: "127.0.0.1:2"})
	if err == nil || !strings.Contains(err.Error(), "ca.crt") || !strings.Contains(err.Error(), `etcd HTTP address ""`) {
		t.Fatalf("err = %v, want it to name the missing CA and HTTP address", err)
	}
}

// etcd's HTTP endpoints are on their own address, behind the same mutual
// TLS, so that the client address serves gRPC alone.
func TestHTTPEndpointsHaveTheirOwnAddress(t *testing.T) {
	e := etcdtest.Start(t)
	tlsConfig, err := e.ClientConfig.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	get := func(tlsConfig *tls.Config, url string) (int, error) {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 5 * time.Second}
		defer c.CloseIdleConnections()
		resp, err := c.Get(url)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := get(tlsConfig, e.Server.HTTPURL()+"/health"); err != nil || code != http.StatusOK {
		t.Errorf("GET /health on the HTTP address: %d %v, want 200", code, err)
	}
	if code, err := get(tlsConfig, e.Server.ClientURL()+"/health"); err == nil && code == http.StatusOK {
		t.Error("GET /health on the client address answered 200: HTTP is still served beside gRPC")
	}
	anonymous := tlsConfig.Clone()
	anonymous.Certificates = nil
	if code, err := get(anonymous, e.Server.HTTPURL()+"/health"); err == nil {
		t.Errorf("GET /health without a client certificate: %d, want a refused handshake", code)
	}
}
