package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trustplane/trustplane/e2e/e2etest"
	"github.com/trustplane/trustplane/etcd/etcdtest"
)

// etcd and the API server run as separate processes, the API server
// reaching etcd over mutual TLS with its own identity.
func TestSeparateProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	bin := e2etest.Binary(t)
	dir := filepath.Join(t.TempDir(), "data")
	ports := etcdtest.FreePortNumbers(t, 4)
	api, client, peer, httpPort := strconv.Itoa(ports[0]), strconv.Itoa(ports[1]), strconv.Itoa(ports[2]), strconv.Itoa(ports[3])
	if out, err := exec.Command(bin, "init", "--dir", dir, "--secure-port", api).CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	etcdProc := e2etest.Start(t, exec.Command(bin, "etcd", "--dir", dir, "--etcd-client-port", client, "--etcd-peer-port", peer, "--etcd-http-port", httpPort))
	line := etcdProc.WaitLine(t, "etcd serving at ")
	etcdURL := strings.TrimPrefix(line, "etcd serving at ")
	if etcdURL != "https://127.0.0.1:"+client {
		t.Errorf("etcd at %q, want https://127.0.0.1:%s", etcdURL, client)
	}
	e2etest.Start(t, exec.Command(bin, "apiserver", "--dir", dir, "--secure-port", api, "--etcd-servers", etcdURL)).WaitLine(t, "API server serving at ")

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
