package authn

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"

	"github.com/trustplane/trustplane/apiserver/authn/serviceaccount"
)

func TestTokenCache(t *testing.T) {
	start := time.Now().Truncate(time.Second)
	token := func(name string) (key [32]byte, v *verifiedToken) {
		return sha256.Sum256([]byte(name)), newVerifiedToken(&serviceaccount.Claims{
			Namespace: "default", Name: name, NotBefore: start, Expiry: start.Add(time.Hour),
		})
	}
	type step struct {
		put, get string // one of them
		after    time.Duration
		found    bool // for a get
	}
	for _, tt := range []struct {
		name  string
		max   int
		steps []step
	}{
		{"remembered until it expires", 10, []step{
			{put: "a"},
			{get: "a", after: time.Hour - time.Second, found: true},
			{get: "a", after: time.Hour},
			// An expired token is dropped, not kept for a clock that
			// goes back.
			{get: "a", after: time.Hour - time.Second},
		}},
		{"not before its nbf, a minute of skew allowed", 10, []step{
			{put: "a"},
			{get: "a", after: -time.Minute, found: true},
			{get: "a", after: -time.Minute - time.Second},
			{get: "a"},
		}},
		{"at most max, the least recently used dropped", 2, []step{
			{put: "a"},
			{put: "b"},
			{get: "a", found: true},
			{put: "c"}, // drops b
			{get: "b"},
			{get: "a", found: true},
			{get: "c", found: true},
			{put: "d"}, // drops a
			{get: "a"},
			{get: "c", found: true},
			{get: "d", found: true},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newTokenCache(tt.max)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				if s.put != "" {
					c.put(token(s.put))
				} else {
					key, want := token(s.get)
					got, ok := c.get(key, start.Add(s.after))
					if ok != s.found || (ok && got.claims.Name != want.claims.Name) {
						t.Errorf("step %d: get %s at %+v: %v, %v; want found %v", i, s.get, s.after, got, ok, s.found)
					}
				}
				if n := c.entries.Len(); n > tt.max {
					t.Errorf("step %d: %d tokens remembered, max %d", i, n, tt.max)
				}
			}
		})
	}
}

func TestNewTokenCacheRefusesNoRoom(t *testing.T) {
	if _, err := newTokenCache(0); err == nil {
		t.Error("a cache of 0 tokens: no error")
	}
}

// testObjects is an ObjectGetter over a fixed set of objects, read
// without locking: the tests do not change it while tokens are checked.
type testObjects struct {
	serviceAccounts map[string]*corev1.ServiceAccount // by namespace/name
	bound           map[string]types.UID              // by kind/namespace/name
}

var _ ObjectGetter = (*testObjects)(nil)

func (o *testObjects) ServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return o.serviceAccounts[namespace+"/"+name], nil
}

func (o *testObjects) Bound(_ context.Context, kind, namespace, name string) (types.UID, error) {
	return o.bound[kind+"/"+namespace+"/"+name], nil
}

const testIssuer = "https://kubernetes.default.svc.cluster.local"

// newTestIssuer returns an issuer of ServiceAccount tokens and a verifier
// of its tokens for testIssuer's audience.
func newTestIssuer(t testing.TB) (*serviceaccount.Issuer, *serviceaccount.Verifier) {
	t.Helper()
	key := newKey(t)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	iss, err := serviceaccount.LoadIssuer(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), testIssuer)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	ver, err := serviceaccount.LoadVerifier([][]byte{pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})}, testIssuer, []string{testIssuer})
	if err != nil {
		t.Fatal(err)
	}
	return iss, ver
}

