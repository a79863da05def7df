package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/e2e/e2etest"
)

// rotationNamespace is a namespace that may hold Secrets, with n of them.
func rotationNamespace(t *testing.T, cs kubernetes.Interface, n int) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rotation", Labels: map[string]string{"trustplane.io/secrets": "allowed"}}}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%03d", i)}, StringData: map[string]string{"n": "0", "password": "rotation-secret-value"}}
		if _, err := cs.CoreV1().Secrets(ns.Name).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// An immutable Secret is rewritten too: as it is, it is no change.
	immutable := true
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "immutable"}, Immutable: &immutable, StringData: map[string]string{"password": "rotation-secret-value"}}
	if _, err := cs.CoreV1().Secrets(ns.Name).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// keysOf are the AES-GCM key names and materials of the file, for the
// test to look for in outputs.
func keysOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	keys := map[string]string{}
	for _, rc := range readEncryptionConfig(t, dir).Resources {
		for _, p := range rc.Providers {
			if p.AESGCM != nil {
				for _, k := range p.AESGCM.Keys {
					keys[k.Name] = k.Secret
				}
			}
		}
	}
	return keys
}

// checkRotated checks that the rotation to key is complete: every Secret
// is under it, the file has no other AES-GCM key, no journal is left, and
// verify passes.
func checkRotated(t *testing.T, c *e2etest.Cluster, key string) {
	t.Helper()
	counts := encryptionStatus(t, c.Dir)
	for k, n := range counts {
		switch {
		case k == "write aesgcm key "+key, k == "aesgcm key "+key, k == "identity" && n == 0:
		default:
			t.Errorf("after the rotation, status has %s: %d (all: %v)", k, n, counts)
		}
	}
	if keys := keysOf(t, c.Dir); len(keys) != 1 || keys[key] == "" {
		t.Errorf("after the rotation, the file's keys are %v names, want %s alone", len(keys), key)
	}
	if out, errOut, err := e2etest.Run(t, "secrets-encrypt", "verify", "--dir", c.Dir); err != nil {
		t.Errorf("verify after the rotation: %v\n%s%s", err, out, errOut)
	}
}

// TestSecretsEncryptRotateWithWriters rotates while writers update and
// create Secrets: the rotation completes, every Secret ends under the new
// key, and each holds its writer's last write: none lost, none undone.
func TestSecretsEncryptRotateWithWriters(t *testing.T) {
	c := e2etest.StartCluster(t, "--controllers=false", "--scheduler=false")
	cs, _ := clientFor(t, c.AdminConf())
	const n, writers = 120, 4
	ns := rotationNamespace(t, cs, n)
	before := keysOf(t, c.Dir)

	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	// last[i] is the last value of Secret i that a writer wrote; each
	// Secret has one writer. inflight[i] is the value of a write the stop
	// cut short: the server may have stored it or not.
	last, inflight := make([]int, n), make([]int, n)
	var created []string
	var mu sync.Mutex
	errc := make(chan error, writers+1)
	for w := range writers {
		wg.Go(func() {
			for round := 1; ctx.Err() == nil; round++ {
				for i := w; i < n && ctx.Err() == nil; i += writers {
					inflight[i] = round
					err := updateSecret(ctx, cs, ns, fmt.Sprintf("s%03d", i), round)
					if ctx.Err() != nil {
						return
					}
					if err != nil {
						errc <- err
						return
					}
					last[i] = round
				}
			}
		})
	}
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			name := fmt.Sprintf("new%03d", i)
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"n": "0"}}
			if _, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
				if ctx.Err() == nil {
					errc <- err
				}
				return
			}
			mu.Lock()
			created = append(created, name)
			mu.Unlock()
		}
	})

	out, errOut, err := e2etest.Run(t, "secrets-encrypt", "rotate", "--dir", c.Dir, "--page-size", "20", "--qps", "400")
	stop()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("writer: %v", err)
	}
	if err != nil {
		t.Fatalf("rotate: %v\n%s%s", err, out, errOut)
	}
	t.Logf("rotate:\n%s", out)
	if len(before) != 1 || before["key1"] == "" {
		t.Fatalf("before the rotation, keys %d, want key1 alone", len(before))
	}
	checkRotated(t, c, "key2")

	for i := range n {
		got, err := cs.CoreV1().Secrets(ns).Get(t.Context(), fmt.Sprintf("s%03d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v := string(got.Data["n"]); v != strconv.Itoa(last[i]) && v != strconv.Itoa(inflight[i]) {
			t.Errorf("secret s%03d holds write %s, its writer's last was %d (then %d in flight)", i, v, last[i], inflight[i])
		}
	}
	if len(created) == 0 {
		t.Error("no Secret was created during the rotation")
	}
	after := keysOf(t, c.Dir)
	for _, o := range []string{string(out), string(errOut), c.Output()} {
		for _, secret := range []string{before["key1"], after["key2"], "rotation-secret-value"} {
			if strings.Contains(o, secret) {
				t.Errorf("an output holds a key or a value:\n%s", o)
			}
		}
	}
}

