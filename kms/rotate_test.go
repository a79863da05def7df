package kms

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/kms/pkg/service"
)

// keyLines are the keys of the file at path, for the tests to look for in
// outputs.
func keyLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

// noKeyIn fails t if any of keys is in any of outputs.
func noKeyIn(t *testing.T, keys []string, outputs ...string) {
	t.Helper()
	for _, o := range outputs {
		for _, k := range keys {
			if strings.Contains(o, k) {
				t.Errorf("an output holds a key: %q", o)
			}
		}
	}
}

// TestRotateKeyKeepsOldKeys: after rotate-key, the plugin seals under the
// new key and says so in Status, and what the old key sealed still opens;
// the file stays 0600.
func TestRotateKeyKeepsOldKeys(t *testing.T) {
	p, _ := newPlugin(t)
	ctx := t.Context()
	oldID := p.KeyID()
	dek := []byte("a data encryption key, 32 bytes!")
	sealed, err := p.Encrypt(ctx, "uid", dek)
	if err != nil {
		t.Fatal(err)
	}
	newID, err := RotateKeyFile(p.path)
	if err != nil {
		t.Fatal(err)
	}
	if newID == oldID {
		t.Fatalf("rotate-key kept key id %s", newID)
	}
	if p.KeyID() != oldID {
		t.Errorf("the key id changed before a reload")
	}
	if changed, err := p.Reload(); !changed || err != nil {
		t.Fatalf("Reload after rotate-key = %v, %v", changed, err)
	}
	if changed, err := p.Reload(); changed || err != nil {
		t.Errorf("a second Reload of the same file = %v, %v; want no change", changed, err)
	}
	st, err := p.Status(ctx)
	if err != nil || st.KeyID != newID {
		t.Errorf("Status after the rotation = %+v, %v; want key id %s", st, err, newID)
	}
	if got := p.KeyIDs(); len(got) != 2 || got[0] != newID || got[1] != oldID {
		t.Errorf("KeyIDs = %v, want [%s %s]", got, newID, oldID)
	}
	fresh, err := p.Encrypt(ctx, "uid", dek)
	if err != nil || fresh.KeyID != newID {
		t.Fatalf("Encrypt after the rotation = %+v, %v; want key id %s", fresh, err, newID)
	}
	for _, s := range []*service.EncryptResponse{sealed, fresh} {
		got, err := p.Decrypt(ctx, "uid", &service.DecryptRequest{Ciphertext: s.Ciphertext, KeyID: s.KeyID})
		if err != nil || !bytes.Equal(got, dek) {
			t.Errorf("Decrypt of what key %s sealed = %q, %v", s.KeyID, got, err)
		}
	}
	// A key id is bound to its key: the new key does not open what
	// the old one sealed, told the new id.
	if _, err := p.Decrypt(ctx, "uid", &service.DecryptRequest{Ciphertext: sealed.Ciphertext, KeyID: newID}); err == nil {
		t.Error("the new key opened what the old one sealed")
	}
	fi, err := os.Stat(p.path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the key file after rotate-key: %v, %v; want 0600", fi.Mode(), err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(p.path), ".*")); len(leftovers) != 0 {
		t.Errorf("rotate-key left %v", leftovers)
	}
}

// TestRemovedKeyFails: what a removed key sealed fails to open with
// ErrUnknownKey, which names its key id and not the key; the write key
// cannot be removed, nor a key the file does not have.
func TestRemovedKeyFails(t *testing.T) {
	p, _ := newPlugin(t)
	ctx := t.Context()
	oldID := p.KeyID()
	sealed, err := p.Encrypt(ctx, "uid", []byte("a data encryption key, 32 bytes!"))
	if err != nil {
		t.Fatal(err)
	}
	newID, err := RotateKeyFile(p.path)
	if err != nil {
		t.Fatal(err)
	}
	keys := keyLines(t, p.path)
	var errs []error
	err = RemoveKey(p.path, newID)
	errs = append(errs, err)
	if err == nil || !strings.Contains(err.Error(), "write key") {
		t.Errorf("RemoveKey of the write key = %v, want a refusal", err)
	}
	err = RemoveKey(p.path, "trustplane-0000000000000000")
	errs = append(errs, err)
	if !errors.Is(err, ErrUnknownKey) {
		t.Errorf("RemoveKey of a key the file lacks = %v, want ErrUnknownKey", err)
	}
	if err := RemoveKey(p.path, oldID); err != nil {
		t.Fatal(err)
	}
	if got := keyLines(t, p.path); len(got) != 1 || got[0] != keys[0] {
		t.Errorf("after remove-key the file has %d keys, want the write key alone", len(got))
	}
	if changed, err := p.Reload(); !changed || err != nil {
		t.Fatalf("Reload after remove-key = %v, %v", changed, err)
	}
	_, err = p.Decrypt(ctx, "uid", &service.DecryptRequest{Ciphertext: sealed.Ciphertext, KeyID: sealed.KeyID})
	errs = append(errs, err)
	if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), oldID) {
		t.Errorf("Decrypt under a removed key = %v, want ErrUnknownKey naming %s", err, oldID)
	}
	for _, err := range errs {
		if err != nil {
			noKeyIn(t, keys, err.Error())
		}
	}
}