// The cache remembers verified tokens only, and never the live lookups.
func TestServiceAccountTokensCache(t *testing.T) {
	start := time.Now().Truncate(time.Second)
	iss, ver := newTestIssuer(t)
	_, otherVer := newTestIssuer(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "builder", UID: "sa-uid"}}
	issue := func(audiences ...string) string {
		tok, err := iss.Issue(serviceaccount.Claims{
			Namespace: "default", Name: "builder", UID: "sa-uid",
			Bound:     &serviceaccount.BoundObject{Kind: serviceaccount.KindPod, Name: "builder-1", UID: "pod-uid"},
			Audiences: audiences, Expiry: start.Add(time.Hour),
		}, start)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	type step struct {
		after     time.Duration
		audiences []string // of the request; none: the API server's
		ok        bool
		cached    bool // whether the token is remembered afterwards
	}
	for _, tt := range []struct {
		name     string
		verifier *serviceaccount.Verifier
		token    string
		change   func(*testObjects) // after the first step
		steps    []step
	}{
		{"a verified token is remembered", ver, issue(testIssuer), nil, []step{
			{ok: true, cached: true},
			{after: time.Minute, ok: true, cached: true},
		}},
		{"a refused token is not", otherVer, issue(testIssuer), nil, []step{
			{},
			{},
		}},
		{"nor one for another audience", ver, issue("https://elsewhere"), nil, []step{
			{},
			{},
		}},
		{"a remembered token is for its own audiences only", ver, issue(testIssuer), nil, []step{
			{ok: true, cached: true},
			{audiences: []string{"https://elsewhere"}, cached: true},
			{audiences: []string{"https://elsewhere", testIssuer}, ok: true, cached: true},
		}},
		{"until it expires", ver, issue(testIssuer), nil, []step{
			{ok: true, cached: true},
			{after: time.Hour - time.Second, ok: true, cached: true},
			// Past exp and the verifier's minute of leeway.
			{after: time.Hour + 2*time.Minute},
		}},
		{"the service account is looked up every time", ver, issue(testIssuer), func(o *testObjects) {
			o.serviceAccounts = nil
		}, []step{
			{ok: true, cached: true},
			{cached: true},
		}},
		{"and so is the bound object", ver, issue(testIssuer), func(o *testObjects) {
			o.bound = map[string]types.UID{"Pod/default/builder-1": "another-pod-uid"}
		}, []step{
			{ok: true, cached: true},
			{cached: true},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objects := &testObjects{
				serviceAccounts: map[string]*corev1.ServiceAccount{"default/builder": sa},
				bound:           map[string]types.UID{"Pod/default/builder-1": "pod-uid"},
			}
			cache, err := newTokenCache(10)
			if err != nil {
				t.Fatal(err)
			}
			now := start
			a := &serviceAccountTokens{verifier: tt.verifier, audiences: []string{testIssuer}, objects: objects, cache: cache, now: func() time.Time { return now }}
			for i, s := range tt.steps {
				if i == 1 && tt.change != nil {
					tt.change(objects)
				}
				now = start.Add(s.after)
				ctx := context.Background()
				if s.audiences != nil {
					ctx = authenticator.WithAudiences(ctx, s.audiences)
				}
				resp, ok, err := a.AuthenticateToken(ctx, tt.token)
				if ok != s.ok || (ok && resp.User.GetName() != "system:serviceaccount:default:builder") || (ok != (err == nil)) {
					t.Errorf("step %d: %v, %v, %v; want ok %v", i, resp, ok, err, s.ok)
				}
				_, cached := cache.entries.Peek(sha256.Sum256([]byte(tt.token)))
				if cached != s.cached {
					t.Errorf("step %d: remembered %v, want %v", i, cached, s.cached)
				}
			}
		})
	}
}

// BenchmarkTokenCache measures the cache alone, with every token
// remembered (hit) and with twice as many tokens as it holds (churn).
func BenchmarkTokenCache(b *testing.B) {
	now := time.Now()
	keys := make([][32]byte, 20000)
	for i := range keys {
		keys[i] = sha256.Sum256(fmt.Append(nil, i))
	}
	v := newVerifiedToken(&serviceaccount.Claims{Namespace: "default", Name: "builder", NotBefore: now, Expiry: now.Add(time.Hour)})
	for _, bb := range []struct {
		name string
		keys int
	}{{"hit", 1000}, {"churn", 20000}} {
		b.Run(bb.name, func(b *testing.B) {
			c, err := newTokenCache(10000)
			if err != nil {
				b.Fatal(err)
			}
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					k := keys[int(next.Add(1))%bb.keys]
					if _, ok := c.get(k, now); !ok {
						c.put(k, v)
					}
				}
			})
		})
	}
}
