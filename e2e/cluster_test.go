package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/trustplane/trustplane/etcd/etcdtest"
)

const (
	// startTimeout bounds `trustplane up` from exec to the KUBECONFIG line;
	// the first start also creates the PKI.
	startTimeout = 60 * time.Second
	// stopTimeout bounds SIGTERM to exit.
	stopTimeout = 20 * time.Second
)

// cluster is a data directory and, while it runs, the `trustplane up`
// process serving it.
type cluster struct {
	bin string
	dir string
	// url is the API server's URL announced by the running process.
	url string
	// log collects the output of every process started on dir, for the
	// test log when the test fails.
	log  *syncBuffer
	proc *process
}

// process is one run of `trustplane up`.
type process struct {
	cmd *exec.Cmd
	// exited is closed once the process has exited and err is set.
	exited chan struct{}
	err    error
}

// startCluster runs `trustplane up` on free loopback ports in a new data
// directory and returns once it says it is listening. The process is stopped
// when the test ends; its output goes to the test log if the test failed.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{
		bin: trustplaneBinary(t),
		// A directory that does not exist yet: up must create it.
		dir: filepath.Join(t.TempDir(), "data"),
		log: &syncBuffer{},
	}
	// Cleanups run last-registered first: stop, then log, then the
	// TempDir removal registered above.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("trustplane output (%s):\n%s", c.dir, c.log.String())
		}
	})
	t.Cleanup(func() {
		if err := c.stop(); err != nil {
			t.Errorf("stop trustplane: %v", err)
		}
	})
	c.start(t)
	return c
}

func (c *cluster) adminConf() string     { return filepath.Join(c.dir, "admin.conf") }
func (c *cluster) schedulerConf() string { return filepath.Join(c.dir, "scheduler.conf") }
func (c *cluster) auditLog() string      { return filepath.Join(c.dir, "audit", "audit.log") }

// start runs `trustplane up` on c.dir with new free ports and waits for it
// to announce the API server and the kubeconfig.
func (c *cluster) start(t *testing.T) {
	t.Helper()
	if c.proc != nil {
		t.Fatal("start: trustplane is already running")
	}
	ports := etcdtest.FreePortNumbers(t, 4)
	args := []string{"up", "--dir", c.dir,
		"--secure-port", strconv.Itoa(ports[0]),
		"--etcd-client-port", strconv.Itoa(ports[1]),
		"--etcd-peer-port", strconv.Itoa(ports[2]),
		"--etcd-http-port", strconv.Itoa(ports[3]),
	}
	fmt.Fprintf(c.log, "--- trustplane %s\n", strings.Join(args, " "))
	cmd := exec.Command(c.bin, args...)
	cmd.Stderr = c.log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start trustplane: %v", err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	c.proc = p

	lines := make(chan string, 64)
	go func() {
		// Read stdout to its end before Wait, as os/exec requires; lines
		// after the ones the test waits for are still drained.
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintf(c.log, "stdout: %s\n", sc.Text())
			select {
			case lines <- sc.Text():
			default:
			}
		}
		p.err = cmd.Wait()
		close(p.exited)
	}()

	wantURL := "https://127.0.0.1:" + strconv.Itoa(ports[0])
	abs, err := filepath.Abs(c.adminConf())
	if err != nil {
		t.Fatal(err)
	}
	wantExport := "export KUBECONFIG=" + abs
	timeout := time.NewTimer(startTimeout)
	defer timeout.Stop()
	var url string
	for {
		select {
		case line := <-lines:
			if u, ok := strings.CutPrefix(line, "trustplane is up: API server at "); ok {
				url = u
			}
			if !strings.HasPrefix(line, "export KUBECONFIG=") {
				continue
			}
			if line != wantExport {
				t.Errorf("trustplane up printed %q, want %q", line, wantExport)
			}
			if url != wantURL {
				t.Errorf("trustplane up announced API server at %q, want %q", url, wantURL)
			}
			c.url = url
			checkKubeconfigServers(t, url, c.adminConf(), c.schedulerConf(), filepath.Join(c.dir, "controller-manager.conf"))
			return
		case <-p.exited:
			c.proc = nil
			t.Fatalf("trustplane up exited before it was ready: %v", p.err)
		case <-timeout.C:
			t.Fatalf("trustplane up did not print %q within %s", "export KUBECONFIG=", startTimeout)
		}
	}
}

// stop sends SIGTERM and waits for the process to exit; it kills the
// process if it takes longer than stopTimeout. Only a clean exit with
// status 0 is success. Stopping a cluster that is not running does nothing.
func (c *cluster) stop() error {
	p := c.proc
	if p == nil {
		return nil
	}
	c.proc = nil
	select {
	case <-p.exited:
		return fmt.Errorf("trustplane exited while the test still used it: %v", p.err)
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("send SIGTERM: %w", err)
	}
	timeout := time.NewTimer(stopTimeout)
	defer timeout.Stop()
	select {
	case <-p.exited:
		if p.err != nil {
			return fmt.Errorf("exit after SIGTERM: %v, want exit status 0", p.err)
		}
		return nil
	case <-timeout.C:
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("still running %s after SIGTERM; killed", stopTimeout)
	}
}

// checkKubeconfigServers checks that every cluster in the kubeconfigs
// points at url: up rewrites them when the port changes.
func checkKubeconfigServers(t *testing.T, url string, paths ...string) {
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

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a child
// process's stdout and stderr copiers.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
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
