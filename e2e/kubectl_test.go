package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// kubectlTimeout bounds every kubectl invocation.
const kubectlTimeout = 60 * time.Second

// kubectl runs one stock kubectl binary with a HOME and a discovery cache
// of its own, so that nothing from the machine's ~/.kube or an earlier run
// is used.
type kubectl struct {
	version  string // such as "1.32"
	path     string
	home     string
	cacheDir string
}

// result is what one kubectl invocation did.
type result struct {
	stdout, stderr string
	exit           int
}

// forEachKubectl runs test in parallel subtests, one for each of
// kubectlVersions, each with its kubectl and a cluster of its own. It skips
// the test with -short.
func forEachKubectl(t *testing.T, test func(t *testing.T, k *kubectl, c *e2etest.Cluster)) {
	t.Helper()
	forEachKubectlOn(t, func(t *testing.T) *e2etest.Cluster { return e2etest.StartCluster(t) }, test)
}

// forEachKubectlOn is forEachKubectl on clusters start starts.
func forEachKubectlOn(t *testing.T, start func(t *testing.T) *e2etest.Cluster, test func(t *testing.T, k *kubectl, c *e2etest.Cluster)) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	for _, version := range kubectlVersions {
		t.Run("kubectl-"+version, func(t *testing.T) {
			t.Parallel()
			test(t, newKubectl(t, version), start(t))
		})
	}
}

// newKubectl finds kubectl.<version> (such as "1.32") or skips the test;
// with CI=true a missing kubectl fails it instead.
func newKubectl(t *testing.T, version string) *kubectl {
	t.Helper()
	path, err := findKubectl(version)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	tmp := t.TempDir()
	k := &kubectl{
		version:  version,
		path:     path,
		home:     filepath.Join(tmp, "home"),
		cacheDir: filepath.Join(tmp, "cache"),
	}
	if err := os.Mkdir(k.home, 0o700); err != nil {
		t.Fatal(err)
	}
	// The version dispatcher next to these binaries picks by name; make
	// sure the one found is the one asked for.
	res := k.run(t, "", "version", "--client")
	if want := "Client Version: v" + version + "."; res.exit != 0 || !strings.Contains(res.stdout, want) {
		t.Fatalf("%s version --client: exit %d, stdout %q; want exit 0 and %q", path, res.exit, res.stdout, want)
	}
	return k
}

// findKubectl looks for kubectl.<version> in the directory of the file that
// `kubectl` on PATH resolves to, where versioned binaries are installed side
// by side, then on PATH.
func findKubectl(version string) (string, error) {
	name := "kubectl." + version
	if p, err := exec.LookPath("kubectl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			candidate := filepath.Join(filepath.Dir(real), name)
			if fi, err := os.Stat(candidate); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return candidate, nil
			}
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", errors.New(name + " not found: looked next to the file that kubectl on PATH resolves to, then on PATH")
}

// run runs kubectl with args; kubeconfig, unless empty, is passed with
// --kubeconfig. A non-zero exit is a result, not a failure; a kubectl that
// cannot start or outlives kubectlTimeout fails the test.
func (k *kubectl) run(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	return k.runEnv(t, kubeconfig, nil, args...)
}

// runEnv is run with extra environment variables, such as KUBE_EDITOR.
func (k *kubectl) runEnv(t *testing.T, kubeconfig string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	full := []string{"--cache-dir", k.cacheDir}
	if kubeconfig != "" {
		full = append(full, "--kubeconfig", kubeconfig)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, k.path, full...)
	// Only what kubectl needs: no KUBECONFIG or other settings of the
	// machine leak in. Stdin stays empty: kubectl must never wait for a
	// prompt.
	cmd.Env = append([]string{"HOME=" + k.home, "PATH=" + os.Getenv("PATH")}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("kubectl %s: no answer within %s; stderr: %s", strings.Join(args, " "), kubectlTimeout, res.stderr)
	case errors.As(err, &exitErr):
		res.exit = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// writeKubeconfig writes to dst a copy of the kubeconfig src whose users
// carry no client certificate, then lets edit give them something else.
func writeKubeconfig(t *testing.T, src, dst string, edit func(*clientcmdapi.AuthInfo)) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(src)
	if err != nil {
		t.Fatalf("load %s: %v", src, err)
	}
	if len(cfg.AuthInfos) == 0 {
		t.Fatalf("%s has no users", src)
	}
	for _, u := range cfg.AuthInfos {
		u.ClientCertificate, u.ClientCertificateData = "", nil
		u.ClientKey, u.ClientKeyData = "", nil
		edit(u)
	}
	if err := clientcmd.WriteToFile(*cfg, dst); err != nil {
		t.Fatalf("write %s: %v", dst, err)
	}
}
