package oidc

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/authentication/authenticator"

	"github.com/trustplane/trustplane/apiserver/authn/oidc/oidctest"
)

// saIssuer is the ServiceAccount issuer the tests refuse as an OIDC issuer.
const saIssuer = "https://kubernetes.default.svc.cluster.local"

// twoIssuers configures corp, which maps claims with prefixes and CEL and
// validates claims, and partner, which maps by CEL without prefix and
// validates the user.
const twoIssuers = `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: {{corp}}
    audiences: [trustplane, kubectl]
    audienceMatchPolicy: MatchAny
    certificateAuthority: |
{{corpCA}}
  claimValidationRules:
  - claim: hd
    requiredValue: example.com
  - expression: "claims.tenant != 'blocked'"
    message: tenant is blocked
  claimMappings:
    username: {claim: sub, prefix: "corp:"}
    groups: {claim: groups, prefix: "corp:"}
    uid: {expression: "'corp-' + claims.sub"}
    extra:
    - key: example.com/tenant
      valueExpression: claims.tenant
- issuer:
    url: {{partner}}
    audiences: [trustplane]
    certificateAuthority: |
{{partnerCA}}
  claimMappings:
    username: {expression: "claims.username"}
    groups: {expression: "has(claims.roles) ? claims.roles : []"}
  userValidationRules:
  - expression: "!user.username.startsWith('bad:')"
    message: bad users are refused
`