// TestReloadKeepsKeysOfABadFile: a key file that others may read, that
// holds something else than keys, no key, or a key twice, does not load:
// the running keys stay, the refusal is said once, and it names the line,
// never the content.
func TestReloadKeepsKeysOfABadFile(t *testing.T) {
	p, _ := newPlugin(t)
	id := p.KeyID()
	good, err := os.ReadFile(p.path)
	if err != nil {
		t.Fatal(err)
	}
	line, _, err := newKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		content string
		mode    os.FileMode
		want    string
	}{
		{"readable by others", line + "\n" + string(good), 0o644, "0600"},
		{"writable by the group", line + "\n" + string(good), 0o620, "0600"},
		{"not base64", line + "\nnot-a-key-material!\n", 0o600, "line 2"},
		{"short", line + "\nc2hvcnQta2V5LW1hdGVyaWFs\n", 0o600, "line 2"},
		{"no key", "\n\n", 0o600, "no key"},
		{"a key twice", line + "\n" + line + "\n", 0o600, "twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(p.path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p.path, tt.mode); err != nil {
				t.Fatal(err)
			}
			changed, err := p.Reload()
			if changed || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Reload = %v, %v; want a refusal with %q", changed, err, tt.want)
			}
			if err != nil {
				noKeyIn(t, append(strings.Fields(tt.content), strings.Fields(string(good))...), err.Error())
			}
			if p.KeyID() != id {
				t.Errorf("the key id changed to %s", p.KeyID())
			}
			if changed, err := p.Reload(); changed || err != nil {
				t.Errorf("Reload of the same bad file again = %v, %v; want it said once", changed, err)
			}
			if _, err := Load(p.path, slog.New(slog.DiscardHandler)); err == nil {
				t.Error("Load took it")
			}
			if _, err := RotateKeyFile(p.path); err == nil {
				t.Error("rotate-key took it")
			}
		})
	}
	if err := os.WriteFile(p.path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p.path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Reload(); err != nil || p.KeyID() != id {
		t.Errorf("back to the good file: %v, key id %s, want %s", err, p.KeyID(), id)
	}
}

// LockedBuffer is a bytes.Buffer for a logger on another goroutine, for
// the tests of kms and kms_test.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *LockedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *LockedBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeReloadsTheKeyFile: a plugin serving picks up rotate-key on its
// own and logs the new key id, and a bad file, by key ids and line
// numbers: never a key.
func TestServeReloadsTheKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kms.key")
	if err := NewKeyFile(path); err != nil {
		t.Fatal(err)
	}
	var logs LockedBuffer
	p, err := Load(path, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(filepath.Join(dir, "kms.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()

	newID, err := RotateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return p.KeyID() == newID }, "the plugin to load the rotated file")
	waitFor(t, func() bool { return strings.Contains(logs.String(), "KMS key file reloaded") }, "the reload to be logged")
	keys := keyLines(t, path)
	if err := os.WriteFile(path, []byte(keys[0]+"\nnot-a-key\n"+strings.Join(keys[1:], "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(logs.String(), "not loaded") }, "the bad file to be logged")
	if p.KeyID() != newID {
		t.Errorf("a bad file changed the key id to %s", p.KeyID())
	}
	out := logs.String()
	if !strings.Contains(out, newID) {
		t.Errorf("the log does not name the new key id:\n%s", out)
	}
	noKeyIn(t, keys, out)
}

// waitFor polls cond until it holds, for at most 30 seconds.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRotateKeyAtOnce: rotate-key run several times at once keeps every
// key each run added: none is lost to another run's rewrite of the file.
func TestRotateKeyAtOnce(t *testing.T) {
	p, _ := newPlugin(t)
	const runs = 8
	ids := make(chan string, runs)
	var wg sync.WaitGroup
	for range runs {
		wg.Go(func() {
			id, err := RotateKeyFile(p.path)
			if err != nil {
				t.Error(err)
			}
			ids <- id
		})
	}
	wg.Wait()
	close(ids)
	if _, err := p.Reload(); err != nil {
		t.Fatal(err)
	}
	have := p.KeyIDs()
	if len(have) != runs+1 {
		t.Errorf("after %d rotations at once the file has %d keys, want %d", runs, len(have), runs+1)
	}
	for id := range ids {
		if !slices.Contains(have, id) {
			t.Errorf("key %s that rotate-key added is gone", id)
		}
	}
}
