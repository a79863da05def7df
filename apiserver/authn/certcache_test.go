package authn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
)

// testCert is a certificate and its key.
type testCert struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// newTestCert returns a certificate for cn, valid until notAfter, signed
// by parent or, without one, by itself: a CA when isCA, else a client
// certificate.
func newTestCert(t testing.TB, parent *testCert, cn string, notAfter time.Time, isCA bool) *testCert {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if isCA {
		tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageCertSign, nil
		tmpl.BasicConstraintsValid, tmpl.IsCA = true, true
	}
	key := newKey(t)
	signer := &testCert{cert: tmpl, key: key}
	if parent != nil {
		signer = parent
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer.cert, &key.PublicKey, signer.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCert{cert: cert, key: key}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// countingAuthenticator counts the requests that reach the authenticator
// it wraps.
type countingAuthenticator struct {
	inner authenticator.Request
	calls int
}

func (c *countingAuthenticator) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	c.calls++
	return c.inner.AuthenticateRequest(r)
}

func TestCachedCerts(t *testing.T) {
	start := time.Now()
	root := newTestCert(t, nil, "root", start.Add(24*time.Hour), true)
	// The intermediate expires before the certificates it issues: a
	// chain through it is remembered until then.
	intermediate := newTestCert(t, root, "intermediate", start.Add(time.Hour), true)
	foreign := newTestCert(t, nil, "foreign", start.Add(24*time.Hour), true)
	client := func(ca *testCert, cn string) *x509.Certificate {
		return newTestCert(t, ca, cn, start.Add(2*time.Hour), false).cert
	}
	chains := map[string][]*x509.Certificate{
		"alice":         {client(root, "alice")},
		"bob":           {client(root, "bob")},
		"carol":         {client(root, "carol")},
		"dave via int.": {client(intermediate, "dave"), intermediate.cert},
		"foreign":       {client(foreign, "mallory")},
		"none":          nil,
	}

	type step struct {
		chain string
		after time.Duration // since start
		user  string        // "" for a refusal
		calls int           // requests that reached the verifier so far
	}
	for _, tt := range []struct {
		name  string
		max   int
		steps []step
	}{
		{"a verified chain is remembered", 10, []step{
			{"alice", 0, "alice", 1},
			{"alice", time.Minute, "alice", 1},
			{"bob", time.Minute, "bob", 2},
			{"alice", time.Minute, "alice", 2},
		}},
		{"a refused chain is checked every time", 10, []step{
			{"foreign", 0, "", 1},
			{"foreign", 0, "", 2},
		}},
		{"a request without certificates is never remembered", 10, []step{
			{"none", 0, "", 1},
			{"none", 0, "", 2},
		}},
		{"until the leaf expires", 10, []step{
			{"alice", 0, "alice", 1},
			{"alice", 2*time.Hour - time.Second, "alice", 1},
			{"alice", 2 * time.Hour, "alice", 2},
		}},
		{"until the first certificate of the chain expires", 10, []step{
			{"dave via int.", 0, "dave", 1},
			{"dave via int.", time.Hour - time.Second, "dave", 1},
			{"dave via int.", time.Hour, "dave", 2},
		}},
		{"at most max chains, the least recently used dropped", 2, []step{
			{"alice", 0, "alice", 1},
			{"bob", 0, "bob", 2},
			{"alice", 0, "alice", 2},
			{"carol", 0, "carol", 3}, // drops bob
			{"alice", 0, "alice", 3}, // kept
			{"carol", 0, "carol", 3}, // kept
			{"bob", 0, "bob", 4},     // verified again, dropping alice
			{"alice", 0, "alice", 5}, // verified again
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := start
			pool := x509.NewCertPool()
			pool.AddCert(root.cert)
			inner := &countingAuthenticator{inner: x509request.New(x509.VerifyOptions{
				Roots:     pool,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			}, x509request.CommonNameUserConversion)}
			c, err := newCachedCerts(inner, tt.max, func() time.Time { return now })
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				now = start.Add(s.after)
				r := &http.Request{TLS: &tls.ConnectionState{PeerCertificates: chains[s.chain]}}
				resp, ok, _ := c.AuthenticateRequest(r)
				user := ""
				if ok {
					user = resp.User.GetName()
				}
				if user != s.user || inner.calls != s.calls {
					t.Errorf("step %d, %s at +%v: user %q, %d verifications; want %q, %d", i, s.chain, s.after, user, inner.calls, s.user, s.calls)
				}
				if n := c.entries.Len(); n > tt.max {
					t.Errorf("step %d: %d chains remembered, max %d", i, n, tt.max)
				}
			}
		})
	}
}

// BenchmarkCachedCerts measures a request whose chain is remembered: the
// chain's hash and the lookup.
func BenchmarkCachedCerts(b *testing.B) {
	root := newTestCert(b, nil, "root", time.Now().Add(time.Hour), true)
	pool := x509.NewCertPool()
	pool.AddCert(root.cert)
	c, err := newCachedCerts(x509request.New(x509.VerifyOptions{
		Roots:     pool,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, x509request.CommonNameUserConversion), 10000, time.Now)
	if err != nil {
		b.Fatal(err)
	}
	r := &http.Request{TLS: &tls.ConnectionState{PeerCertificates: []*x509.Certificate{newTestCert(b, root, "alice", time.Now().Add(time.Hour), false).cert}}}
	if _, ok, err := c.AuthenticateRequest(r); !ok {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok, _ := c.AuthenticateRequest(r); !ok {
				b.Fatal("refused")
			}
		}
	})
}
