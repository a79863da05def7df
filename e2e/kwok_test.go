package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

const (
	// kwokVersion is the kwok release that TestKwokNode builds: the newest
	// that the module proxy serves; it needs Go 1.26.
	kwokVersion = "v0.8.0"
	// kwokModule is kwok's module, and kwokPackage its command.
	kwokModule  = "sigs.k8s.io/kwok"
	kwokPackage = kwokModule + "/cmd/kwok"
	// kwokStage is the file in kwok's module holding the Stage that kwokctl
	// clusters use to make a new Node Ready. kwok has no Stage built in.
	kwokStage = "kustomize/stage/node/fast/node-initialize.yaml"
	// kwokPodStages holds the Stages that kwokctl clusters use to run the
	// pods bound to its nodes: Running and Ready, deleted when asked.
	kwokPodStages = "kustomize/stage/pod/fast"
	// kwokLayout names the set of files buildKwok keeps beside the
	// binary; a new set needs a new name, since a directory that exists
	// is taken as complete.
	kwokLayout = "2"
	// kwokBuildTimeout bounds a build from nothing, the download of
	// kwok's dependencies and their compilation (a minute and a half on
	// two cores), well within go test's default timeout of ten minutes.
	kwokBuildTimeout = 6 * time.Minute
	// kwokAnnotation marks the Nodes that kwok manages.
	kwokAnnotation = "kwok.x-k8s.io/node"
	// kwokLeaseSeconds is the lease duration kwok sets; it renews a
	// quarter of that apart, as the kubelet does.
	kwokLeaseSeconds = 4
	// kwokWait bounds each wait for what kwok does.
	kwokWait = time.Minute
)

// TestKwokNode runs kwok, a node simulator, against the cluster as a
// node agent would run, and checks that the Node it manages turns Ready
// and that it holds and renews the Node's Lease in kube-node-lease. kwok is
// given its Stage for Nodes only: no Pod stage is needed for a Node to be
// Ready. Every request kwok makes must succeed.
func TestKwokNode(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	kwok := buildKwok(t)
	c := e2etest.StartCluster(t)

	kwokProc := kwok.start(t, c, false)

	restConfig, err := clientcmd.BuildConfigFromFlags("", c.AdminConf())
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	node, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        "kwok-node-0",
		Annotations: map[string]string{kwokAnnotation: "fake"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node: %v", err)
	}

	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, kwokWait, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = n
		return nodeReady(n), nil
	})
	if err != nil {
		t.Fatalf("node %s not Ready within %s: %v; conditions %+v", node.Name, kwokWait, err, node.Status.Conditions)
	}

	var lease *coordinationv1.Lease
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, kwokWait, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			return false, err
		}
		lease = l
		return l.Spec.RenewTime != nil, nil
	})
	if err != nil {
		t.Fatalf("lease %s/%s with a renew time not there within %s: %v", corev1.NamespaceNodeLease, node.Name, kwokWait, err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h == "" {
		t.Errorf("lease holder %v, want kwok's identity", h)
	}
	if d := lease.Spec.LeaseDurationSeconds; d == nil || *d != kwokLeaseSeconds {
		t.Errorf("lease duration %v, want %d", d, kwokLeaseSeconds)
	}
	if refs := lease.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Node" || refs[0].UID != node.UID {
		t.Errorf("lease owners %+v, want the Node %s (uid %s)", refs, node.Name, node.UID)
	}

	first := lease.Spec.RenewTime.Time
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, kwokWait, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		lease = l
		return l.Spec.RenewTime != nil && l.Spec.RenewTime.After(first), nil
	})
	if err != nil {
		t.Fatalf("lease renewed at %s, not renewed again within %s: %v", first, kwokWait, err)
	}

	// A request kwok retries or does without would not show above; the
	// audit log has them all, once kwok has stopped writing to it. A
	// Conflict on a lease update is the race every lease holder handles.
	if err := kwokProc.Stop(); err != nil {
		t.Errorf("stop kwok: %v", err)
	}
	for _, ev := range readAudit(t, c.AuditLog()) {
		if !strings.HasPrefix(ev.UserAgent, "kwok/") || ev.ResponseStatus == nil {
			continue
		}
		if code := ev.ResponseStatus.Code; code >= 400 && code != http.StatusConflict {
			t.Errorf("kwok's request failed: %s", summary(ev))
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// kwokBuild is a kwok binary and the Stage files it runs with: stage for
// Nodes, podStages for the pods on them.
type kwokBuild struct {
	bin, stage, podStages string
}

// start runs kwok against c as the admin, managing the Nodes annotated
// kwokAnnotation=fake: with its Stage for Nodes, and with pods its Stages
// that run the pods on them.
func (k kwokBuild) start(t *testing.T, c *e2etest.Cluster, pods bool) *e2etest.Process {
	t.Helper()
	args := []string{"--kubeconfig=" + c.AdminConf(), "--config=" + k.stage}
	if pods {
		args = append(args, "--config="+k.podStages)
	}
	args = append(args,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+kwokAnnotation+"=fake",
		fmt.Sprintf("--node-lease-duration-seconds=%d", kwokLeaseSeconds),
	)
	cmd := exec.Command(k.bin, args...)
	// A HOME of its own: kwok reads ~/.kwok/kwok.yaml when it exists.
	cmd.Env = []string{"HOME=" + t.TempDir()}
	return e2etest.Start(t, cmd)
}

// buildKwok returns kwokVersion's binary and Stage from the user's cache
// directory, building them there on first use. A kwok that cannot be built
// skips the test, or fails it when CI=true.
func buildKwok(t *testing.T) kwokBuild {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		kwokUnavailable(t, err)
	}
	parent := filepath.Join(cache, "trustplane-test")
	dir := filepath.Join(parent, "kwok-"+kwokVersion+"-"+kwokLayout)
	b := kwokBuild{bin: filepath.Join(dir, "kwok"), stage: filepath.Join(dir, filepath.Base(kwokStage)), podStages: filepath.Join(dir, "pod-stages.yaml")}
	if _, err := os.Stat(dir); err == nil {
		return b
	}
	start := time.Now()
	if err := installKwok(t.Context(), parent, dir); err != nil {
		kwokUnavailable(t, err)
	}
	t.Logf("built kwok %s into %s in %s", kwokVersion, dir, time.Since(start).Round(time.Second))
	return b
}

func kwokUnavailable(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and kwok %s is unavailable: %v", kwokVersion, err)
	}
	t.Skipf("skipping: kwok %s is unavailable: %v", kwokVersion, err)
}

