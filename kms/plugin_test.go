package kms

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/kms/pkg/service"
)

func newPlugin(t *testing.T) (*Plugin, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kms.key")
	if err := NewKeyFile(path); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return p, strings.TrimSpace(string(key))
}

func TestPluginSealsAndRefuses(t *testing.T) {
	p, key := newPlugin(t)
	ctx := t.Context()
	dek := []byte("a data encryption key, 32 bytes!")
	resp, err := p.Encrypt(ctx, "uid", dek)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(resp.Ciphertext, dek) || resp.KeyID != p.KeyID() {
		t.Fatalf("Encrypt = %+v", resp)
	}
	got, err := p.Decrypt(ctx, "uid", &service.DecryptRequest{Ciphertext: resp.Ciphertext, KeyID: resp.KeyID})
	if err != nil || !bytes.Equal(got, dek) {
		t.Fatalf("Decrypt = %q, %v", got, err)
	}
	flipped := bytes.Clone(resp.Ciphertext)
	flipped[len(flipped)-1] ^= 1
	other, _ := newPlugin(t)
	for name, req := range map[string]*service.DecryptRequest{
		"flipped byte":   {Ciphertext: flipped, KeyID: resp.KeyID},
		"foreign key id": {Ciphertext: resp.Ciphertext, KeyID: other.KeyID()},
		"short":          {Ciphertext: resp.Ciphertext[:5], KeyID: resp.KeyID},
	} {
		if _, err := p.Decrypt(ctx, "uid", req); err == nil {
			t.Errorf("%s: decrypted", name)
		} else if strings.Contains(err.Error(), key) {
			t.Errorf("%s: the error holds the key: %v", name, err)
		}
	}
	// Another plugin's key does not open it, even told its key id.
	if _, err := other.Decrypt(ctx, "uid", &service.DecryptRequest{Ciphertext: resp.Ciphertext, KeyID: other.KeyID()}); err == nil {
		t.Error("another key decrypted it")
	}
	st, err := p.Status(ctx)
	if err != nil || st.Version != "v2" || st.Healthz != "ok" || st.KeyID != p.KeyID() || strings.Contains(st.KeyID, key) {
		t.Errorf("Status = %+v, %v", st, err)
	}
}

func TestLoadRefusesExposedOrBadKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kms.key")
	if err := NewKeyFile(path); err != nil {
		t.Fatal(err)
	}
	if err := NewKeyFile(path); err == nil {
		t.Error("NewKeyFile replaced a key")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Errorf("Load of a 0644 key: %v, want a refusal", err)
	}
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("c2hvcnQta2V5LW1hdGVyaWFs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(short, slog.New(slog.DiscardHandler)); err == nil || strings.Contains(err.Error(), "c2hvcnQta2V5LW1hdGVyaWFs") {
		t.Errorf("Load of a short key: %v, want a refusal without the content", err)
	}
}
