package kms_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/apiserver/storage/encryption"
	"github.com/trustplane/trustplane/etcd/etcdtest"
	"github.com/trustplane/trustplane/kms"
)

var secrets = schema.GroupResource{Resource: "secrets"}

// TestRotateKeyUnderTheAPIServer rotates the plugin's key under k8s.io/
// apiserver's KMS v2 envelope transformer, as the API server runs it: the
// transformer learns the new key id from Status and seals new values
// under a new data key wrapped by the new key; values of the old key stay
// readable; status tells them apart by key id; once the old key is
// removed, a transformer without the data key in its cache (a restarted
// server) fails those values alone, with an error that names the object
// and the missing key id, and never a key.
func TestRotateKeyUnderTheAPIServer(t *testing.T) {
	dir := t.TempDir()
	keyPath, socket := filepath.Join(dir, "kms.key"), filepath.Join(dir, "kms.sock")
	if err := kms.NewKeyFile(keyPath); err != nil {
		t.Fatal(err)
	}
	config, err := kms.NewConfig(socket)
	if err != nil {
		t.Fatal(err)
	}
	configPath := filepath.Join(dir, "encryption-config.yaml")
	if err := os.WriteFile(configPath, config, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs kms.LockedBuffer
	p, err := kms.Load(keyPath, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := kms.Listen(socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	pluginCtx, stopPlugin := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- p.Serve(pluginCtx, ln) }()
	defer func() {
		stopPlugin()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	e := etcdtest.Start(t)
	cli := e.Client(t)
	newStore := func() (*storage.Encryption, *storage.Store) {
		t.Helper()
		enc, err := storage.LoadEncryption(ctx, configPath, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		store, err := storage.New(cli, clientgoscheme.Scheme, enc, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return enc, store
	}
	enc, store := newStore()
	write := func(store *storage.Store, name string) encryption.Key {
		t.Helper()
		key := storage.Key(secrets, "default", name)
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string][]byte{"v": []byte("value-of-" + name)}}
		if err := store.Create(ctx, secrets, key, s); err != nil {
			t.Fatal(err)
		}
		resp, err := cli.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("raw get %s: %v %v", name, resp, err)
		}
		return encryption.KeyOf(resp.Kvs[0].Value)
	}
	read := func(store *storage.Store, name string) error {
		t.Helper()
		got := &corev1.Secret{}
		err := store.Get(ctx, secrets, storage.Key(secrets, "default", name), got)
		if err == nil && string(got.Data["v"]) != "value-of-"+name {
			t.Errorf("%s read back %q", name, got.Data["v"])
		}
		return err
	}

	oldID := p.KeyID()
	if k := write(store, "before"); k.KeyID != oldID {
		t.Fatalf("before the rotation, stored under %v, want key id %s", k, oldID)
	}
	newID, err := kms.RotateKeyFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Reload(); err != nil {
		t.Fatal(err)
	}
	// The transformer asks Status again once its last answer is 20
	// seconds old (the health check's), and on a new key id makes a new
	// data key: each write until then is under the old key, which is
	// still right.
	req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
	for i := 0; ; i++ {
		if err := enc.Check(req); err != nil {
			t.Fatalf("health check: %v", err)
		}
		k := write(store, fmt.Sprintf("during-%d", i))
		if k.KeyID == newID {
			break
		}
		if k.KeyID != oldID {
			t.Fatalf("a write during the rotation is under %v, want key id %s or %s", k, oldID, newID)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the transformer never took key id %s", newID)
		case <-time.After(time.Second):
		}
	}
	if k := write(store, "after"); k.KeyID != newID {
		t.Fatalf("after the rotation, stored under %v, want key id %s", k, newID)
	}
	if err := read(store, "before"); err != nil {
		t.Errorf("a value of the old key after the rotation: %v", err)
	}

	// status counts the values of each key id.
	cfg, err := encryption.ReadConfig(configPath)
	if err != nil {
		t.Fatal(err)
	}
	report, err := encryption.Status(ctx, encryption.Scanner{Client: cli}, cfg, []schema.GroupResource{secrets}, encryption.PluginProbe(ctx))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, c := range report.Resources[0].Counts {
		if c.Count > 0 && !c.InConfig {
			t.Errorf("status: %v is not in the configuration", c.Key)
		}
		counts[c.Key.KeyID] += c.Count
	}
	if counts[oldID] == 0 || counts[newID] < 2 || len(report.Problems) != 0 {
		t.Errorf("status counts %v (problems %v), want values under %s and %s", counts, report.Problems, oldID, newID)
	}

	keys := strings.Fields(readFile(t, keyPath))
	if err := kms.RemoveKey(keyPath, oldID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Reload(); err != nil {
		t.Fatal(err)
	}
	// verify asks the plugin, which no longer holds the old key.
	report, err = encryption.Status(ctx, encryption.Scanner{Client: cli}, cfg, []schema.GroupResource{secrets}, encryption.PluginProbe(ctx))
	if err != nil {
		t.Fatal(err)
	}
	var flagged []string
	for _, pr := range report.Problems {
		if pr.Under.KeyID != oldID || !strings.Contains(pr.Reason, "no longer holds") {
			t.Errorf("problem %s; want only objects under the removed key id %s", pr, oldID)
		}
		flagged = append(flagged, pr.Name)
	}
	if !slices.Contains(flagged, "default/before") || len(flagged) != counts[oldID] {
		t.Errorf("verify flagged %v; want the %d objects under %s, default/before among them", flagged, counts[oldID], oldID)
	}

	_, restarted := newStore()
	err = read(restarted, "before")
	if err == nil {
		t.Fatal("a value of a removed key was read by a server without its data key")
	}
	for _, want := range []string{"secrets default/before", oldID, "not in the key file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not name %q", err, want)
		}
	}
	if err := read(restarted, "after"); err != nil {
		t.Errorf("a value of the new key, beside one that fails: %v", err)
	}
	for _, o := range []string{err.Error(), logs.String()} {
		for _, k := range keys {
			if strings.Contains(o, k) {
				t.Errorf("an error or the log holds a key: %s", o)
			}
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