// writeConfig writes a config file, replacing each {{name}} in text.
func writeConfig(t *testing.T, text string, vars map[string]string) string {
	t.Helper()
	for k, v := range vars {
		text = strings.ReplaceAll(text, "{{"+k+"}}", v)
	}
	path := filepath.Join(t.TempDir(), "authentication-config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newAuthenticator loads path and builds its authenticator for the rest
// of the test.
func newAuthenticator(t *testing.T, path string) authenticator.Token {
	t.Helper()
	cfg, err := Load(path, []string{saIssuer})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	a, err := cfg.Authenticator(t.Context())
	if err != nil {
		t.Fatalf("Authenticator: %v", err)
	}
	return a
}

type wantUser struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

func TestAuthenticate(t *testing.T) {
	corpKey, partnerKey := oidctest.NewKey(t, "corp-1"), oidctest.NewKey(t, "partner-1")
	corp, partner := oidctest.NewIssuer(t, corpKey), oidctest.NewIssuer(t, partnerKey)
	a := newAuthenticator(t, writeConfig(t, twoIssuers, map[string]string{
		"corp": corp.URL(), "corpCA": indent(corp.CAPEM(), 6),
		"partner": partner.URL(), "partnerCA": indent(partner.CAPEM(), 6),
	}))

	// corpClaims is a valid corp token's claims, changed by edit.
	corpClaims := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		c := corp.Claims("trustplane")
		c["sub"] = "alice"
		c["hd"] = "example.com"
		c["tenant"] = "acme"
		c["groups"] = []string{"dev", "ops"}
		if edit != nil {
			edit(c)
		}
		return c
	}
	partnerClaims := func(username string, roles ...string) jwt.MapClaims {
		c := partner.Claims("trustplane")
		c["sub"] = "p-123"
		c["username"] = username
		if roles != nil {
			c["roles"] = roles
		}
		return c
	}
	strangerKey := oidctest.NewKey(t, "corp-1") // same key id, not corp's key

	tests := []struct {
		name  string
		token string
		want  *wantUser // nil: refused
		// wantErr is part of the error when refused; "" means the token
		// is not for any issuer: not authenticated, without error.
		wantErr string
	}{{
		name:  "valid corp token",
		token: corpKey.Sign(t, corpClaims(nil)),
		want: &wantUser{Name: "corp:alice", UID: "corp-alice", Groups: []string{"corp:dev", "corp:ops"},
			Extra: map[string][]string{"example.com/tenant": {"acme"}}},
	}, {
		name:  "second audience",
		token: corpKey.Sign(t, corpClaims(func(c jwt.MapClaims) { c["aud"] = []string{"other", "kubectl"} })),
		want: &wantUser{Name: "corp:alice", UID: "corp-alice", Groups: []string{"corp:dev", "corp:ops"},
			Extra: map[string][]string{"example.com/tenant": {"acme"}}},
	}, {
		name:  "valid partner token, from the second issuer",
		token: partnerKey.Sign(t, partnerClaims("bob", "viewers")),
		want:  &wantUser{Name: "bob", Groups: []string{"viewers"}},
	}, {
		name:    "wrong audience",
		token:   corpKey.Sign(t, corpClaims(func(c jwt.MapClaims) { c["aud"] = "someone-else" })),
		wantErr: "audience",
	}, {
		name:    "partner audience is not enough for corp",
		token:   corpKey.Sign(t, corpClaims(func(c jwt.MapClaims) { c["aud"] = "partner" })),
		wantErr: "audience",
	}, {
		name: "expired",
		token: corpKey.Sign(t, corpClaims(func(c jwt.MapClaims) {
			c["iat"] = time.Now().Add(-2 * time.Hour).Unix()
			c["exp"] = time.Now().Add(-time.Hour).Unix()
		})),
		wantErr: "expired",
	}, {
		name:  "unknown issuer",
		token: corpKey.Sign(t, corpClaims(func(c jwt.MapClaims) { c["iss"] = "https://stranger.example.com" })),
	}, {
		name:  "the ServiceAccount issuer is not an OIDC issuer",
		token: corpKey.Sign(t, corpClaims(func(c jwt.MapClaims) { c["iss"] = saIssuer })),
	}, {
		name:    "signed by an unknown key with a known key id",
		token:   strangerKey.Sign(t, corpClaims(nil)),
		wantErr: "signature",
	}, {
		name:    "signed by the other issuer's key",
		token:   partnerKey.Sign(t, corpClaims(nil)),
		wantErr: "signature",
	}, {
		name:    "HS256 with the public key as secret",
		token:   hmacToken(t, corpClaims(nil), corpKey),
		wantErr: "unsupported algorithm",
	}, {
		name:    "alg none",
		token:   noneToken(t, corpClaims(nil)),
		wantErr: "unsupported algorithm",
	}, {
		name:    "claim validation rule: hd missing",
		token:   corpKey.Sign(t, corpClaims(func(c jwt.MapClaims) { delete(c, "hd") })),
		wantErr: "required claim hd not present",
	}, {
		name:    "claim validation rule: hd of another domain",
		token:   corpKey.Sign(t, corpClaims(func(c jwt.MapClaims) { c["hd"] = "evil.example" })),
		wantErr: "required claim hd value does not match",
	}, {
		name:    "claim validation rule by CEL",
		token:   corpKey.Sign(t, corpClaims(func(c jwt.MapClaims) { c["tenant"] = "blocked" })),
		wantErr: "tenant is blocked",
	}, {
		name:    "user validation rule by CEL",
		token:   partnerKey.Sign(t, partnerClaims("bad:eve")),
		wantErr: "bad users are refused",
	}, {
		name:    "username system:admin",
		token:   partnerKey.Sign(t, partnerClaims("system:admin")),
		wantErr: `username "system:admin" is reserved`,
	}, {
		name:    "ServiceAccount username",
		token:   partnerKey.Sign(t, partnerClaims("system:serviceaccount:kube-system:default")),
		wantErr: "is reserved",
	}, {
		name:    "group system:masters",
		token:   partnerKey.Sign(t, partnerClaims("mallory", "viewers", "system:masters")),
		wantErr: `group "system:masters" is reserved`,
	}, {
		name:  "a prefixed group is not a system: group",
		token: corpKey.Sign(t, corpClaims(func(c jwt.MapClaims) { c["groups"] = []string{"system:masters"} })),
		want: &wantUser{Name: "corp:alice", UID: "corp-alice", Groups: []string{"corp:system:masters"},
			Extra: map[string][]string{"example.com/tenant": {"acme"}}},
	}, {
		name:  "not a JWT",
		token: "abc.def",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, ok, err := a.AuthenticateToken(t.Context(), tt.token)
			if tt.want == nil {
				if ok || resp != nil {
					t.Fatalf("AuthenticateToken = %+v, %v, %v; want refused", resp, ok, err)
				}
				switch {
				case tt.wantErr == "" && err != nil:
					t.Errorf("error = %v, want none (not our token)", err)
				case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
					t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !ok {
				t.Fatalf("AuthenticateToken: ok=%v err=%v, want user %s", ok, err, tt.want.Name)
			}
			u := resp.User
			got := &wantUser{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
		})
	}
}

// hmacToken forges a token signed with HS256, using the issuer's public
// key as the HMAC secret (the algorithm confusion attack).
func hmacToken(t *testing.T, claims jwt.MapClaims, k *oidctest.Key) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	tok.Header["kid"] = k.ID
	s, err := tok.SignedString(k.Private.N.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// noneToken forges an unsigned token.
func noneToken(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const oneIssuer = `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: {{url}}
    audiences: [trustplane]
    certificateAuthority: |
{{ca}}
  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
`

func TestKeyRotation(t *testing.T) {
	oldKey, newKey := oidctest.NewKey(t, "2025"), oidctest.NewKey(t, "2026")
	is := oidctest.NewIssuer(t, oldKey)
	a := newAuthenticator(t, writeConfig(t, oneIssuer, map[string]string{"url": is.URL(), "ca": indent(is.CAPEM(), 6)}))
	claims := is.Claims("trustplane")
	claims["sub"] = "alice"

	accepts := func(step string, k *oidctest.Key, want bool) {
		t.Helper()
		resp, ok, err := a.AuthenticateToken(t.Context(), k.Sign(t, claims))
		if want && (!ok || err != nil || resp.User.GetName() != "oidc:alice") {
			t.Errorf("%s: token signed with key %s: ok=%v err=%v, want accepted as oidc:alice", step, k.ID, ok, err)
		}
		if !want && (ok || err == nil) {
			t.Errorf("%s: token signed with key %s: ok=%v err=%v, want refused", step, k.ID, ok, err)
		}
	}

	accepts("before rotation", oldKey, true)
	accepts("before rotation", newKey, false)

	// The issuer publishes the new key beside the old one and signs with
	// it: the verifier meets an unknown key id and fetches the keys again.
	is.Publish(oldKey, newKey)
	accepts("during rotation", newKey, true)
	accepts("during rotation", oldKey, true)

	// The old key is withdrawn. The verifier keeps the keys it has until
	// it next fetches them, which it does on a key id it does not know:
	// after that, the old key is refused.
	is.Publish(newKey)
	accepts("after withdrawal, unknown key id", oidctest.NewKey(t, "2027"), false)
	accepts("after withdrawal", oldKey, false)
	accepts("after withdrawal", newKey, true)
}

func TestAuthenticatorWaitsForDiscovery(t *testing.T) {
	down := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	downCA := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: down.Certificate().Raw}))
	cfg, err := Load(writeConfig(t, oneIssuer, map[string]string{"url": down.URL, "ca": indent(downCA, 6)}), nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	a, err := cfg.Authenticator(ctx)
	if err == nil || !strings.Contains(err.Error(), down.URL) || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("Authenticator = %v, %v; want an error naming issuer %s as not ready", a, err, down.URL)
	}
}

func TestAuthenticatorWithoutIssuers(t *testing.T) {
	for name, cfg := range map[string]*Config{
		"zero value": {},
		"loaded":     mustLoad(t, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt: []\n"),
	} {
		t.Run(name, func(t *testing.T) {
			a, err := cfg.Authenticator(t.Context())
			if err != nil {
				t.Fatalf("Authenticator: %v", err)
			}
			if resp, ok, err := a.AuthenticateToken(t.Context(), noneToken(t, jwt.MapClaims{"sub": "alice"})); ok || resp != nil || err != nil {
				t.Errorf("AuthenticateToken = %v, %v, %v; want not authenticated", resp, ok, err)
			}
		})
	}
	var nilConfig *Config
	if _, err := nilConfig.Authenticator(t.Context()); err == nil {
		t.Error("nil Config: Authenticator succeeded, want an error")
	}
}

func mustLoad(t *testing.T, text string) *Config {
	t.Helper()
	cfg, err := Load(writeConfig(t, text, nil), []string{saIssuer})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cfg
}