// updateSecret writes value v into the Secret's n, again on a conflict.
func updateSecret(ctx context.Context, cs kubernetes.Interface, ns, name string, v int) error {
	for {
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Data["n"] = []byte(strconv.Itoa(v))
		_, err = cs.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// TestSecretsEncryptRotateResumes kills rotate with SIGKILL at several
// points, each run continuing the last: the last run completes the
// rotation, with every Secret readable and under the new key.
func TestSecretsEncryptRotateResumes(t *testing.T) {
	c := e2etest.StartCluster(t, "--controllers=false", "--scheduler=false")
	cs, _ := clientFor(t, c.AdminConf())
	const n = 150
	ns := rotationNamespace(t, cs, n)
	args := []string{"secrets-encrypt", "rotate", "--dir", c.Dir, "--page-size", "10", "--qps", "60", "--workers", "2"}

	// Each run is killed once it has printed the line; the one after it
	// says that it continues.
	for i, killAt := range []string{"added key key2", "ktp:rewrite", "ktp:rewrite", "verified:"} {
		p := e2etest.Start(t, exec.Command(e2etest.Binary(t), args...))
		if i > 0 {
			p.WaitLine(t, "continuing the rotation to aesgcm key key2")
		}
		if killAt == "ktp:rewrite" {
			p.WaitLine(t, "secrets: rewrote")
		} else {
			p.WaitLine(t, killAt)
		}
		p.Kill()
		t.Logf("run %d, killed after %q:\n%s", i+1, killAt, p.Output())
	}
	if _, err := os.Stat(datadir.Layout{Dir: c.Dir}.EncryptionConfig()); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := e2etest.Run(t, args...)
	if err != nil {
		t.Fatalf("the last rotate: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(string(out), "continuing the rotation") || !strings.Contains(string(out), "rotated:") {
		t.Errorf("the last rotate did not continue and complete:\n%s", out)
	}
	checkRotated(t, c, "key2")
	for i := range n {
		got, err := cs.CoreV1().Secrets(ns).Get(t.Context(), fmt.Sprintf("s%03d", i), metav1.GetOptions{})
		if err != nil || string(got.Data["password"]) != "rotation-secret-value" {
			t.Fatalf("secret s%03d after the rotation: %v", i, errors.Join(err))
		}
	}

	// Once complete, a new rotation starts afresh, to key3.
	out, errOut, err = e2etest.Run(t, args...)
	if err != nil || !strings.Contains(string(out), "rotating to aesgcm key key3") {
		t.Fatalf("a second rotation: %v\n%s%s", err, out, errOut)
	}
	checkRotated(t, c, "key3")
}

// TestSecretsEncryptRotateRandomKills kills rotate with SIGKILL after a
// random number of its output lines, run after run, until a run ends on
// its own: it must end the rotation, whatever the points it was cut at.
func TestSecretsEncryptRotateRandomKills(t *testing.T) {
	c := e2etest.StartCluster(t, "--controllers=false", "--scheduler=false")
	cs, _ := clientFor(t, c.AdminConf())
	const n = 60
	ns := rotationNamespace(t, cs, n)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	// A run killed after its rotation was complete, before it said so,
	// leaves a finished rotation: the next run starts another, to the
	// next key. The run that ends names the key it ended on.
	rotated := regexp.MustCompile(`aesgcm key (key\d+) is the only key`)
	var key string
	for run := 1; key == ""; run++ {
		if run > 60 {
			t.Fatal("60 runs did not end the rotation")
		}
		killAfter := 1 + rng.IntN(10)
		done, out := runKilledAfter(t, killAfter, "secrets-encrypt", "rotate", "--dir", c.Dir, "--page-size", "5", "--qps", "100", "--workers", "2")
		t.Logf("run %d, killed after %d lines unless done (%v):\n%s", run, killAfter, done, out)
		if !done {
			continue
		}
		m := rotated.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("run %d ended without naming the key it rotated to", run)
		}
		key = m[1]
	}
	checkRotated(t, c, key)
	for i := range n {
		got, err := cs.CoreV1().Secrets(ns).Get(t.Context(), fmt.Sprintf("s%03d", i), metav1.GetOptions{})
		if err != nil || string(got.Data["password"]) != "rotation-secret-value" {
			t.Fatalf("secret s%03d after the rotation: %v", i, err)
		}
	}
}

// runKilledAfter runs the binary with args and kills it with SIGKILL once
// it has printed lines lines. done is whether it exited on its own first,
// which must be with status 0.
func runKilledAfter(t *testing.T, lines int, args ...string) (done bool, output string) {
	t.Helper()
	cmd := exec.Command(e2etest.Binary(t), args...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	for seen := 0; seen < lines && sc.Scan(); seen++ {
		out.WriteString(sc.Text() + "\n")
	}
	if seen := strings.Count(out.String(), "\n"); seen < lines {
		// It ended before: on its own.
		if err := cmd.Wait(); err != nil {
			t.Fatalf("rotate exited: %v\n%s%s", err, out.String(), errOut.String())
		}
		return true, out.String()
	}
	cmd.Process.Kill()
	for sc.Scan() {
	}
	cmd.Wait()
	return false, out.String()
}
