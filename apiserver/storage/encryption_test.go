package storage_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/etcd/etcdtest"
	"github.com/trustplane/trustplane/kms"
)

// aesgcmConfig is an EncryptionConfiguration of Secrets under AES-GCM
// with keys (name → base64 secret) in order, then identity.
func aesgcmConfig(resources string, keys ...[2]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [%s]\n  providers:\n  - aesgcm:\n      keys:\n", resources)
	for _, k := range keys {
		fmt.Fprintf(&b, "      - name: %s\n        secret: %s\n", k[0], k[1])
	}
	b.WriteString("  - identity: {}\n")
	return b.String()
}

func newKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

func contentHash(data string) string { return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(data))) }

// syncBuffer is a log destination safe for the reload loop and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type reloadFixture struct {
	path  string
	enc   *storage.Encryption
	store *storage.Store
	etcd  *etcdtest.Etcd
	log   *syncBuffer
}

func newReloadFixture(t *testing.T, config string) *reloadFixture {
	t.Helper()
	f := &reloadFixture{path: filepath.Join(t.TempDir(), "encryption-config.yaml"), etcd: etcdtest.Start(t), log: &syncBuffer{}}
	f.write(t, config)
	var err error
	f.enc, err = storage.LoadEncryption(t.Context(), f.path, slog.New(slog.NewTextHandler(f.log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	f.store, err = storage.New(f.etcd.Client(t), clientgoscheme.Scheme, f.enc, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// write replaces the file as an operator's tools do: a new file renamed
// over the old one.
func (f *reloadFixture) write(t *testing.T, config string) {
	t.Helper()
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		t.Fatal(err)
	}
}

// run runs the reload loop until the test ends.
func (f *reloadFixture) run(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.enc.Run(ctx, 10*time.Millisecond)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func (f *reloadFixture) createSecret(t *testing.T, name, value string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string][]byte{"v": []byte(value)}}
	if err := f.store.Create(t.Context(), secrets, storage.Key(secrets, "default", name), s); err != nil {
		t.Fatal(err)
	}
}

func (f *reloadFixture) readSecret(t *testing.T, name, want string) {
	t.Helper()
	got := &corev1.Secret{}
	if err := f.store.Get(t.Context(), secrets, storage.Key(secrets, "default", name), got); err != nil {
		t.Fatalf("read secret %s: %v", name, err)
	}
	if string(got.Data["v"]) != want {
		t.Errorf("secret %s reads %q, want %q", name, got.Data["v"], want)
	}
}

// storedUnder is the AES-GCM key name the raw value of secret name is
// stored under.
func (f *reloadFixture) storedUnder(t *testing.T, name string) string {
	t.Helper()
	resp, err := f.etcd.Client(t).Get(t.Context(), storage.Key(secrets, "default", name))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw get of %s: %v %v", name, resp, err)
	}
	rest, ok := bytes.CutPrefix(resp.Kvs[0].Value, []byte("k8s:enc:aesgcm:v1:"))
	if !ok {
		t.Fatalf("secret %s is not stored under AES-GCM", name)
	}
	key, _, _ := bytes.Cut(rest, []byte(":"))
	return string(key)
}

// waitFor polls until done, failing the test after 30 seconds.
func waitFor(t *testing.T, done func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("within 30s: %s", what())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitForHash(t *testing.T, enc *storage.Encryption, want string) {
	t.Helper()
	waitFor(t, func() bool { return enc.Hash() == want }, func() string {
		return fmt.Sprintf("running configuration is %s, want %s", enc.Hash(), want)
	})
}

// TestEncryptionReloadsNewWriteKey rewrites the file with a new first key
// while the store is in use: new writes use the new key, objects written
// under the old one still read, and an update moves them to the new one.
func TestEncryptionReloadsNewWriteKey(t *testing.T) {
	key1, key2 := newKey(t), newKey(t)
	f := newReloadFixture(t, aesgcmConfig("secrets", [2]string{"key1", key1}))
	f.run(t)
	f.createSecret(t, "old", "old-value")
	if got := f.storedUnder(t, "old"); got != "key1" {
		t.Fatalf("before the reload, a write is under %s, want key1", got)
	}

	next := aesgcmConfig("secrets", [2]string{"key2", key2}, [2]string{"key1", key1})
	f.write(t, next)
	waitForHash(t, f.enc, contentHash(next))

	f.createSecret(t, "new", "new-value")
	if got := f.storedUnder(t, "new"); got != "key2" {
		t.Errorf("after the reload, a write is under %s, want key2", got)
	}
	f.readSecret(t, "old", "old-value")
	f.readSecret(t, "new", "new-value")
	if !strings.Contains(f.log.String(), "encryption config reloaded") {
		t.Errorf("the reload was not logged:\n%s", f.log)
	}
	for _, k := range []string{key1, key2} {
		if strings.Contains(f.log.String(), k) {
			t.Errorf("the log holds a key:\n%s", f.log)
		}
	}

	// Without key1, what it protects no longer reads: the reload is
	// real, not an addition.
	only2 := aesgcmConfig("secrets", [2]string{"key2", key2})
	f.write(t, only2)
	waitForHash(t, f.enc, contentHash(only2))
	if err := f.store.Get(t.Context(), secrets, storage.Key(secrets, "default", "old"), &corev1.Secret{}); err == nil {
		t.Error("a secret under a key removed from the configuration still reads")
	}
	f.readSecret(t, "new", "new-value")
}

// TestEncryptionReloadKeepsRunningConfig writes files that must not
// replace the running configuration: each is refused with a reason that
// names no key, the running configuration stays in force, and a good file
// after them loads.
func TestEncryptionReloadKeepsRunningConfig(t *testing.T) {
	key1, leaked := newKey(t), newKey(t)
	good := aesgcmConfig("secrets", [2]string{"key1", key1})
	f := newReloadFixture(t, good)
	f.createSecret(t, "a", "a-value")
	tests := []struct {
		name, config, want string
	}{
		{"malformed", "{{{ secret: " + leaked, "error"},
		{"empty", "", "empty"},
		{"missing", "", "no such file"},
		{"identity first", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - identity: {}\n  - aesgcm:\n      keys:\n      - name: k\n        secret: " + leaked + "\n", "plain text"},
		{"secrets not covered", aesgcmConfig("configmaps", [2]string{"key9", leaked}), "no provider covers secrets"},
		{"short key", aesgcmConfig("secrets", [2]string{"key9", base64.StdEncoding.EncodeToString([]byte(leaked[:7]))}), "key"},
		{"bad base64", aesgcmConfig("secrets", [2]string{"key9", leaked[:43] + "!"}), "key"},
	}
	for _, tt := range tests {
		f.write(t, tt.config)
		if tt.name == "missing" {
			if err := os.Remove(f.path); err != nil {
				t.Fatal(err)
			}
		}
		changed, err := f.enc.Reload(t.Context())
		if changed || err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Reload = %v, %v; want no change and an error mentioning %q", tt.name, changed, err, tt.want)
		}
		if err != nil {
			for _, secret := range []string{leaked, leaked[:7], leaked[:43], key1} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("%s: the error holds key material: %v", tt.name, err)
				}
			}
		}
		if got := f.enc.Hash(); got != contentHash(good) {
			t.Errorf("%s: running configuration %s, want the good one %s", tt.name, got, contentHash(good))
		}
		// The same bad file is not loaded again until it changes.
		if changed, err := f.enc.Reload(t.Context()); changed || err != nil {
			t.Errorf("%s: second Reload = %v, %v; want no change, no error", tt.name, changed, err)
		}
		f.createSecret(t, strings.ReplaceAll(tt.name, " ", "-"), "v")
		if got := f.storedUnder(t, strings.ReplaceAll(tt.name, " ", "-")); got != "key1" {
			t.Errorf("%s: a write after it is under %s, want key1", tt.name, got)
		}
		f.readSecret(t, "a", "a-value")
	}

	// The loop logs a refused file, without its keys.
	f.write(t, aesgcmConfig("configmaps", [2]string{"key9", leaked}))
	f.run(t)
	waitFor(t, func() bool { return strings.Contains(f.log.String(), "not loaded") }, func() string {
		return "a refused file was not logged:\n" + f.log.String()
	})
	for _, secret := range []string{leaked, key1} {
		if strings.Contains(f.log.String(), secret) {
			t.Errorf("the log holds key material:\n%s", f.log)
		}
	}

	key2 := newKey(t)
	next := aesgcmConfig("secrets", [2]string{"key2", key2}, [2]string{"key1", key1})
	f.write(t, next)
	waitForHash(t, f.enc, contentHash(next))
	f.createSecret(t, "after", "v")
	if got := f.storedUnder(t, "after"); got != "key2" {
		t.Errorf("after a good file, a write is under %s, want key2", got)
	}
}

// TestEncryptionWildcard: a wildcard covers Secrets, and the resources it
// names besides.
func TestEncryptionWildcard(t *testing.T) {
	f := newReloadFixture(t, aesgcmConfig("'*.*'", [2]string{"all", newKey(t)}))
	f.createSecret(t, "s", "v")
	if got := f.storedUnder(t, "s"); got != "all" {
		t.Errorf("secret under %s, want all", got)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"k": "configmap-plain-text"}}
	key := storage.Key(configmaps, "default", "c")
	if err := f.store.Create(t.Context(), configmaps, key, cm); err != nil {
		t.Fatal(err)
	}
	resp, err := f.etcd.Client(t).Get(t.Context(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw get: %v %v", resp, err)
	}
	if !bytes.HasPrefix(resp.Kvs[0].Value, []byte("k8s:enc:aesgcm:v1:all:")) {
		t.Errorf("a configmap under *.* is stored as %q...", resp.Kvs[0].Value[:min(20, len(resp.Kvs[0].Value))])
	}
}

// TestEncryptionPublish: a server's record follows its running
// configuration, and goes when it stops.
func TestEncryptionPublish(t *testing.T) {
	key1 := newKey(t)
	f := newReloadFixture(t, aesgcmConfig("secrets", [2]string{"key1", key1}))
	cli := f.etcd.Client(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.enc.Publish(ctx, cli, "server-a")
	}()
	defer func() {
		cancel()
		<-done
	}()
	recorded := func() string {
		resp, err := cli.Get(t.Context(), storage.EncryptionServersPrefix+"server-a")
		if err != nil || len(resp.Kvs) != 1 {
			return ""
		}
		var rec storage.EncryptionServer
		if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
			t.Fatalf("record: %v", err)
		}
		if bytes.Contains(resp.Kvs[0].Value, []byte(key1)) {
			t.Errorf("the record holds the key: %s", resp.Kvs[0].Value)
		}
		return rec.Hash
	}
	want := f.enc.Hash()
	waitFor(t, func() bool { return recorded() == want }, func() string { return "record " + recorded() + ", want " + want })

	next := aesgcmConfig("secrets", [2]string{"key2", newKey(t)}, [2]string{"key1", key1})
	f.write(t, next)
	if changed, err := f.enc.Reload(t.Context()); !changed || err != nil {
		t.Fatalf("Reload = %v, %v", changed, err)
	}
	want = contentHash(next)
	waitFor(t, func() bool { return recorded() == want }, func() string { return "record " + recorded() + ", want " + want })

	cancel()
	<-done
	if got := recorded(); got != "" {
		t.Errorf("a stopped server's record stays: %s", got)
	}
}

