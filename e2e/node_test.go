package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/trustplane/trustplane/e2e/e2etest"
	"github.com/trustplane/trustplane/node"
)

// nodeCert is the certificate a node agent uses, from its directory.
func nodeCert(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "node-client-current.pem"))
	if err != nil {
		t.Fatal(err)
	}
	for b, rest := pem.Decode(data); b != nil; b, rest = pem.Decode(rest) {
		if b.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	t.Fatalf("no certificate in %s", dir)
	return nil
}

// nodeClient is a client with the certificate a node agent uses.
func nodeClient(t *testing.T, cfg *rest.Config, dir string) kubernetes.Interface {
	t.Helper()
	c := rest.AnonymousClientConfig(cfg)
	c.CertFile = filepath.Join(dir, "node-client-current.pem")
	c.KeyFile = c.CertFile
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// A node agent joins as kube's nodes do, with a bootstrap token and a CA
// pin; runs the pods bound to it; keeps nothing but its certificate,
// renews it, and reaches no further than its own node.
func TestNodeAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	// Node certificates live two minutes (with the five minutes cfssl
	// backdates them by), so the agent renews one within the test.
	c := e2etest.StartCluster(t, "--cluster-signing-duration", "2m")
	admin, adminCfg := clientFor(t, c.AdminConf())
	ctx := t.Context()
	tok := tokenCreate(t, c)
	dir := t.TempDir()
	args := []string{"node", "--name", "w", "--count", "3", "--server", c.URL, "--dir", dir, "--node-status-update-frequency", "1s"}
	agent := e2etest.Start(t, exec.Command(e2etest.Binary(t), append(args, "--token", tok["token"], "--ca-cert-hash", tok["ca-cert-hash"])...))
	names := []string{"w-0", "w-1", "w-2"}
	nodesUp := func(since time.Time) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			for _, n := range names {
				node, err := admin.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if !nodeReady(node) || node.Status.Allocatable.Pods().Value() != 110 || node.Labels[corev1.LabelHostname] != n {
					return fmt.Errorf("node %s: %+v", n, node.Status)
				}
				l, err := admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != n || l.Spec.RenewTime == nil || l.Spec.RenewTime.Before(&metav1.MicroTime{Time: since}) ||
					len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != node.UID {
					return fmt.Errorf("lease %s: %+v %+v", n, l.OwnerReferences, l.Spec)
				}
			}
			return nil
		}
	}
	waitFor(t, "three Ready nodes renewing their Leases", nodesUp(time.Time{}))
	first := nodeCert(t, filepath.Join(dir, "w-0"))
	if first.Subject.CommonName != "system:node:w-0" || !slices.Equal(first.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("w-0's certificate is for %s", first.Subject)
	}

	// The token served for the first CSRs only: no file keeps it.
	_, secret, _ := strings.Cut(tok["token"], ".")
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s holds the bootstrap token", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// A Deployment runs on the nodes.
	createNamespace(t, c, admin, "apps")
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptrTo[int32](6),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}},
			},
		},
	}
	if _, err := admin.AppsV1().Deployments("apps").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Deployment's six pods running on the nodes", func(ctx context.Context) error {
		d, err := admin.AppsV1().Deployments("apps").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 6 {
			return fmt.Errorf("%d available", d.Status.AvailableReplicas)
		}
		pods, err := admin.CoreV1().Pods("apps").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return err
		}
		ips := map[string]bool{}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning || !slices.Contains(names, p.Spec.NodeName) || p.Status.PodIP == "" || ips[p.Status.PodIP] ||
				len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Running == nil {
				return fmt.Errorf("pod %s on %q: %+v", p.Name, p.Spec.NodeName, p.Status)
			}
			ips[p.Status.PodIP] = true
		}
		return nil
	})

	// Pods that finish: one after its run, one past its deadline.
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "once", Annotations: map[string]string{node.RunForAnnotation: "1s"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Spec: corev1.PodSpec{ActiveDeadlineSeconds: ptrTo[int64](1)}},
	} {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Spec.Containers = []corev1.Container{{Name: "job", Image: "registry.example/job:1"}}
		if _, err := admin.CoreV1().Pods("apps").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "once Succeeded, late Failed past its deadline", func(ctx context.Context) error {
		once, err := admin.CoreV1().Pods("apps").Get(ctx, "once", metav1.GetOptions{})
		if err != nil {
			return err
		}
		late, err := admin.CoreV1().Pods("apps").Get(ctx, "late", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if once.Status.Phase != corev1.PodSucceeded || late.Status.Phase != corev1.PodFailed || late.Status.Reason != "DeadlineExceeded" {
			return fmt.Errorf("once %s, late %s %s", once.Status.Phase, late.Status.Phase, late.Status.Reason)
		}
		return nil
	})

	// A gracefully deleted pod goes when its grace period ends, not before.
	var mu sync.Mutex
	gone := map[string]time.Time{}
	watchPods(t, admin, "apps", "app=web", func(pod *corev1.Pod, _, deleted bool) {
		if deleted {
			mu.Lock()
			gone[pod.Name] = time.Now()
			mu.Unlock()
		}
	})
	pods, err := admin.CoreV1().Pods("apps").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	victim := pods.Items[0].Name
	if err := admin.CoreV1().Pods("apps").Delete(ctx, victim, metav1.DeleteOptions{GracePeriodSeconds: ptrTo[int64](2)}); err != nil {
		t.Fatal(err)
	}
	var graceEnds time.Time
	if p, err := admin.CoreV1().Pods("apps").Get(ctx, victim, metav1.GetOptions{}); err == nil && p.DeletionTimestamp != nil {
		graceEnds = p.DeletionTimestamp.Time
	}
	waitFor(t, "the deleted pod gone", func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := gone[victim]; !ok {
			return errors.New("still there")
		}
		return nil
	})
	// deletionTimestamp has whole seconds; the agent waits for the instant.
	if at := gone[victim]; at.Before(graceEnds.Add(-time.Second)) {
		t.Errorf("pod deleted at %s, before its grace period ended at %s", at, graceEnds)
	}

	// A node's certificate reaches its own node and pods, and no further.
	for _, s := range []string{"s0", "s1"} {
		if _, err := admin.CoreV1().Secrets("apps").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The shipped policy pods_secret_refs lets pods of the default
	// ServiceAccount mount the Secrets its annotation lists.
	allow := []byte(`{"metadata":{"annotations":{"trustplane.io/allowed-secrets":"s0,s1"}}}`)
	if _, err := admin.CoreV1().ServiceAccounts("apps").Patch(ctx, "default", types.MergePatchType, allow, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, n := range []string{"w-0", "w-1"} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("uses-s%d", i)},
			Spec: corev1.PodSpec{
				NodeName:   n,
				Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}},
				Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: fmt.Sprintf("s%d", i)}}}},
			},
		}
		if _, err := admin.CoreV1().Pods("apps").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w0 := nodeClient(t, adminCfg, filepath.Join(dir, "w-0"))
	waitFor(t, "w-0 reads the Secret of its own pod", func(ctx context.Context) error {
		_, err := w0.CoreV1().Secrets("apps").Get(ctx, "s0", metav1.GetOptions{})
		return err
	})
	other, err := admin.CoreV1().Nodes().Get(ctx, "w-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other.Status.Conditions = nil
	refusals := map[string]error{}
	_, refusals["read the Secret of w-1's pod"] = w0.CoreV1().Secrets("apps").Get(ctx, "s1", metav1.GetOptions{})
	_, refusals["change w-1's status"] = w0.CoreV1().Nodes().UpdateStatus(ctx, other, metav1.UpdateOptions{})
	_, refusals["patch w-1"] = w0.CoreV1().Nodes().Patch(ctx, "w-1", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"example.com/owner":"w-0"}}}`), metav1.PatchOptions{})
	refusals["delete w-1's Lease"] = w0.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, "w-1", metav1.DeleteOptions{})
	_, refusals["create a pod"] = w0.CoreV1().Pods("apps").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sneaky"},
		Spec:       corev1.PodSpec{NodeName: "w-0", Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}},
	}, metav1.CreateOptions{})
	for what, err := range refusals {
		if !apierrors.IsForbidden(err) {
			t.Errorf("w-0 may %s: %v, want Forbidden", what, err)
		}
	}

	// Restarted without a token or a pin, the nodes carry on with the
	// certificates and the CA they kept.
	if err := agent.Stop(); err != nil {
		t.Fatalf("node agent: %v\n%s", err, agent.Output())
	}
	restarted := time.Now()
	agent = e2etest.Start(t, exec.Command(e2etest.Binary(t), args...))
	waitFor(t, "the nodes renewing their Leases after a restart", nodesUp(restarted))

	// The certificate is renewed before it expires, with a CSR the node
	// makes as itself, and the node goes on with the new one.
	var renewedAt time.Time
	waitWithin(t, 3*time.Minute, "w-0's certificate renewed", func(ctx context.Context) error {
		if c := nodeCert(t, filepath.Join(dir, "w-0")); c.SerialNumber.Cmp(first.SerialNumber) == 0 {
			return errors.New("same certificate")
		}
		renewedAt = time.Now()
		return nil
	})
	csrs, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var renewals int
	for _, csr := range csrs.Items {
		if csr.Spec.Username == "system:node:w-0" && len(csr.Status.Certificate) > 0 {
			renewals++
		}
	}
	if renewals == 0 {
		t.Errorf("no CSR issued to system:node:w-0 itself")
	}
	waitFor(t, "the nodes renewing their Leases with the new certificate", nodesUp(renewedAt))
	if err := agent.Stop(); err != nil {
		t.Errorf("node agent: %v\n%s", err, agent.Output())
	}
}

// kwok's nodes and trustplane's node agents share one cluster, and the
// scheduler places pods on both, which run them.
func TestMixedNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	kwok := buildKwok(t)
	c := e2etest.StartCluster(t)
	kwok.start(t, c, true)
	tok := tokenCreate(t, c)
	// The token from a file, as a machine joins without showing it in
	// its process list.
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(tok["token"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e2etest.Start(t, exec.Command(e2etest.Binary(t), "node", "--name", "agent", "--count", "2", "--server", c.URL, "--dir", t.TempDir(),
		"--token-file", tokenFile, "--ca-cert-hash", tok["ca-cert-hash"], "--node-labels", "pool=mixed"))
	admin, _ := clientFor(t, c.AdminConf())
	ctx := t.Context()
	for i := range 2 {
		_, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("kwok-%d", i),
			Annotations: map[string]string{kwokAnnotation: "fake"},
			Labels:      map[string]string{"pool": "mixed", corev1.LabelHostname: fmt.Sprintf("kwok-%d", i)},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "four Ready nodes", func(ctx context.Context) error {
		nodes, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "pool=mixed"})
		if err != nil {
			return err
		}
		ready := 0
		for i := range nodes.Items {
			if nodeReady(&nodes.Items[i]) {
				ready++
			}
		}
		if ready != 4 {
			return fmt.Errorf("%d of %d nodes Ready", ready, len(nodes.Items))
		}
		return nil
	})
	// One pod per node, by required anti-affinity: both kinds of node
	// get pods.
	for i := range 4 {
		p := schedPod(fmt.Sprintf("spread-%d", i), "100m", map[string]string{"pool": "mixed"})
		p.Labels = map[string]string{"app": "spread"}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels},
				TopologyKey:   corev1.LabelHostname,
			}},
		}}
		if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "a pod Running on each kwok node and each node agent", func(ctx context.Context) error {
		pods, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=spread"})
		if err != nil {
			return err
		}
		on := map[string]bool{}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("%s on %q is %s", p.Name, p.Spec.NodeName, p.Status.Phase)
			}
			on[p.Spec.NodeName] = true
		}
		for _, n := range []string{"kwok-0", "kwok-1", "agent-0", "agent-1"} {
			if !on[n] {
				return fmt.Errorf("no pod on %s: %v", n, on)
			}
		}
		return nil
	})
}

// `trustplane up --nodes 2` runs two node agents beside the control
// plane: they join with a token up makes and then deletes, run a
// Deployment's pods, and after a restart carry on with their
// certificates, no token made again.
func TestUpNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t, "--nodes", "2")
	admin, _ := clientFor(t, c.AdminConf())
	ctx := t.Context()
	ready := func(ctx context.Context) error {
		for _, n := range []string{"node-0", "node-1"} {
			node, err := admin.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !nodeReady(node) {
				return fmt.Errorf("node %s not Ready", n)
			}
		}
		return nil
	}
	noToken := func(ctx context.Context) error {
		l, err := admin.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{FieldSelector: "type=bootstrap.kubernetes.io/token"})
		if err != nil {
			return err
		}
		if len(l.Items) > 0 {
			return fmt.Errorf("%d bootstrap tokens left", len(l.Items))
		}
		return nil
	}
	waitFor(t, "two Ready nodes", ready)
	waitFor(t, "the nodes' bootstrap token deleted", noToken)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptrTo[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}},
			},
		},
	}
	if _, err := admin.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Deployment available on the nodes", func(ctx context.Context) error {
		d, err := admin.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 2 {
			return fmt.Errorf("%d available", d.Status.AvailableReplicas)
		}
		return nil
	})

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	c.Start(t)
	admin, _ = clientFor(t, c.AdminConf())
	waitFor(t, "the nodes renewing their Leases after the restart", func(ctx context.Context) error {
		if err := ready(ctx); err != nil {
			return err
		}
		for _, n := range []string{"node-0", "node-1"} {
			l, err := admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(restarted) {
				return fmt.Errorf("lease %s renewed at %v", n, l.Spec.RenewTime)
			}
		}
		return nil
	})
	var tokens int
	for _, ev := range readAudit(t, c.AuditLog()) {
		if r := ev.ObjectRef; ev.Verb == "create" && r != nil && r.Resource == "secrets" && strings.HasPrefix(r.Name, "bootstrap-token-") && ev.Stage == "ResponseComplete" {
			tokens++
		}
	}
	if tokens != 1 {
		t.Errorf("%d bootstrap tokens created, want one, at the first start only", tokens)
	}
}
