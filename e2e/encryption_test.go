package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"sigs.k8s.io/yaml"

	"github.com/trustplane/trustplane/apiserver/storage/encryption"
	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/e2e/e2etest"
	"github.com/trustplane/trustplane/etcd"
)

// encryptionStatus runs secrets-encrypt status -o json on dir and returns
// the Secrets' counts by key.
func encryptionStatus(t *testing.T, dir string) map[string]int {
	t.Helper()
	out, errOut, err := e2etest.Run(t, "secrets-encrypt", "status", "--dir", dir, "-o", "json")
	if err != nil {
		t.Fatalf("secrets-encrypt status: %v\n%s", err, errOut)
	}
	var report encryption.Report
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("secrets-encrypt status -o json: %v\n%s", err, out)
	}
	counts := map[string]int{}
	for _, r := range report.Resources {
		if r.Resource != "secrets" {
			continue
		}
		counts["write "+r.WriteKey.String()] = 1
		for _, c := range r.Counts {
			counts[c.Key.String()] = c.Count
		}
	}
	return counts
}

// readEncryptionConfig reads the data directory's configuration; the test
// keeps its keys to itself.
func readEncryptionConfig(t *testing.T, dir string) *apiserverv1.EncryptionConfiguration {
	t.Helper()
	data, err := os.ReadFile(datadir.Layout{Dir: dir}.EncryptionConfig())
	if err != nil {
		t.Fatal(err)
	}
	var cfg apiserverv1.EncryptionConfiguration
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

// writeEncryptionConfig replaces the data directory's configuration, a
// new file renamed over the old.
func writeEncryptionConfig(t *testing.T, dir string, data []byte) {
	t.Helper()
	path := datadir.Layout{Dir: dir}.EncryptionConfig()
	if err := os.WriteFile(path+".new", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// TestEncryptionReloadAndStatus rewrites the running cluster's
// encryption configuration with a new first key: the server takes it
// without a restart, status shows writes moving to it, what the old key
// protects still reads, a broken file changes nothing, and no output or
// log holds a key or a value.
func TestEncryptionReloadAndStatus(t *testing.T) {
	c := e2etest.StartCluster(t, "--controllers=false", "--scheduler=false")
	cs, _ := clientFor(t, c.AdminConf())
	ctx := t.Context()
	const value = "e2e-secret-value-6d1f"
	secret := func(name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"password": value}}
	}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, secret("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	counts := encryptionStatus(t, c.Dir)
	if counts["write aesgcm key key1"] != 1 || counts["aesgcm key key1"] < 1 || counts["identity"] != 0 {
		t.Fatalf("status after init: %v; want writes under key1, nothing plain", counts)
	}
	var outputs []string
	out, errOut, err := e2etest.Run(t, "secrets-encrypt", "verify", "--dir", c.Dir)
	outputs = append(outputs, string(out), string(errOut))
	if err != nil {
		t.Fatalf("verify: %v\n%s%s", err, out, errOut)
	}

	cfg := readEncryptionConfig(t, c.Dir)
	key1 := cfg.Resources[0].Providers[0].AESGCM.Keys[0]
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	key2 := apiserverv1.Key{Name: "key2", Secret: base64.StdEncoding.EncodeToString(k)}
	cfg.Resources[0].Providers[0].AESGCM.Keys = []apiserverv1.Key{key2, key1}
	next, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeEncryptionConfig(t, c.Dir, next)

	// Until the server has loaded it, a write may still go under key1.
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, secret("probe"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n := 0
	waitFor(t, "a write under key2", func(ctx context.Context) error {
		n++
		s, err := cs.CoreV1().Secrets("default").Get(ctx, "probe", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Labels = map[string]string{"n": fmt.Sprint(n)}
		if _, err := cs.CoreV1().Secrets("default").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if got := encryptionStatus(t, c.Dir)["aesgcm key key2"]; got != 1 {
			return fmt.Errorf("%d objects under key2", got)
		}
		return nil
	})
	got, err := cs.CoreV1().Secrets("default").Get(ctx, "before", metav1.GetOptions{})
	if err != nil || string(got.Data["password"]) != value {
		t.Fatalf("a secret under key1 after the reload: %v, %v", got, err)
	}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, secret("after"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := encryptionStatus(t, c.Dir)["aesgcm key key2"]; got != 2 {
		t.Errorf("after a create, %d objects under key2, want 2", got)
	}

	// A file that would store Secrets in plain text is refused; key2
	// stays the write key.
	cfg.Resources[0].Providers = append([]apiserverv1.ProviderConfiguration{{Identity: &apiserverv1.IdentityConfiguration{}}}, cfg.Resources[0].Providers...)
	bad, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeEncryptionConfig(t, c.Dir, bad)
	waitFor(t, "the refusal in the log", func(context.Context) error {
		if !strings.Contains(c.Output(), "encryption config changed but not loaded") {
			return errors.New("not logged")
		}
		return nil
	})
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, secret("refused"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if counts := encryptionStatus(t, c.Dir); counts["aesgcm key key2"] != 3 {
		t.Errorf("after a refused file, %v; want the new secret under key2", counts)
	}

	out, _, err = e2etest.Run(t, "secrets-encrypt", "verify", "--dir", c.Dir)
	if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "secrets would be written in plain text") {
		t.Errorf("verify of a file that writes secrets in plain text: %v\n%s", err, out)
	}
	writeEncryptionConfig(t, c.Dir, next)

	// A Secret put in plain text straight into etcd is found.
	cli, err := etcd.NewClient(ctx, etcd.APIServerClientConfig(datadir.Layout{Dir: c.Dir}.PKI(), []string{c.EtcdURL}))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "/registry/secrets/default/smuggled", "k8s\x00"+value); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = e2etest.Run(t, "secrets-encrypt", "verify", "--dir", c.Dir)
	outputs = append(outputs, string(out), string(errOut))
	if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "secrets default/smuggled is stored in plain text") {
		t.Errorf("verify with a smuggled plain-text secret: %v\n%s%s", err, out, errOut)
	}
	// Gone again, or the check at the test's end finds it.
	if _, err := cli.Delete(ctx, "/registry/secrets/default/smuggled"); err != nil {
		t.Fatal(err)
	}

	outputs = append(outputs, c.Output())
	for _, o := range outputs {
		for _, s := range []string{key1.Secret, key2.Secret, value, base64.StdEncoding.EncodeToString([]byte(value))} {
			if strings.Contains(o, s) {
				t.Errorf("an output or the server's log holds a key or a value:\n%s", o)
			}
		}
	}
}

// TestEncryptionKMS: a cluster made with --encryption kms encrypts
// Secrets through the KMS v2 plugin that up runs on DIR/kms.sock, and
// reads them again after a restart. Then kms-plugin rotate-key, while it
// runs: the plugin reloads its key file, the API server learns the new
// key id from its Status and seals new Secrets under it, the old ones
// stay readable, and status counts the Secrets of each key id; rotate
// rewrites them all under the new key id, after which the old key leaves
// the file and every Secret still reads after a restart.
func TestEncryptionKMS(t *testing.T) {
	c := e2etest.StartCluster(t, "--controllers=false", "--scheduler=false", "--encryption", "kms")
	cs, _ := clientFor(t, c.AdminConf())
	const value = "kms-secret-value-93a1"
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": value}}
	if _, err := cs.CoreV1().Secrets("default").Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	byKeyID := func() map[string]int {
		t.Helper()
		counts := encryptionStatus(t, c.Dir)
		ids := map[string]int{}
		for k, n := range counts {
			if id, ok := strings.CutPrefix(k, "kms key trustplane (key id "); ok {
				ids[strings.TrimSuffix(id, ")")] = n
			} else if n > 0 && !strings.HasPrefix(k, "write ") {
				t.Errorf("status: %d Secrets under %s", n, k)
			}
		}
		if counts["write kms key trustplane"] != 1 {
			t.Errorf("status: the write key is not kms key trustplane: %v", counts)
		}
		return ids
	}
	first := byKeyID()
	if len(first) != 1 {
		t.Fatalf("status of a KMS cluster: %v; want one secret under one key id", first)
	}
	if out, errOut, err := e2etest.Run(t, "secrets-encrypt", "verify", "--dir", c.Dir); err != nil {
		t.Errorf("verify: %v\n%s%s", err, out, errOut)
	}
	fi, err := os.Stat(datadir.Layout{Dir: c.Dir}.KMSKey())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("KMS key: %v, %v; want mode 0600", fi, err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	c.Start(t)
	cs, _ = clientFor(t, c.AdminConf())
	got, err := cs.CoreV1().Secrets("default").Get(t.Context(), "db", metav1.GetOptions{})
	if err != nil || string(got.Data["password"]) != value {
		t.Fatalf("the secret after a restart: %v, %v", got, err)
	}

	out, errOut, err := e2etest.Run(t, "kms-plugin", "rotate-key", "--dir", c.Dir)
	if err != nil {
		t.Fatalf("kms-plugin rotate-key: %v\n%s%s", err, out, errOut)
	}
	newID := strings.Fields(string(out))[3]
	if first[newID] != 0 {
		t.Fatalf("rotate-key kept key id %s", newID)
	}
	// The API server asks Status again when its last answer is old
	// enough (20 seconds for /readyz, a minute on its own), and then
	// makes a new data key under the new key id.
	waitWithin(t, 3*time.Minute, "a Secret under key id "+newID, func(ctx context.Context) error {
		// Only for its side effect, the Status call; its answer is not
		// what this waits for.
		cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx)
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "after-"}, StringData: map[string]string{"password": value}}
		if _, err := cs.CoreV1().Secrets("default").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return err
		}
		if byKeyID()[newID] == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	if ids := byKeyID(); len(ids) != 2 || ids[newID] == 0 {
		t.Errorf("status after rotate-key counts %v; want Secrets under the old key id and %s", ids, newID)
	}
	got, err = cs.CoreV1().Secrets("default").Get(t.Context(), "db", metav1.GetOptions{})
	if err != nil || string(got.Data["password"]) != value {
		t.Fatalf("the secret of the old key after rotate-key: %v, %v", got, err)
	}
	if out, errOut, err := e2etest.Run(t, "secrets-encrypt", "verify", "--dir", c.Dir); err != nil {
		t.Errorf("verify after rotate-key: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(c.Output(), "KMS key file reloaded") {
		t.Errorf("the plugin did not log its reload:\n%s", c.Output())
	}

	// rotate rewrites every Secret under the new key id; then the old
	// key can leave the file, and every Secret reads after a restart,
	// without the old data key in any cache.
	rotated, errOut, err := e2etest.Run(t, "secrets-encrypt", "rotate", "--dir", c.Dir)
	if err != nil || !strings.Contains(string(rotated), "rotating to kms key trustplane (key id "+newID+")") || !strings.Contains(string(rotated), "rotated: ") {
		t.Fatalf("rotate of a KMS cluster: %v\n%s%s", err, rotated, errOut)
	}
	if ids := byKeyID(); len(ids) != 1 || ids[newID] == 0 {
		t.Errorf("status after rotate counts %v; want every Secret under %s", ids, newID)
	}
	keys, err := os.ReadFile(datadir.Layout{Dir: c.Dir}.KMSKey())
	if err != nil {
		t.Fatal(err)
	}
	for id := range first {
		if out, errOut, err := e2etest.Run(t, "kms-plugin", "remove-key", "--dir", c.Dir, "--key-id", id); err != nil {
			t.Fatalf("remove-key %s: %v\n%s%s", id, err, out, errOut)
		}
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	c.Start(t)
	cs, _ = clientFor(t, c.AdminConf())
	list, err := cs.CoreV1().Secrets("default").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("the Secrets after the old key left: %v", err)
	}
	for _, s := range list.Items {
		if string(s.Data["password"]) != value {
			t.Errorf("secret %s after the old key left holds %q", s.Name, s.Data["password"])
		}
	}
	for _, k := range strings.Fields(string(keys)) {
		if strings.Contains(c.Output(), k) || strings.Contains(string(out), k) || strings.Contains(string(rotated), k) {
			t.Errorf("the server's log or rotate-key's output holds a KMS key")
		}
	}
	if strings.Contains(c.Output(), value) {
		t.Errorf("the server's log holds a value")
	}
}
