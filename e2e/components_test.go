package e2e

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trustplane/trustplane/etcd/etcdtest"
)

// runUntilLine starts the binary with args and returns once it prints a
// line starting with prefix; the process is stopped with SIGTERM, and must
// exit cleanly, when the test ends.
func runUntilLine(t *testing.T, bin, prefix string, args ...string) string {
	t.Helper()
	log := &syncBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), prefix) {
				select {
				case found <- sc.Text():
				default:
				}
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("trustplane %s: exit after SIGTERM: %v\n%s", args[0], err, log.String())
			}
		case <-time.After(stopTimeout):
			cmd.Process.Kill()
			t.Errorf("trustplane %s: still running after SIGTERM; killed", args[0])
		}
	})
	select {
	case line := <-found:
		return line
	case err := <-exited:
		t.Fatalf("trustplane %s exited: %v\n%s", args[0], err, log.String())
	case <-time.After(startTimeout):
		t.Fatalf("trustplane %s printed no %q line\n%s", args[0], prefix, log.String())
	}
	return ""
}

// etcd and the API server run as separate processes, the API server
// reaching etcd over mutual TLS with its own identity.
func TestSeparateProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	bin := trustplaneBinary(t)
	dir := filepath.Join(t.TempDir(), "data")
	ports := etcdtest.FreePortNumbers(t, 4)
	api, client, peer, httpPort := strconv.Itoa(ports[0]), strconv.Itoa(ports[1]), strconv.Itoa(ports[2]), strconv.Itoa(ports[3])
	if out, err := exec.Command(bin, "init", "--dir", dir, "--secure-port", api).CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	line := runUntilLine(t, bin, "etcd serving at ", "etcd", "--dir", dir, "--etcd-client-port", client, "--etcd-peer-port", peer, "--etcd-http-port", httpPort)
	etcdURL := strings.TrimPrefix(line, "etcd serving at ")
	if etcdURL != "https://127.0.0.1:"+client {
		t.Errorf("etcd at %q, want https://127.0.0.1:%s", etcdURL, client)
	}
	runUntilLine(t, bin, "API server serving at ", "apiserver", "--dir", dir, "--secure-port", api, "--etcd-servers", etcdURL)

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) < 2 {
		t.Fatalf("namespaces through the separate API server: %v %v", list, err)
	}
}