// installKwok builds kwok with go install, so that its own go.mod decides
// its dependencies and none of ours mix in, and copies its Stage from the
// module beside it. It works in a new directory under parent, renamed to
// dir at the end: a dir that exists is complete, and test runs side by
// side never use half of one.
func installKwok(ctx context.Context, parent, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, kwokBuildTimeout)
	defer cancel()
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "kwok-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // nothing left once renamed
	// In tmp, outside any module or workspace.
	goCmd := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOWORK=off")
		return cmd
	}
	if out, err := goCmd("install", kwokPackage+"@"+kwokVersion).CombinedOutput(); err != nil {
		return fmt.Errorf("go install %s@%s: %w\n%s", kwokPackage, kwokVersion, err, out)
	}
	// go install has just downloaded the module; this only finds it.
	var stderr strings.Builder
	download := goCmd("mod", "download", "-json", kwokModule+"@"+kwokVersion)
	download.Stderr = &stderr
	out, err := download.Output()
	if err != nil {
		return fmt.Errorf("go mod download %s@%s: %w\n%s%s", kwokModule, kwokVersion, err, out, stderr.String())
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return fmt.Errorf("go mod download -json %s@%s printed no module directory: %v\n%s", kwokModule, kwokVersion, err, out)
	}
	stage, err := os.ReadFile(filepath.Join(mod.Dir, kwokStage))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, filepath.Base(kwokStage)), stage, 0o644); err != nil {
		return err
	}
	// The pod Stages in one file of YAML documents, as kwok reads them.
	podStages, err := filepath.Glob(filepath.Join(mod.Dir, kwokPodStages, "pod-*.yaml"))
	if err != nil || len(podStages) == 0 {
		return fmt.Errorf("no pod Stages in %s: %v", filepath.Join(mod.Dir, kwokPodStages), err)
	}
	var all []byte
	for _, f := range podStages {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		all = append(append(all, "---\n"...), b...)
	}
	if err := os.WriteFile(filepath.Join(tmp, "pod-stages.yaml"), all, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(dir); statErr == nil {
			return nil // another run finished first
		}
		return fmt.Errorf("move kwok into place: %w", err)
	}
	return nil
}
