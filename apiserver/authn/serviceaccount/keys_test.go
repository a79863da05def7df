package serviceaccount

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"
)

func TestLoadIssuerRefuses(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	good := newP256(t)
	sec1, err := x509.MarshalECPrivateKey(good)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		pem    []byte
		issuer string
		want   string // in the error
	}{
		{"RSA key", privatePEM(t, rsaKey), "https://tp", "RSA-2048 private key, want ECDSA P-256"},
		{"P-384 key", privatePEM(t, p384), "https://tp", "curve P-384, want P-256"},
		{"Ed25519 key", privatePEM(t, edKey), "https://tp", "Ed25519 private key"},
		{"public key", publicPEM(t, &good.PublicKey), "https://tp", `PEM block is "PUBLIC KEY", want "PRIVATE KEY"`},
		{"SEC1 block", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}), "https://tp", `PEM block is "EC PRIVATE KEY"`},
		{"not PEM", []byte("not a key"), "https://tp", "no PEM block found"},
		{"empty", nil, "https://tp", "no PEM block found"},
		{"corrupt DER", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{0x30, 0x03, 1, 2, 3}}), "https://tp", "parse PKCS#8 private key"},
		{"trailing data", append(privatePEM(t, good), "junk"...), "https://tp", "unexpected data after the private key"},
		{"empty issuer", privatePEM(t, good), "", "issuer is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadIssuer(tc.pem, tc.issuer)
			if err == nil {
				t.Fatalf("LoadIssuer() = %v, nil; want an error containing %q", got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadIssuer() error = %q; want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadVerifierRefuses(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	good := newP256(t)
	goodPub := publicPEM(t, &good.PublicKey)
	aud := []string{"https://kubernetes.default.svc"}

	tests := []struct {
		name   string
		pems   [][]byte
		issuer string
		aud    []string
		want   string
	}{
		{"RSA key", [][]byte{goodPub, publicPEM(t, &rsaKey.PublicKey)}, "https://tp", aud, "public keys 1: public key 1: RSA-2048 key, want ECDSA P-256"},
		{"P-384 key", [][]byte{publicPEM(t, &p384.PublicKey)}, "https://tp", aud, "curve P-384, want P-256"},
		{"P-384 second block", [][]byte{append(goodPub, publicPEM(t, &p384.PublicKey)...)}, "https://tp", aud, "public key 2: ECDSA key on curve P-384"},
		{"private key", [][]byte{privatePEM(t, good)}, "https://tp", aud, `PEM block 1 is "PRIVATE KEY", want "PUBLIC KEY"`},
		{"not PEM", [][]byte{[]byte("-----BEGIN PUBLIC KEY-----\nnot base64\n")}, "https://tp", aud, "no PEM block found"},
		{"corrupt DER", [][]byte{pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{0x30, 0x00}})}, "https://tp", aud, "parse PKIX public key 1"},
		{"trailing data", [][]byte{append(goodPub, "junk"...)}, "https://tp", aud, "unexpected data after public key 1"},
		{"no keys", nil, "https://tp", aud, "no public keys"},
		{"empty issuer", [][]byte{goodPub}, "", aud, "issuer is empty"},
		{"no default audiences", [][]byte{goodPub}, "https://tp", nil, "no default audiences"},
		{"empty default audience", [][]byte{goodPub}, "https://tp", []string{""}, "empty default audience"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadVerifier(tc.pems, tc.issuer, tc.aud)
			if err == nil {
				t.Fatalf("LoadVerifier() = %v, nil; want an error containing %q", got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadVerifier() error = %q; want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestKeyIDMatchesKube checks the kid derivation independently: kube uses
// the unpadded base64url SHA-256 of the PKIX DER public key.
func TestKeyIDMatchesKube(t *testing.T) {
	key := newP256(t)
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	want := base64.RawURLEncoding.EncodeToString(sum[:])

	iss, err := LoadIssuer(privatePEM(t, key), "https://tp")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := iss.Issue(validClaims(testNow()), testNow())
	if err != nil {
		t.Fatal(err)
	}
	header := decodeSegment(t, strings.Split(tok, ".")[0])
	if got := header["kid"]; got != want {
		t.Errorf("kid = %v; want %s", got, want)
	}
	if got := header["alg"]; got != "ES256" {
		t.Errorf("alg = %v; want ES256", got)
	}
	if _, ok := header["typ"]; ok {
		t.Errorf("header has typ; kube's header is only alg and kid: %v", header)
	}
}
