package oidc

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// testIssuer is a real OpenID Connect issuer, test-only: discovery and a
// JWKS endpoint served over TLS on loopback, with the keys it publishes
// changeable while it runs.
type testIssuer struct {
	srv *httptest.Server

	mu        sync.Mutex // guards published
	published []*testKey
}

// newTestIssuer starts an issuer publishing keys; it stops at the end of
// the test.
func newTestIssuer(t *testing.T, keys ...*testKey) *testIssuer {
	t.Helper()
	is := &testIssuer{published: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"issuer":                                is.url(),
			"jwks_uri":                              is.url() + "/keys",
			"authorization_endpoint":                is.url() + "/authorize",
			"token_endpoint":                        is.url() + "/token",
			"response_types_supported":              []string{"id_token"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		is.mu.Lock()
		keys := make([]map[string]string, 0, len(is.published))
		for _, k := range is.published {
			keys = append(keys, k.jwk())
		}
		is.mu.Unlock()
		// No Cache-Control: the verifier may fetch the keys again as soon
		// as it meets a key id it does not know.
		writeJSON(w, map[string]any{"keys": keys})
	})
	is.srv = httptest.NewTLSServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (is *testIssuer) url() string { return is.srv.URL }

// caPEM is the PEM bundle that verifies the issuer's serving certificate.
func (is *testIssuer) caPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: is.srv.Certificate().Raw}))
}

// publish replaces the keys in the issuer's JWKS.
func (is *testIssuer) publish(keys ...*testKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.published = keys
}

// claims are the claims of a valid token from the issuer for audience
// aud, valid for an hour.
func (is *testIssuer) claims(aud string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss": is.url(),
		"aud": aud,
		"iat": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
}

// testKey is an RS256 signing key with its key id.
type testKey struct {
	id   string
	priv *rsa.PrivateKey
}

func newTestKey(t *testing.T, id string) *testKey {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("generate key %s: %v", id, err)
	}
	return &testKey{id: id, priv: priv}
}

// jwk is the public key as a JSON Web Key (RFC 7517, 7518 section 6.3).
func (k *testKey) jwk() map[string]string {
	b64 := base64.RawURLEncoding.EncodeToString
	return map[string]string{
		"kty": "RSA",
		"alg": "RS256",
		"use": "sig",
		"kid": k.id,
		"n":   b64(k.priv.N.Bytes()),
		"e":   b64(big.NewInt(int64(k.priv.E)).Bytes()),
	}
}

// sign returns claims as a compact JWS signed with k.
func (k *testKey) sign(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = k.id
	s, err := tok.SignedString(k.priv)
	if err != nil {
		t.Fatalf("sign token: %v", err)
	}
	return s
}

// indent indents every line of s by n spaces, for a YAML block scalar.
func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pad)
}
