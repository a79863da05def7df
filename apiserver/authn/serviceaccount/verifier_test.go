package serviceaccount

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
)

const (
	testIssuer  = "https://kubernetes.default.svc.cluster.local"
	apiAudience = "https://kubernetes.default.svc.cluster.local"
)

// testNow is a fixed instant on a whole second, so that claims round-trip
// exactly through the token's one-second precision.
func testNow() time.Time { return time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC) }

// fixture is a cluster's service account key pair, loaded the way the API
// server loads DIR/pki/sa.key and DIR/pki/sa.pub.
type fixture struct {
	key      *ecdsa.PrivateKey
	kid      string
	issuer   *Issuer
	verifier *Verifier
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	key := newP256(t)
	iss, err := LoadIssuer(privatePEM(t, key), testIssuer)
	if err != nil {
		t.Fatal(err)
	}
	ver, err := LoadVerifier([][]byte{publicPEM(t, &key.PublicKey)}, testIssuer, []string{apiAudience})
	if err != nil {
		t.Fatal(err)
	}
	kid, err := keyID(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{key: key, kid: kid, issuer: iss, verifier: ver}
}

func (f fixture) issue(t testing.TB, c Claims, now time.Time) string {
	t.Helper()
	tok, err := f.issuer.Issue(c, now)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// validClaims is a Pod-bound token for default/builder valid for an hour.
func validClaims(now time.Time) Claims {
	return Claims{
		Namespace: "default",
		Name:      "builder",
		UID:       "3b9d2c1e-0000-4000-8000-000000000001",
		Bound:     &BoundObject{Kind: KindPod, Name: "builder-7d9f", UID: "3b9d2c1e-0000-4000-8000-000000000002"},
		Audiences: []string{apiAudience, "vault"},
		ID:        "3b9d2c1e-0000-4000-8000-0000000000aa",
		Expiry:    now.Add(time.Hour),
	}
}

// rawClaims is what validClaims puts in a token, for tests that sign
// payloads Issue would refuse to make.
func rawClaims(now time.Time) tokenClaims {
	return tokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    testIssuer,
			Subject:   "system:serviceaccount:default:builder",
			Audience:  jwt.ClaimStrings{apiAudience},
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
			NotBefore: jwt.NewNumericDate(now),
			IssuedAt:  jwt.NewNumericDate(now),
			ID:        "3b9d2c1e-0000-4000-8000-0000000000bb",
		},
		Kubernetes: &kubernetesClaim{
			Namespace:      "default",
			ServiceAccount: &objectRef{Name: "builder", UID: "sa-uid"},
			Pod:            &objectRef{Name: "builder-7d9f", UID: "pod-uid"},
		},
	}
}