// TestUndecryptableNamed damages stored Secrets three ways: each fails
// alone, with an error that names the object, the provider and the key,
// and holds no key and no value.
func TestUndecryptableNamed(t *testing.T) {
	key1 := newKey(t)
	f := newReloadFixture(t, aesgcmConfig("secrets", [2]string{"key1", key1}))
	f.createSecret(t, "a", "a-value")
	f.createSecret(t, "b", "b-value")
	cli := f.etcd.Client(t)
	raw := func(name string) []byte {
		resp, err := cli.Get(t.Context(), storage.Key(secrets, "default", name))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("raw get %s: %v %v", name, resp, err)
		}
		return resp.Kvs[0].Value
	}
	put := func(name string, v []byte) {
		if _, err := cli.Put(t.Context(), storage.Key(secrets, "default", name), string(v)); err != nil {
			t.Fatal(err)
		}
	}
	a := raw("a")
	put("moved", a)
	flipped := bytes.Clone(raw("b"))
	flipped[len(flipped)-1] ^= 1
	put("b", flipped)
	put("gone", bytes.Replace(a, []byte(":key1:"), []byte(":gone:"), 1))
	put("odd", []byte("k8s:enc:rot13:v1:k:xyz"))

	for name, want := range map[string]string{
		"moved": "secrets default/moved is stored under aesgcm key key1 and does not decrypt with it",
		"b":     "secrets default/b is stored under aesgcm key key1 and does not decrypt with it",
		"gone":  "secrets default/gone is stored under aesgcm key gone, which is not in the configuration",
		"odd":   "secrets default/odd is stored under an unknown provider",
	} {
		err := f.store.Get(t.Context(), secrets, storage.Key(secrets, "default", name), &corev1.Secret{})
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("read %s: %v, want an error starting %q", name, err, want)
			continue
		}
		for _, secret := range []string{key1, "a-value", "b-value"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("read %s: the error holds a key or a value: %v", name, err)
			}
		}
	}
	f.readSecret(t, "a", "a-value")
}

