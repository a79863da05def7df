package serviceaccount

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
)

// The PEM block types that trustplane init writes to DIR/pki/sa.key and
// DIR/pki/sa.pub.
const (
	privateKeyBlock = "PRIVATE KEY" // PKCS#8
	publicKeyBlock  = "PUBLIC KEY"  // PKIX
)

// parsePrivateKey reads exactly one PKCS#8 ECDSA P-256 private key.
func parsePrivateKey(keyPEM []byte) (*ecdsa.PrivateKey, error) {
	block, rest := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	if block.Type != privateKeyBlock {
		return nil, fmt.Errorf("PEM block is %q, want %q (PKCS#8)", block.Type, privateKeyBlock)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("unexpected data after the private key")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse PKCS#8 private key: %w", err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s private key, want ECDSA P-256", keyKind(key))
	}
	if err := checkP256(&ec.PublicKey); err != nil {
		return nil, err
	}
	return ec, nil
}

// parsePublicKeys reads one or more PKIX ECDSA P-256 public keys. Any other
// block, or anything but whitespace between and after the blocks, is an
// error: a key file that does not hold what we think it holds should stop
// the server, not be half used.
func parsePublicKeys(keysPEM []byte) ([]*ecdsa.PublicKey, error) {
	var keys []*ecdsa.PublicKey
	rest := keysPEM
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != publicKeyBlock {
			return nil, fmt.Errorf("PEM block %d is %q, want %q (PKIX)", len(keys)+1, block.Type, publicKeyBlock)
		}
		key, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse PKIX public key %d: %w", len(keys)+1, err)
		}
		ec, ok := key.(*ecdsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("public key %d: %s key, want ECDSA P-256", len(keys)+1, keyKind(key))
		}
		if err := checkP256(ec); err != nil {
			return nil, fmt.Errorf("public key %d: %w", len(keys)+1, err)
		}
		keys = append(keys, ec)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		if len(keys) == 0 {
			return nil, errors.New("no PEM block found")
		}
		return nil, fmt.Errorf("unexpected data after public key %d", len(keys))
	}
	if len(keys) == 0 {
		return nil, errors.New("no PEM block found")
	}
	return keys, nil
}

func checkP256(k *ecdsa.PublicKey) error {
	if k.Curve != elliptic.P256() {
		return fmt.Errorf("ECDSA key on curve %s, want P-256 (ES256)", k.Curve.Params().Name)
	}
	return nil
}

// keyKind names a key's algorithm for an error message.
func keyKind(key any) string {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return fmt.Sprintf("RSA-%d", k.N.BitLen())
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA-%d", k.N.BitLen())
	case ed25519.PrivateKey, ed25519.PublicKey:
		return "Ed25519"
	default:
		return fmt.Sprintf("%T", key)
	}
}

// keyID is the "kid" kube-apiserver puts in the tokens it signs: the
// unpadded base64url SHA-256 of the PKIX DER public key. Using the same
// derivation means tokens and discovery documents (JWKS) agree with kube's.
func keyID(pub *ecdsa.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encode public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
