package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/apiserver/storage/encryption"
	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/etcd/etcdtest"
)

func secretsEncryptRun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runRoot(t, append([]string{"secrets-encrypt"}, args...)...)
}

func randomKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

var secretsGR = schema.GroupResource{Resource: "secrets"}

// encryptedDataDir is a data directory over a real etcd whose Secrets are
// encrypted under AES-GCM key1, with two Secrets and a ConfigMap written
// through the store; it returns the directory, the etcd and key1's
// material.
func encryptedDataDir(t *testing.T) (string, *etcdtest.Etcd, string) {
	t.Helper()
	e := etcdtest.Start(t)
	l := datadir.Layout{Dir: e.Dir}
	key1 := randomKey(t)
	cfg := fmt.Sprintf("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n      - name: key1\n        secret: %s\n  - identity: {}\n", key1)
	if err := os.WriteFile(l.EncryptionConfig(), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := datadir.WriteEtcdServers(l, e.ClientConfig.Endpoints); err != nil {
		t.Fatal(err)
	}
	enc, err := storage.LoadEncryption(t.Context(), l.EncryptionConfig(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	store, err := storage.New(e.Client(t), clientgoscheme.Scheme, enc, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"db", "api"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"}, Data: map[string][]byte{"password": []byte("hunter2-value")}}
		if err := store.Create(t.Context(), secretsGR, storage.Key(secretsGR, "team-a", name), s); err != nil {
			t.Fatal(err)
		}
	}
	cms := schema.GroupResource{Resource: "configmaps"}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "team-a"}}
	if err := store.Create(t.Context(), cms, storage.Key(cms, "team-a", "settings"), cm); err != nil {
		t.Fatal(err)
	}
	return e.Dir, e, key1
}

// TestSecretsEncryptStatusAndVerify writes, straight into etcd, a Secret in
// plain text and one under a key the configuration does not have: status
// counts them, verify names both and fails, and none of the outputs holds
// the key or a value.
func TestSecretsEncryptStatusAndVerify(t *testing.T) {
	dir, e, key1 := encryptedDataDir(t)
	cli := e.Client(t)

	if out, errOut, code := secretsEncryptRun(t, "verify", "--dir", dir); code != 0 {
		t.Fatalf("verify of a clean store: exit %d\n%s%s", code, out, errOut)
	} else if !strings.Contains(out, "ok: 2 objects") {
		t.Errorf("verify of a clean store says %q", out)
	}

	plainKey := storage.Key(secretsGR, "team-a", "plain")
	if _, err := cli.Put(t.Context(), plainKey, "k8s\x00plain-secret-value"); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(t.Context(), storage.Key(secretsGR, "team-a", "db"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw get: %v %v", resp, err)
	}
	moved := strings.Replace(string(resp.Kvs[0].Value), ":key1:", ":gone:", 1)
	if _, err := cli.Put(t.Context(), storage.Key(secretsGR, "team-a", "moved"), moved); err != nil {
		t.Fatal(err)
	}

	var outputs []string
	out, errOut, code := secretsEncryptRun(t, "status", "--dir", dir, "-o", "json")
	outputs = append(outputs, out, errOut)
	if code != 0 {
		t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	var report encryption.Report
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	if len(report.Resources) != 1 || report.Resources[0].Resource != "secrets" {
		t.Fatalf("status covers %+v, want secrets alone", report.Resources)
	}
	r := report.Resources[0]
	if want := (encryption.Key{Provider: "aesgcm", Name: "key1"}); r.WriteKey != want || r.Objects != 4 {
		t.Errorf("secrets: write key %v, %d objects; want %v, 4", r.WriteKey, r.Objects, want)
	}
	counts := map[string]encryption.Count{}
	for _, c := range r.Counts {
		counts[c.Key.String()] = c
	}
	for key, want := range map[string]encryption.Count{
		"aesgcm key key1": {Count: 2, InConfig: true},
		"identity":        {Count: 1, InConfig: true},
		"aesgcm key gone": {Count: 1, InConfig: false},
	} {
		if got := counts[key]; got.Count != want.Count || got.InConfig != want.InConfig {
			t.Errorf("count under %s = %+v, want %+v", key, got, want)
		}
	}

	out, errOut, code = secretsEncryptRun(t, "status", "--dir", dir)
	outputs = append(outputs, out, errOut)
	for _, want := range []string{"secrets (rule secrets): 4 objects", "write key: aesgcm key key1", "keys: aesgcm key key1, identity", "not in the configuration", "plain text"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("status: exit %d, output lacks %q:\n%s%s", code, want, out, errOut)
		}
	}

	out, errOut, code = secretsEncryptRun(t, "verify", "--dir", dir)
	outputs = append(outputs, out, errOut)
	if code != 1 {
		t.Errorf("verify with a plain-text secret: exit %d, want 1", code)
	}
	for _, want := range []string{
		"secrets team-a/plain is stored in plain text; its resource is written under aesgcm key key1",
		"secrets team-a/moved is stored under aesgcm key gone, which is not in the configuration",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verify does not say %q:\n%s%s", want, out, errOut)
		}
	}
	if strings.Contains(out, "team-a/db") || strings.Contains(out, "settings") {
		t.Errorf("verify names an object that is fine:\n%s", out)
	}
	out, errOut, code = secretsEncryptRun(t, "verify", "--dir", dir, "-o", "json")
	outputs = append(outputs, out, errOut)
	if code != 1 || !strings.Contains(out, `"problems"`) {
		t.Errorf("verify -o json: exit %d\n%s%s", code, out, errOut)
	}

	for _, o := range outputs {
		for _, secret := range []string{key1, "hunter2-value", "plain-secret-value"} {
			if strings.Contains(o, secret) {
				t.Errorf("an output holds key material or a value:\n%s", o)
			}
		}
	}
}

func TestSecretsEncryptFindsEtcd(t *testing.T) {
	dir, e, _ := encryptedDataDir(t)
	l := datadir.Layout{Dir: dir}
	if err := os.Remove(l.EtcdServers()); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := secretsEncryptRun(t, "status", "--dir", dir); code != 2 || !strings.Contains(errOut, "--etcd-servers") {
		t.Errorf("status without a record: exit %d, %q; want 2 and a hint", code, errOut)
	}
	if out, errOut, code := secretsEncryptRun(t, "verify", "--dir", dir, "--etcd-servers", e.ClientConfig.Endpoints[0]); code != 0 {
		t.Errorf("verify with --etcd-servers: exit %d\n%s%s", code, out, errOut)
	}
	// The API server's etcd identity is required: without its key, no scan.
	if err := os.Remove(e.ClientConfig.KeyFile); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := secretsEncryptRun(t, "verify", "--dir", dir, "--etcd-servers", e.ClientConfig.Endpoints[0]); code != 2 {
		t.Errorf("verify without the etcd client key: exit %d, %q; want 2", code, errOut)
	}
	if _, errOut, code := secretsEncryptRun(t, "status", "--dir", dir, "-o", "yaml"); code != 2 {
		t.Errorf("status -o yaml: exit %d, %q; want 2", code, errOut)
	}
}

// TestSecretsEncryptRotateWaitsForServers: with no API server recording
// its configuration, rotate adds the new key as read-only and stops there,
// failing, rather than making a key the write key that a server may not
// read; its journal holds names, not keys.
func TestSecretsEncryptRotateWaitsForServers(t *testing.T) {
	dir, e, key1 := encryptedDataDir(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := secretsEncryptRun(t, "rotate", "--dir", dir, "--kubeconfig", kubeconfig, "--wait-timeout", "1s")
	if code == 0 || !strings.Contains(errOut, "no API server records its encryption configuration") {
		t.Fatalf("rotate without a server: exit %d\n%s%s", code, out, errOut)
	}
	status, _, _ := secretsEncryptRun(t, "status", "--dir", dir)
	if !strings.Contains(status, "write key: aesgcm key key1") || !strings.Contains(status, "keys: aesgcm key key1, aesgcm key key2, identity") {
		t.Errorf("after a rotation that waited in vain, status:\n%s", status)
	}
	resp, err := e.Client(t).Get(t.Context(), encryption.JournalKey)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("journal: %v, %v", resp, err)
	}
	data, err := os.ReadFile(datadir.Layout{Dir: dir}.EncryptionConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{out, errOut, status, string(resp.Kvs[0].Value)} {
		for _, secret := range []string{key1, keyMaterial(t, data, "key2")} {
			if strings.Contains(o, secret) {
				t.Errorf("an output or the journal holds a key:\n%s", o)
			}
		}
	}
	// The next run continues the same rotation.
	out, _, _ = secretsEncryptRun(t, "rotate", "--dir", dir, "--kubeconfig", kubeconfig, "--wait-timeout", "1s")
	if !strings.Contains(out, "continuing the rotation to aesgcm key key2 at added") {
		t.Errorf("a second run does not continue:\n%s", out)
	}
}

// keyMaterial is the secret of the key name in an EncryptionConfiguration.
func keyMaterial(t *testing.T, config []byte, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(string(config), "name: "+name+"\n")
	if !ok {
		t.Fatalf("no key %s in the config", name)
	}
	_, rest, _ = strings.Cut(rest, "secret: ")
	secret, _, _ := strings.Cut(rest, "\n")
	if len(secret) < 40 {
		t.Fatalf("key %s's secret not found", name)
	}
	return secret
}
