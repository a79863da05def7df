// Package oidctest serves a real OpenID Connect issuer for tests: discovery
// and a JWKS endpoint over TLS on loopback, with keys that can be rotated
// while it runs. It is for tests only.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer is an OpenID Connect issuer publishing RS256 keys.
type Issuer struct {
	srv *httptest.Server

	mu        sync.Mutex // guards published
	published []*Key
}

// NewIssuer starts an issuer publishing keys; it stops at the end of the
// test.
func NewIssuer(t testing.TB, keys ...*Key) *Issuer {
	t.Helper()
	is := &Issuer{published: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"issuer":                                is.URL(),
			"jwks_uri":                              is.URL() + "/keys",
			"authorization_endpoint":                is.URL() + "/authorize",
			"token_endpoint":                        is.URL() + "/token",
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

// URL is the issuer URL, the iss of its tokens.
func (is *Issuer) URL() string { return is.srv.URL }

// CAPEM is the PEM bundle that verifies the issuer's serving certificate.
func (is *Issuer) CAPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: is.srv.Certificate().Raw}))
}

// Publish replaces the keys in the issuer's JWKS.
func (is *Issuer) Publish(keys ...*Key) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.published = keys
}

// Claims are the claims of a valid token from the issuer for audience
// aud, valid for an hour, without a subject.
func (is *Issuer) Claims(aud string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss": is.URL(),
		"aud": aud,
		"iat": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
}

// Key is an RS256 signing key with its key id.
type Key struct {
	ID      string
	Private *rsa.PrivateKey
}

// NewKey generates a key with key id id.
func NewKey(t testing.TB, id string) *Key {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("generate key %s: %v", id, err)
	}
	return &Key{ID: id, Private: priv}
}

// jwk is the public key as a JSON Web Key (RFC 7517, 7518 section 6.3).
func (k *Key) jwk() map[string]string {
	b64 := base64.RawURLEncoding.EncodeToString
	return map[string]string{
		"kty": "RSA",
		"alg": "RS256",
		"use": "sig",
		"kid": k.ID,
		"n":   b64(k.Private.N.Bytes()),
		"e":   b64(big.NewInt(int64(k.Private.E)).Bytes()),
	}
}

// Sign returns claims as a compact JWS signed with k.
func (k *Key) Sign(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = k.ID
	s, err := tok.SignedString(k.Private)
	if err != nil {
		t.Fatalf("sign token: %v", err)
	}
	return s
}