// TestWearCountsAcrossServers: two servers' writes under one key add up
// in etcd; writes that are not encrypted with AES-GCM do not count.
func TestWearCountsAcrossServers(t *testing.T) {
	key1 := newKey(t)
	config := aesgcmConfig("secrets", [2]string{"key1", key1})
	f := newReloadFixture(t, config)
	other, err := storage.LoadEncryption(t.Context(), f.path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	otherStore, err := storage.New(f.etcd.Client(t), clientgoscheme.Scheme, other, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		f.createSecret(t, fmt.Sprintf("a%d", i), "v")
	}
	for i := range 2 {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b%d", i), Namespace: "default"}}
		if err := otherStore.Create(t.Context(), secrets, storage.Key(secrets, "default", s.Name), s); err != nil {
			t.Fatal(err)
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}}
	if err := f.store.Create(t.Context(), configmaps, storage.Key(configmaps, "default", "c"), cm); err != nil {
		t.Fatal(err)
	}
	f.enc.Wear().SetThreshold(4)
	if got := f.enc.Wear().Keys(); len(got) != 1 || got[0].Name != "key1" || got[0].Writes != 3 || got[0].Worn {
		t.Errorf("first server's wear before a flush: %+v, want key1: 3", got)
	}
	cli := f.etcd.Client(t)
	if err := f.enc.Wear().Flush(t.Context(), cli); err != nil {
		t.Fatal(err)
	}
	if err := other.Wear().Flush(t.Context(), cli); err != nil {
		t.Fatal(err)
	}
	if err := f.enc.Wear().Flush(t.Context(), cli); err != nil {
		t.Fatal(err)
	}
	got := f.enc.Wear().Keys()
	if len(got) != 1 || got[0].Writes != 5 || !got[0].Worn {
		t.Errorf("wear after both flushed: %+v, want key1: 5, worn", got)
	}
	if strings.Contains(fmt.Sprint(got), key1) {
		t.Errorf("the wear report holds the key: %v", got)
	}
}

// TestEncryptionKMSPlugin stores a Secret through trustplane's KMS v2
// plugin, over its socket; without the plugin, the configuration does not
// load: Secrets are never written unencrypted for want of it.
func TestEncryptionKMSPlugin(t *testing.T) {
	dir := t.TempDir()
	keyPath, socket := filepath.Join(dir, "kms.key"), filepath.Join(dir, "kms.sock")
	if err := kms.NewKeyFile(keyPath); err != nil {
		t.Fatal(err)
	}
	config, err := kms.NewConfig(socket)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "encryption-config.yaml")
	if err := os.WriteFile(path, config, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := storage.LoadEncryption(ctx, path, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("a KMS configuration loaded without its plugin")
	}

	p, err := kms.Load(keyPath, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := kms.Listen(socket)
	if err != nil {
		t.Fatal(err)
	}
	pluginCtx, cancelPlugin := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- p.Serve(pluginCtx, ln) }()
	stopPlugin := sync.OnceValue(func() error {
		cancelPlugin()
		return <-served
	})
	defer func() {
		if err := stopPlugin(); err != nil {
			t.Error(err)
		}
	}()
	enc, err := storage.LoadEncryption(ctx, path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	e := etcdtest.Start(t)
	store, err := storage.New(e.Client(t), clientgoscheme.Scheme, enc, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	key := storage.Key(secrets, "default", "db")
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}, Data: map[string][]byte{"v": []byte("kms-plain-value")}}
	if err := store.Create(ctx, secrets, key, s); err != nil {
		t.Fatal(err)
	}
	resp, err := e.Client(t).Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw get: %v %v", resp, err)
	}
	if v := resp.Kvs[0].Value; !bytes.HasPrefix(v, []byte("k8s:enc:kms:v2:trustplane:")) || bytes.Contains(v, []byte("kms-plain-value")) {
		t.Errorf("stored as %q..., want the KMS v2 prefix and no plain text", v[:min(len(v), 30)])
	}
	got := &corev1.Secret{}
	if err := store.Get(ctx, secrets, key, got); err != nil || string(got.Data["v"]) != "kms-plain-value" {
		t.Errorf("read back %v, %v", got.Data, err)
	}

	// The health check follows the plugin: it passes, and fails once the
	// plugin is gone (its last answer is kept up to 20 seconds).
	req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
	if err := enc.Check(req); err != nil {
		t.Errorf("health check with the plugin up: %v", err)
	}
	if err := stopPlugin(); err != nil {
		t.Error(err)
	}
	waitFor(t, func() bool { return enc.Check(req) != nil }, func() string { return "the health check still passes without the plugin" })
}
