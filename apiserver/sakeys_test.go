package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trustplane/trustplane/apiserver/authn/serviceaccount"
	"github.com/trustplane/trustplane/pki"
)

// The ServiceAccount signing key rotates: tokens signed with the old key
// verify while sa.pub still holds its public key, and no longer once it is
// removed; sa.pub without the public key of sa.key stops the start.
func TestServiceAccountKeyRotation(t *testing.T) {
	dir := t.TempDir()
	oldKey, newKey := newSAKey(t), newSAKey(t)
	write := func(signing *ecdsa.PrivateKey, verifying ...*ecdsa.PrivateKey) {
		t.Helper()
		der, err := x509.MarshalPKCS8PrivateKey(signing)
		if err != nil {
			t.Fatal(err)
		}
		var pub []byte
		for _, k := range verifying {
			b, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
			if err != nil {
				t.Fatal(err)
			}
			pub = append(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: b})...)
		}
		if err := os.WriteFile(filepath.Join(dir, pki.ServiceAccountKey), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, pki.ServiceAccountPub), pub, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	load := func() (*serviceaccount.Issuer, *serviceaccount.Verifier) {
		t.Helper()
		i, v, err := LoadServiceAccountKeys(dir, DefaultServiceAccountIssuer)
		if err != nil {
			t.Fatal(err)
		}
		return i, v
	}
	now := time.Now()
	issue := func(i *serviceaccount.Issuer) string {
		t.Helper()
		tok, err := i.Issue(serviceaccount.Claims{Namespace: "default", Name: "builder", UID: "uid-1", Audiences: []string{DefaultServiceAccountIssuer}, Expiry: now.Add(time.Hour)}, now)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	verifies := func(step string, v *serviceaccount.Verifier, tok string, want bool) {
		t.Helper()
		_, err := v.Verify(tok, nil, now)
		if (err == nil) != want {
			t.Errorf("%s: Verify = %v, want accepted %v", step, err, want)
		}
	}

	write(oldKey, oldKey)
	i, _ := load()
	oldToken := issue(i)

	write(newKey, newKey, oldKey)
	i, v := load()
	newToken := issue(i)
	verifies("during rotation, old token", v, oldToken, true)
	verifies("during rotation, new token", v, newToken, true)

	write(newKey, newKey)
	_, v = load()
	verifies("after rotation, old token", v, oldToken, false)
	verifies("after rotation, new token", v, newToken, true)

	write(newKey, oldKey)
	if _, _, err := LoadServiceAccountKeys(dir, DefaultServiceAccountIssuer); err == nil || !strings.Contains(err.Error(), "sa.pub does not hold the public key of sa.key") {
		t.Errorf("sa.pub without the signing key's public key: %v, want an error naming both files", err)
	}
}

func newSAKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