func TestVerifyRoundTrip(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name  string
		bound *BoundObject
		id    string
	}{
		{"pod", &BoundObject{Kind: KindPod, Name: "web-0", UID: "pod-uid"}, "given-id"},
		{"secret", &BoundObject{Kind: KindSecret, Name: "builder-token", UID: "secret-uid"}, "given-id"},
		{"node", &BoundObject{Kind: KindNode, Name: "node-a", UID: "node-uid"}, "given-id"},
		{"unbound, generated jti", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validClaims(testNow())
			c.Bound, c.ID = tc.bound, tc.id
			c.IssuedAt, c.NotBefore = time.Unix(1, 0), time.Unix(2, 0) // ignored by Issue
			tok := f.issue(t, c, testNow())

			got, err := f.verifier.Verify(tok, []string{"vault"}, testNow().Add(time.Minute))
			if err != nil {
				t.Fatalf("Verify() error = %v; want nil", err)
			}
			want := c
			want.IssuedAt, want.NotBefore = testNow(), testNow()
			if tc.id == "" {
				if _, err := uuid.Parse(got.ID); err != nil {
					t.Errorf("generated jti %q is not a UUID: %v", got.ID, err)
				}
				want.ID = got.ID
			}
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("Verify() claims mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIssueWireFormat(t *testing.T) {
	f := newFixture(t)
	tok := f.issue(t, validClaims(testNow()), testNow())
	got := decodeSegment(t, strings.Split(tok, ".")[1])
	want := map[string]any{
		"iss": testIssuer,
		"sub": "system:serviceaccount:default:builder",
		"aud": []any{apiAudience, "vault"},
		"exp": float64(testNow().Add(time.Hour).Unix()),
		"nbf": float64(testNow().Unix()),
		"iat": float64(testNow().Unix()),
		"jti": "3b9d2c1e-0000-4000-8000-0000000000aa",
		"kubernetes.io": map[string]any{
			"namespace":      "default",
			"serviceaccount": map[string]any{"name": "builder", "uid": "3b9d2c1e-0000-4000-8000-000000000001"},
			"pod":            map[string]any{"name": "builder-7d9f", "uid": "3b9d2c1e-0000-4000-8000-000000000002"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("payload mismatch (-want +got):\n%s", diff)
	}
}

func TestVerifyAccepts(t *testing.T) {
	f := newFixture(t)
	old := newP256(t)
	rotating, err := LoadVerifier([][]byte{
		publicPEM(t, &f.key.PublicKey),
		publicPEM(t, &old.PublicKey),
	}, testIssuer, []string{apiAudience})
	if err != nil {
		t.Fatal(err)
	}
	good := f.issue(t, validClaims(testNow()), testNow())
	podOnNode := rawClaims(testNow())
	podOnNode.Kubernetes.Node = &objectRef{Name: "node-a", UID: "node-uid"}

	tests := []struct {
		name      string
		verifier  *Verifier
		token     string
		audiences []string
		now       time.Time
		wantBound *BoundObject
	}{
		{"default audiences", f.verifier, good, nil, testNow(), validClaims(testNow()).Bound},
		{"one of several audiences", f.verifier, good, []string{"other", "vault"}, testNow(), validClaims(testNow()).Bound},
		{"expired within leeway", f.verifier, good, nil, testNow().Add(time.Hour + 59*time.Second), validClaims(testNow()).Bound},
		{"not yet valid within leeway", f.verifier, good, nil, testNow().Add(-59 * time.Second), validClaims(testNow()).Bound},
		{"no kid: every key tried", rotating, sign(t, jwt.SigningMethodES256, old, nil, rawClaims(testNow())), nil, testNow(),
			&BoundObject{Kind: KindPod, Name: "builder-7d9f", UID: "pod-uid"}},
		{"rotation: old key by kid", rotating, sign(t, jwt.SigningMethodES256, old, map[string]any{"kid": mustKeyID(t, &old.PublicKey)}, rawClaims(testNow())), nil, testNow(),
			&BoundObject{Kind: KindPod, Name: "builder-7d9f", UID: "pod-uid"}},
		{"rotation: new key by kid", rotating, good, nil, testNow(), validClaims(testNow()).Bound},
		{"pod with its node (kube 1.30+)", f.verifier, sign(t, jwt.SigningMethodES256, f.key, map[string]any{"kid": f.kid}, podOnNode), nil, testNow(),
			&BoundObject{Kind: KindPod, Name: "builder-7d9f", UID: "pod-uid"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.verifier.Verify(tc.token, tc.audiences, tc.now)
			if err != nil {
				t.Fatalf("Verify() error = %v; want nil", err)
			}
			if diff := cmp.Diff(tc.wantBound, got.Bound); diff != "" {
				t.Errorf("Bound mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func mustKeyID(t testing.TB, pub *ecdsa.PublicKey) string {
	t.Helper()
	kid, err := keyID(pub)
	if err != nil {
		t.Fatal(err)
	}
	return kid
}

// TestVerifyRefuses tries to get a token past Verify.
func TestVerifyRefuses(t *testing.T) {
	f := newFixture(t)
	kid := map[string]any{"kid": f.kid}
	good := f.issue(t, validClaims(testNow()), testNow())
	parts := strings.Split(good, ".")

	// Key confusion: the verifier's public key used as an HMAC secret, in
	// both of the encodings an attacker can get.
	pubPEM := publicPEM(t, &f.key.PublicKey)
	pubDER, err := x509.MarshalPKIXPublicKey(&f.key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	stranger := newP256(t)
	otherIssuer, err := LoadIssuer(privatePEM(t, f.key), "https://evil.example")
	if err != nil {
		t.Fatal(err)
	}

	with := func(edit func(*tokenClaims)) string {
		c := rawClaims(testNow())
		edit(&c)
		return sign(t, jwt.SigningMethodES256, f.key, kid, c)
	}
	// A payload re-encoded with a change: the signature no longer covers it.
	altered := func() string {
		c := rawClaims(testNow())
		c.Kubernetes.Namespace = "kube-system"
		c.Subject = "system:serviceaccount:kube-system:builder"
		return parts[0] + "." + segment(t, c) + "." + parts[2]
	}()
	// One base64 character of the payload changed.
	flipped := func() string {
		b := []byte(good)
		i := len(parts[0]) + 1 + len(parts[1])/2
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}()
	// The same signature with the unused low bits of its last base64
	// character set: decodes to the same bytes unless decoding is strict.
	malleable := func() string {
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		last := strings.IndexByte(alphabet, good[len(good)-1])
		return good[:len(good)-1] + string(alphabet[last|1])
	}()

	tests := []struct {
		name      string
		token     string
		audiences []string
		now       time.Time
		want      string // in the error
	}{
		{"alg none, empty signature", segment(t, map[string]any{"alg": "none", "typ": "JWT"}) + "." + parts[1] + ".", nil, testNow(),
			"not three base64url segments"},
		{"alg none, any signature", segment(t, map[string]any{"alg": "none"}) + "." + parts[1] + "." + parts[2], nil, testNow(),
			"signing method none is invalid"},
		{"alg none, signed with the none key", sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, nil, rawClaims(testNow())) + "AAAA", nil, testNow(),
			"signing method none is invalid"},
		{"HS256 keyed with public key PEM", sign(t, jwt.SigningMethodHS256, pubPEM, kid, rawClaims(testNow())), nil, testNow(),
			"signing method HS256 is invalid"},
		{"HS256 keyed with public key DER", sign(t, jwt.SigningMethodHS256, pubDER, nil, rawClaims(testNow())), nil, testNow(),
			"signing method HS256 is invalid"},
		{"RS256", sign(t, jwt.SigningMethodRS256, rsaKey, kid, rawClaims(testNow())), nil, testNow(),
			"signing method RS256 is invalid"},
		{"ES384 header on ES256 key", segment(t, map[string]any{"alg": "ES384", "kid": f.kid}) + "." + parts[1] + "." + parts[2], nil, testNow(),
			"signing method ES384 is invalid"},
		{"ES256 by unknown key, no kid", sign(t, jwt.SigningMethodES256, stranger, nil, rawClaims(testNow())), nil, testNow(),
			"signature is invalid"},
		{"ES256 by unknown key, our kid", sign(t, jwt.SigningMethodES256, stranger, kid, rawClaims(testNow())), nil, testNow(),
			"signature is invalid"},
		{"kid matching no key", sign(t, jwt.SigningMethodES256, f.key, map[string]any{"kid": "nope"}, rawClaims(testNow())), nil, testNow(),
			`no key has kid "nope"`},
		{"kid not a string", sign(t, jwt.SigningMethodES256, f.key, map[string]any{"kid": 7}, rawClaims(testNow())), nil, testNow(),
			"kid header is not a non-empty string"},
		{"crit header", sign(t, jwt.SigningMethodES256, f.key, map[string]any{"kid": f.kid, "crit": []string{"exp"}}, rawClaims(testNow())), nil, testNow(),
			"crit header is not supported"},
		{"wrong issuer", otherIssuer.issueOrFatal(t, validClaims(testNow()), testNow()), nil, testNow(),
			`issuer "https://evil.example", want "https://kubernetes.default.svc.cluster.local"`},
		{"wrong audience", good, []string{"https://other.example"}, testNow(),
			"token has invalid audience"},
		{"empty audience asked for", with(func(c *tokenClaims) { c.Audience = jwt.ClaimStrings{"", apiAudience} }), []string{""}, testNow(),
			"caller asked for an empty audience"},
		{"no aud claim", with(func(c *tokenClaims) { c.Audience = nil }), nil, testNow(),
			"aud claim is required"},
		{"expired beyond leeway", good, nil, testNow().Add(time.Hour + 61*time.Second),
			"token is expired (expired at 2026-03-01T13:00:00Z, 1m1s before"},
		{"not yet valid beyond leeway", good, nil, testNow().Add(-61 * time.Second),
			"token is not valid yet"},
		{"no exp", with(func(c *tokenClaims) { c.ExpiresAt = nil }), nil, testNow(),
			"exp claim is required"},
		{"no nbf", with(func(c *tokenClaims) { c.NotBefore = nil }), nil, testNow(),
			"nbf claim is required"},
		{"no iat", with(func(c *tokenClaims) { c.IssuedAt = nil }), nil, testNow(),
			"iat claim is required"},
		{"iat in the future", with(func(c *tokenClaims) { c.IssuedAt = jwt.NewNumericDate(testNow().Add(10 * time.Minute)) }), nil, testNow(),
			"token used before issued"},
		{"altered payload, re-encoded", altered, nil, testNow(),
			"signature is invalid"},
		// Depending on the byte, the payload stops being JSON or the
		// signature stops matching; either way it is refused.
		{"altered payload, one byte flipped", flipped, nil, testNow(),
			"token "},
		{"non-canonical signature encoding", malleable, nil, testNow(),
			"could not base64 decode signature"},
		{"missing kubernetes.io claim", with(func(c *tokenClaims) { c.Kubernetes = nil }), nil, testNow(),
			"kubernetes.io claim is missing"},
		{"kubernetes.io without namespace", with(func(c *tokenClaims) { c.Kubernetes.Namespace = "" }), nil, testNow(),
			"kubernetes.io claim has no namespace"},
		{"kubernetes.io without service account", with(func(c *tokenClaims) { c.Kubernetes.ServiceAccount = nil }), nil, testNow(),
			"no service account name"},
		{"empty uid", with(func(c *tokenClaims) { c.Kubernetes.ServiceAccount.UID = "" }), nil, testNow(),
			"kubernetes.io claim has no service account uid"},
		{"sub not matching kubernetes.io", with(func(c *tokenClaims) { c.Subject = "system:serviceaccount:kube-system:builder" }), nil, testNow(),
			`sub "system:serviceaccount:kube-system:builder" does not match kubernetes.io service account "default"/"builder"`},
		{"sub not a service account", with(func(c *tokenClaims) { c.Subject = "admin" }), nil, testNow(),
			`sub "admin" is not system:serviceaccount:<namespace>:<name>`},
		{"sub with extra colon", with(func(c *tokenClaims) { c.Subject = "system:serviceaccount:default:builder:x" }), nil, testNow(),
			"is not system:serviceaccount:"},
		{"bound pod without uid", with(func(c *tokenClaims) { c.Kubernetes.Pod.UID = "" }), nil, testNow(),
			"pod without a name or uid"},
		{"bound to pod and secret", with(func(c *tokenClaims) { c.Kubernetes.Secret = &objectRef{Name: "s", UID: "u"} }), nil, testNow(),
			"binds both a pod and a secret"},
		{"truncated signature", good[:len(good)-10], nil, testNow(),
			"signature is invalid"},
		{"truncated to two segments", parts[0] + "." + parts[1], nil, testNow(),
			"not three base64url segments"},
		{"truncated mid-payload", good[:len(parts[0])+1+len(parts[1])/2], nil, testNow(),
			"not three base64url segments"},
		{"four segments", good + ".AAAA", nil, testNow(),
			"not three base64url segments"},
		{"padding", good + "==", nil, testNow(),
			"not three base64url segments"},
		{"newline inside", parts[0] + ".\n" + parts[1] + "." + parts[2], nil, testNow(),
			"not three base64url segments"},
		{"empty string", "", nil, testNow(),
			"token is empty"},
		{"header not JSON", "bm90IGpzb24." + parts[1] + "." + parts[2], nil, testNow(),
			"could not JSON decode header"},
		{"10 MB garbage", strings.Repeat("A", 10<<20), nil, testNow(),
			"token is too large: 10485760 bytes, limit 65536"},
		{"10 MB garbage in JWT shape", strings.Repeat("A", 5<<20) + "." + strings.Repeat("B", 5<<20) + ".C", nil, testNow(),
			"token is too large"},
		{"just over 64 KiB", parts[0] + "." + parts[1] + strings.Repeat("A", maxTokenSize) + "." + parts[2], nil, testNow(),
			"token is too large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.verifier.Verify(tc.token, tc.audiences, tc.now)
			if err == nil {
				t.Fatalf("Verify() = %+v, nil; want an error containing %q", got, tc.want)
			}
			if got != nil {
				t.Errorf("Verify() claims = %+v; want nil with an error", got)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("Verify() error = %q; want it to contain %q", msg, tc.want)
			}
			if !strings.HasPrefix(msg, "invalid service account token: ") {
				t.Errorf("Verify() error = %q; want the prefix %q", msg, "invalid service account token: ")
			}
			assertNoToken(t, msg, tc.token)
		})
	}
}

// assertNoToken fails if msg holds the token or any part of it long enough
// to be worth stealing.
func assertNoToken(t *testing.T, msg, token string) {
	t.Helper()
	if token != "" && strings.Contains(msg, token) {
		t.Fatalf("error contains the token")
	}
	for _, seg := range strings.Split(token, ".") {
		if len(seg) >= 16 && strings.Contains(msg, seg) {
			t.Fatalf("error %q contains a token segment", msg)
		}
	}
	if len(msg) > maxErrorText+100 {
		t.Errorf("error is %d bytes long; want it bounded near %d", len(msg), maxErrorText)
	}
}

func (i *Issuer) issueOrFatal(t testing.TB, c Claims, now time.Time) string {
	t.Helper()
	tok, err := i.Issue(c, now)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestVerifyRefusesHugeEarly checks that oversized input is refused by the
// length check, before any decoding, rather than timing it.
func TestVerifyRefusesHugeEarly(t *testing.T) {
	f := newFixture(t)
	for _, tok := range []string{
		strings.Repeat("A", 10<<20),
		strings.Repeat("A", 5<<20) + "." + strings.Repeat("A", 5<<20) + ".A",
		strings.Repeat(".", 10<<20),
	} {
		_, err := f.verifier.Verify(tok, nil, testNow())
		if !errors.Is(err, errTooLarge) {
			t.Errorf("Verify(%d bytes) error = %v; want %v", len(tok), err, errTooLarge)
		}
		if LooksLikeJWT(tok) {
			t.Errorf("LooksLikeJWT(%d bytes) = true; want false", len(tok))
		}
	}
}

// TestVerifyErrorBounded feeds a validly shaped token whose payload makes
// the JSON decoder quote a long piece of it.
func TestVerifyErrorBounded(t *testing.T) {
	f := newFixture(t)
	payload := base64.RawURLEncoding.EncodeToString([]byte(`{"exp":1` + strings.Repeat("0", 40000) + `}`))
	tok := segment(t, map[string]any{"alg": "ES256"}) + "." + payload + ".AAAA"
	_, err := f.verifier.Verify(tok, nil, testNow())
	if err == nil {
		t.Fatal("Verify() error = nil; want an error")
	}
	if !strings.HasSuffix(err.Error(), "...(truncated)") {
		t.Errorf("Verify() error = %.200q...; want it truncated", err)
	}
	assertNoToken(t, err.Error(), tok)
}

// TestConcurrent shares one Issuer and one Verifier between goroutines, as
// the API server does; run with -race.
func TestConcurrent(t *testing.T) {
	f := newFixture(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 20 {
				tok, err := f.issuer.Issue(validClaims(testNow()), testNow())
				if err == nil {
					_, err = f.verifier.Verify(tok, nil, testNow())
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestIssueRefuses(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name string
		edit func(*Claims)
		want string
	}{
		{"no namespace", func(c *Claims) { c.Namespace = "" }, "not a valid namespace and name"},
		{"colon in name", func(c *Claims) { c.Name = "a:b" }, "not a valid namespace and name"},
		{"no uid", func(c *Claims) { c.UID = "" }, "service account UID is empty"},
		{"no audiences", func(c *Claims) { c.Audiences = nil }, "no audiences"},
		{"empty audience", func(c *Claims) { c.Audiences = []string{""} }, "empty audience"},
		{"expiry now", func(c *Claims) { c.Expiry = testNow().Add(500 * time.Millisecond) }, "is not after issue time"},
		{"no expiry", func(c *Claims) { c.Expiry = time.Time{} }, "is not after issue time"},
		{"unknown bound kind", func(c *Claims) { c.Bound.Kind = "Deployment" }, `bound object kind "Deployment"`},
		{"bound without uid", func(c *Claims) { c.Bound.UID = "" }, "bound Pod needs a name and a UID"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validClaims(testNow())
			tc.edit(&c)
			got, err := f.issuer.Issue(c, testNow())
			if err == nil {
				t.Fatalf("Issue() = %d-byte token, nil; want an error containing %q", len(got), tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Issue() error = %q; want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLooksLikeJWT(t *testing.T) {
	f := newFixture(t)
	good := f.issue(t, validClaims(testNow()), testNow())
	tests := []struct {
		token string
		want  bool
	}{
		{good, true},
		{"a.b.c", true},
		{"", false},
		{"a.b", false},
		{"a.b.c.d", false},
		{"a..c", false},
		{".b.c", false},
		{"a.b.", false},
		{"a.b+/.c", false},
		{"a.b.c=", false},
		{"31ada4fd-adec-460c-809a-9e56ceb75269", false},
		{"abcdef.0123456789abcdef", false}, // bootstrap token
	}
	for _, tc := range tests {
		if got := LooksLikeJWT(tc.token); got != tc.want {
			t.Errorf("LooksLikeJWT(%.20q) = %v; want %v", tc.token, got, tc.want)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	f := newFixture(b)
	tok := f.issue(b, validClaims(testNow()), testNow())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.verifier.Verify(tok, nil, testNow()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyBaseline is the floor under BenchmarkVerify: the SHA-256
// and P-256 verification of the same token and nothing else. Compare the
// two from one run.
func BenchmarkVerifyBaseline(b *testing.B) {
	f := newFixture(b)
	tok := f.issue(b, validClaims(testNow()), testNow())
	dot := strings.LastIndexByte(tok, '.')
	sig, err := base64.RawURLEncoding.DecodeString(tok[dot+1:])
	if err != nil {
		b.Fatal(err)
	}
	signed := []byte(tok[:dot])
	pub := &f.key.PublicKey
	b.ReportAllocs()
	for b.Loop() {
		sum := sha256.Sum256(signed)
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		if !ecdsa.Verify(pub, sum[:], r, s) {
			b.Fatal("signature does not verify")
		}
	}
}
