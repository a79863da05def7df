package pki

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"strings"
)

// pinPrefix is the one hash kubeadm's CA pins name.
const pinPrefix = "sha256:"

// Pin is kubeadm's pin of a CA (--discovery-token-ca-cert-hash):
// "sha256:" and the hex SHA-256 of the certificate's
// SubjectPublicKeyInfo.
func Pin(ca *x509.Certificate) string {
	sum := sha256.Sum256(ca.RawSubjectPublicKeyInfo)
	return pinPrefix + hex.EncodeToString(sum[:])
}

// ValidatePin checks that pin has the form Pin gives.
func ValidatePin(pin string) error {
	h, ok := strings.CutPrefix(pin, pinPrefix)
	if !ok {
		return fmt.Errorf("CA pin %q: want sha256:<64 hex digits>", pin)
	}
	if b, err := hex.DecodeString(h); err != nil || len(b) != sha256.Size {
		return fmt.Errorf("CA pin %q: want sha256:<64 hex digits>", pin)
	}
	return nil
}

// MatchesPin reports whether ca's public key is the one pin names.
func MatchesPin(ca *x509.Certificate, pin string) bool {
	return subtle.ConstantTimeCompare([]byte(Pin(ca)), []byte(strings.ToLower(pin))) == 1
}
