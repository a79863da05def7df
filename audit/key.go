package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/trustplane/trustplane/pki"
)

// The checkpoint signing key, in pkiDir: the private key in the note
// signer format ("PRIVATE+KEY+name+hash+key"), the public key in the note
// verifier format ("name+hash+key"), which `trustplane audit verify --key`
// reads.
const (
	SigningKeyFile  = "audit-signing.key"
	VerifierKeyFile = "audit-signing.pub"
)

// KeyName is the name of the checkpoint signing key, and the origin line of
// every checkpoint it signs.
const KeyName = "trustplane-audit"

// EnsureSigningKey creates the checkpoint signing key in pkiDir unless it
// exists, and its public key unless that exists; nothing is overwritten. It
// returns the names of the files it created.
func EnsureSigningKey(pkiDir string) ([]string, error) {
	keyPath := filepath.Join(pkiDir, SigningKeyFile)
	pubPath := filepath.Join(pkiDir, VerifierKeyFile)
	var created []string
	skey, err := os.ReadFile(keyPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s, _, err := note.GenerateKey(rand.Reader, KeyName)
		if err != nil {
			return nil, fmt.Errorf("generate audit signing key: %w", err)
		}
		if err := pki.WriteFile(keyPath, []byte(s+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("write audit signing key: %w", err)
		}
		skey = []byte(s)
		created = append(created, SigningKeyFile)
	case err != nil:
		return nil, fmt.Errorf("read audit signing key: %w", err)
	}
	if _, err := os.Stat(pubPath); err == nil {
		return created, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	// The public key is derived from the private one, so that a lost
	// public key file can be written again for the key in use.
	vkey, err := verifierKey(strings.TrimSpace(string(skey)))
	if err != nil {
		return nil, err
	}
	if err := pki.WriteFile(pubPath, []byte(vkey+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write audit verifier key: %w", err)
	}
	return append(created, VerifierKeyFile), nil
}

// verifierKey is the note verifier key of the Ed25519 note signer key skey.
func verifierKey(skey string) (string, error) {
	// PRIVATE+KEY+name+hash+base64(0x01 || seed); base64 has '+' too.
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" {
		return "", errors.New("audit signing key: not a note signer key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return "", errors.New("audit signing key: not an Ed25519 note signer key")
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	return note.NewEd25519VerifierKey(parts[2], pub)
}

// LoadSigner reads the checkpoint signing key from pkiDir.
func LoadSigner(pkiDir string) (note.Signer, error) {
	data, err := os.ReadFile(filepath.Join(pkiDir, SigningKeyFile))
	if err != nil {
		return nil, fmt.Errorf("audit signing key: %w (run trustplane init)", err)
	}
	s, err := note.NewSigner(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("audit signing key %s: %w", filepath.Join(pkiDir, SigningKeyFile), err)
	}
	return s, nil
}

// LoadVerifier reads a checkpoint verifier key, in the note verifier
// format, from path.
func LoadVerifier(path string) (note.Verifier, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit verifier key: %w", err)
	}
	v, err := note.NewVerifier(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("audit verifier key %s: %w", path, err)
	}
	return v, nil
}
