package e2etest

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trustplane/trustplane/etcd/etcdtest"
)

// Cluster is a data directory and, while it runs, the `trustplane up`
// process serving it. Its methods are for the test's goroutine.
type Cluster struct {
	// Dir is the data directory.
	Dir string
	// URL is the API server's URL announced by the running process.
	URL string
	// EtcdURL is the client URL of the running process's etcd.
	EtcdURL string
	// runs are the processes started on Dir, the running one (if any)
	// last.
	runs    []*Process
	running *Process
	// args are more flags of every `trustplane up`.
	args []string
}

// StartCluster runs `trustplane up` (with args, more of its flags) on free
// loopback ports in a new data directory and returns once it says it is
// listening. The process is stopped when the test ends, and must then
// exit cleanly.
func StartCluster(t testing.TB, args ...string) *Cluster {
	t.Helper()
	// A directory that does not exist yet: up must create it.
	c := &Cluster{Dir: filepath.Join(t.TempDir(), "data"), args: args}
	c.Start(t)
	return c
}

// Kubeconfig returns the path of the kubeconfig of an identity in the
// data directory: admin, scheduler, controller-manager.
func (c *Cluster) Kubeconfig(identity string) string {
	return filepath.Join(c.Dir, identity+".conf")
}

// AdminConf returns the path of the admin's kubeconfig.
func (c *Cluster) AdminConf() string { return c.Kubeconfig("admin") }

// AuditLog returns the path of the audit log.
func (c *Cluster) AuditLog() string { return filepath.Join(c.Dir, "audit", "audit.log") }

// PID returns the process ID of the running `trustplane up`.
func (c *Cluster) PID() int { return c.running.PID() }

// Output returns what every process started on Dir has written, in order.
func (c *Cluster) Output() string {
	var b strings.Builder
	for _, p := range c.runs {
		b.WriteString("--- " + p.name + "\n")
		b.WriteString(p.Output())
	}
	return b.String()
}

// Start runs `trustplane up` on Dir with new free ports and waits for it to
// announce the API server and the kubeconfig, checking that both, and the
// kubeconfigs it rewrote, name the port it was given.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	if c.running != nil {
		t.Fatal("start: trustplane is already running")
	}
	ports := etcdtest.FreePortNumbers(t, 4)
	p := Start(t, exec.Command(Binary(t), append([]string{"up", "--dir", c.Dir,
		"--secure-port", strconv.Itoa(ports[0]),
		"--etcd-client-port", strconv.Itoa(ports[1]),
		"--etcd-peer-port", strconv.Itoa(ports[2]),
		"--etcd-http-port", strconv.Itoa(ports[3]),
	}, c.args...)...))
	c.runs = append(c.runs, p)
	c.running = p
	// Before it stops (cleanups run last first): whatever the test did,
	// no Secret reached etcd in plain text or under a key the
	// configuration lacks.
	t.Cleanup(func() {
		if c.running == p && p.Running() {
			c.CheckEncryptedAtRest(t)
		}
	})

	url := strings.TrimPrefix(p.WaitLine(t, "trustplane is up: API server at "), "trustplane is up: API server at ")
	export := p.WaitLine(t, "export KUBECONFIG=")
	if want := "https://127.0.0.1:" + strconv.Itoa(ports[0]); url != want {
		t.Errorf("trustplane up announced API server at %q, want %q", url, want)
	}
	abs, err := filepath.Abs(c.AdminConf())
	if err != nil {
		t.Fatal(err)
	}
	if want := "export KUBECONFIG=" + abs; export != want {
		t.Errorf("trustplane up printed %q, want %q", export, want)
	}
	c.URL = url
	c.EtcdURL = "https://127.0.0.1:" + strconv.Itoa(ports[1])
	checkKubeconfigServers(t, url, c.AdminConf(), c.Kubeconfig("scheduler"), c.Kubeconfig("controller-manager"))
	if !slices.Contains(c.args, "--controllers=false") {
		c.WaitForServiceAccount(t, metav1.NamespaceDefault)
	}
}

// WaitForServiceAccount waits until the controller manager has given
// namespace its default ServiceAccount, without which no pod may be
// created there, as a kube cluster's tests wait for it.
func (c *Cluster) WaitForServiceAccount(t testing.TB, namespace string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminConf())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cs.CoreV1().ServiceAccounts(namespace).Get(t.Context(), "default", metav1.GetOptions{})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no default ServiceAccount in %s within 30s: %v\n%s", namespace, err, c.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// CheckEncryptedAtRest runs secrets-encrypt verify on the running
// cluster's etcd, and fails the test if it finds an object of an
// encrypted resource in plain text or under a key the configuration does
// not have. Every cluster is checked so when its test ends.
func (c *Cluster) CheckEncryptedAtRest(t testing.TB) {
	t.Helper()
	// Not the test's context: a cleanup runs once it is canceled.
	ctx, cancel := context.WithTimeout(context.Background(), RunTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, Binary(t), "secrets-encrypt", "verify", "--dir", c.Dir).CombinedOutput()
	if err != nil {
		t.Errorf("secrets-encrypt verify: %v\n%s", err, out)
	}
}

// Stop stops the running process (see Process.Stop); the data directory
// stays for Start. Stopping a cluster that is not running does nothing.
func (c *Cluster) Stop() error {
	p := c.running
	if p == nil {
		return nil
	}
	c.running = nil
	return p.Stop()
}

// checkKubeconfigServers checks that every cluster in the kubeconfigs
// points at url: up rewrites them when the port changes.
func checkKubeconfigServers(t testing.TB, url string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		cfg, err := clientcmd.LoadFromFile(p)
		if err != nil {
			t.Errorf("load %s: %v", p, err)
			continue
		}
		if len(cfg.Clusters) == 0 {
			t.Errorf("%s has no clusters", p)
		}
		for name, cl := range cfg.Clusters {
			if cl.Server != url {
				t.Errorf("%s: cluster %q has server %q, want %q", filepath.Base(p), name, cl.Server, url)
			}
		}
	}
}
