package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trustplane/trustplane/e2e/e2etest"
	"github.com/trustplane/trustplane/rbac"
)

// clientFor is a clientset with the identity of a kubeconfig.
func clientFor(t testing.TB, kubeconfig string) (kubernetes.Interface, *rest.Config) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// A test is a busy client: client-go's default of 5 requests a second
	// would be what it measures.
	cfg.QPS, cfg.Burst = 500, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, cfg
}

// tokenClient is a clientset with a token, obtained by admin, of the
// ServiceAccount kube-system/sa: a controller's identity.
func tokenClient(t *testing.T, admin kubernetes.Interface, adminCfg *rest.Config, sa string) kubernetes.Interface {
	t.Helper()
	secs := int64(600)
	tr, err := admin.CoreV1().ServiceAccounts("kube-system").CreateToken(t.Context(), sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(adminCfg)
	cfg.BearerToken = tr.Status.Token
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// waitFor polls cond every 100ms until it holds or 20s have passed.
func waitFor(t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	waitWithin(t, 20*time.Second, what, cond)
}

// waitWithin is waitFor with a bound of its own, for what takes its time
// by design (a certificate's renewal).
func waitWithin(t testing.TB, bound time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	ctx := t.Context()
	deadline := time.Now().Add(bound)
	for {
		err := cond(ctx)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, bound, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The controller manager `trustplane up` runs gives each namespace its
// default ServiceAccount and kube-root-ca.crt, and gives them back; each
// controller writes as its own ServiceAccount.
func TestControllerManager(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t)
	admin, adminCfg := clientFor(t, c.AdminConf())
	ctx := t.Context()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hasDefault := func(ctx context.Context) error {
		_, err := admin.CoreV1().ServiceAccounts("team").Get(ctx, "default", metav1.GetOptions{})
		return err
	}
	waitFor(t, "the default ServiceAccount of a new namespace", hasDefault)
	if err := admin.CoreV1().ServiceAccounts("team").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the default ServiceAccount restored", hasDefault)

	// A pod runs as the namespace's default ServiceAccount, with its
	// token, the CA and the namespace mounted, as kube's admission does;
	// one naming a ServiceAccount that does not exist is refused.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}}}
	created, err := admin.CoreV1().Pods("team").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mounts := created.Spec.Containers[0].VolumeMounts
	if created.Spec.ServiceAccountName != "default" || len(created.Spec.Volumes) != 1 || created.Spec.Volumes[0].Projected == nil ||
		len(mounts) != 1 || mounts[0].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" || !mounts[0].ReadOnly {
		t.Errorf("the pod as created: serviceAccountName %q, volumes %+v, mounts %+v", created.Spec.ServiceAccountName, created.Spec.Volumes, mounts)
	}
	pod.Name, pod.Spec.ServiceAccountName = "ghost", "ghost"
	if _, err := admin.CoreV1().Pods("team").Create(ctx, pod, metav1.CreateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `serviceaccount "ghost" not found`) {
		t.Errorf("a pod of a ServiceAccount that does not exist: %v, want 403", err)
	}

	ca := func(ctx context.Context) error {
		cm, err := admin.CoreV1().ConfigMaps("team").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !strings.HasPrefix(cm.Data["ca.crt"], "-----BEGIN CERTIFICATE-----") || string(adminCfg.CAData) != cm.Data["ca.crt"] && adminCfg.CAFile == "" {
			return fmt.Errorf("ca.crt is %.40q", cm.Data["ca.crt"])
		}
		return nil
	}
	waitFor(t, "kube-root-ca.crt in a new namespace", ca)
	cm, err := admin.CoreV1().ConfigMaps("team").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["ca.crt"] = "-----BEGIN CERTIFICATE-----\nforged\n-----END CERTIFICATE-----\n"
	if _, err := admin.CoreV1().ConfigMaps("team").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "kube-root-ca.crt restored", func(ctx context.Context) error {
		cm, err = admin.CoreV1().ConfigMaps("team").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if strings.Contains(cm.Data["ca.crt"], "forged") {
			return errors.New("still forged")
		}
		return nil
	})

	// Who wrote what, by the audit log: each controller as itself.
	events := readAudit(t, c.AuditLog())
	writers := map[string]string{}
	for _, ev := range events {
		if ev.Verb == "create" && ev.ObjectRef != nil && ev.ObjectRef.Namespace == "team" && ev.ResponseStatus != nil && ev.ResponseStatus.Code == 201 {
			writers[ev.ObjectRef.Resource] = ev.User.Username
		}
	}
	for res, want := range map[string]string{"serviceaccounts": rbac.ControllerUser("service-account-controller"), "configmaps": rbac.ControllerUser("root-ca-cert-publisher")} {
		if writers[res] != want {
			t.Errorf("%s in team created by %q, want %q", res, writers[res], want)
		}
	}
}

// Each identity of the controller manager is refused the nearest thing
// outside its role.
func TestControllerIdentities(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t)
	admin, adminCfg := clientFor(t, c.AdminConf())
	manager, _ := clientFor(t, c.Kubeconfig("controller-manager"))
	ctx := t.Context()
	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
		}
	}
	// The certificate: tokens for the controllers, nothing else.
	secs := int64(600)
	tokenFor := func(cs kubernetes.Interface, ns, sa string) (string, error) {
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return tr.Status.Token, nil
	}
	if _, err := tokenFor(manager, "kube-system", "service-account-controller"); err != nil {
		t.Errorf("the controller manager's token for a controller: %v", err)
	}
	waitFor(t, "default ServiceAccount in default", func(ctx context.Context) error {
		_, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	_, err := tokenFor(manager, "default", "default")
	forbidden("the controller manager's token for default/default", err)
	_, err = tokenFor(manager, "kube-system", "default")
	forbidden("the controller manager's token for kube-system/default", err)
	_, err = manager.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	forbidden("the controller manager lists namespaces", err)
	// A controller's token for the API server only: an hour at most,
	// its audiences, bound to nothing.
	day := int64(86400)
	_, err = manager.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "generic-garbage-collector",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &day}}, metav1.CreateOptions{})
	forbidden("the controller manager's day-long token for a controller", err)
	_, err = manager.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "generic-garbage-collector",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"https://vault.example"}}}, metav1.CreateOptions{})
	forbidden("the controller manager's token for another audience", err)
	_, err = manager.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	forbidden("the controller manager creates a pod", err)

	as := func(sa string) kubernetes.Interface { return tokenClient(t, admin, adminCfg, sa) }
	sa := as("service-account-controller")
	_, err = sa.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	forbidden("the ServiceAccount controller lists Secrets", err)
	err = sa.CoreV1().ServiceAccounts("default").Delete(ctx, "default", metav1.DeleteOptions{})
	forbidden("the ServiceAccount controller deletes a ServiceAccount", err)
	_, err = sa.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	forbidden("the ServiceAccount controller creates a ConfigMap", err)

	publisher := as("root-ca-cert-publisher")
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = publisher.CoreV1().ConfigMaps("default").Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"x": "y"}}, metav1.UpdateOptions{})
	forbidden("the publisher rewrites another ConfigMap", err)
	_, err = publisher.CoreV1().Secrets("default").Get(ctx, "any", metav1.GetOptions{})
	forbidden("the publisher reads a Secret", err)

	informers := as("shared-informers")
	if _, err := informers.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the shared informers list namespaces: %v", err)
	}
	_, err = informers.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	forbidden("the shared informers list Secrets", err)
	_, err = informers.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	forbidden("the shared informers write", err)

	leader := as("kube-controller-manager")
	_, err = leader.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
	forbidden("leader election reads the scheduler's lease", err)
}

// Two controller managers elect one leader; when it stops, the other
// takes over within the lease's duration and keeps the namespaces
// provided for. A leader killed outright, which cannot release its
// Lease, is replaced once the Lease expires, by an instance run with
// only its kubeconfig (no data directory), as on another host.
func TestControllerManagerLeaderElection(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t, "--controllers=false")
	admin, _ := clientFor(t, c.AdminConf())
	ctx := t.Context()
	start := func() *e2etest.Process {
		p := e2etest.Start(t, exec.Command(e2etest.Binary(t), "controller-manager", "--dir", c.Dir))
		p.WaitLine(t, "controller manager running: ")
		return p
	}
	holder := func(ctx context.Context) (string, error) {
		l, err := admin.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return "", errors.New("no holder")
		}
		return *l.Spec.HolderIdentity, nil
	}
	// heldByAnother is the condition that the Lease has a holder other
	// than old.
	heldByAnother := func(old string) func(context.Context) error {
		return func(ctx context.Context) error {
			h, err := holder(ctx)
			if err != nil {
				return err
			}
			if h == old {
				return fmt.Errorf("still held by %s", h)
			}
			return nil
		}
	}
	first, second := start(), start()
	var leader string
	waitFor(t, "a leader", func(ctx context.Context) (err error) { leader, err = holder(ctx); return err })
	// Which process leads: the one that says it does.
	leading, standby := first, second
	waitFor(t, "the leader says so", func(context.Context) error {
		switch {
		case strings.Contains(first.Output(), "controller manager: leading"):
		case strings.Contains(second.Output(), "controller manager: leading"):
			leading, standby = second, first
		default:
			return errors.New("neither leads")
		}
		return nil
	})
	if strings.Contains(standby.Output(), "controller manager: leading") {
		t.Fatalf("both lead:\n%s\n%s", first.Output(), second.Output())
	}
	if err := leading.Stop(); err != nil {
		t.Errorf("stop the leader: %v", err)
	}
	waitFor(t, "the standby leads", heldByAnother(leader))
	leads(t, admin, "after", "the standby", standby.Output)

	// Run with its kubeconfig alone, from a directory that is not a data
	// directory, it needs the CA it signs with named: it refuses to
	// start rather than run without it.
	kubeconfig := c.Kubeconfig("controller-manager")
	bareCtx, cancel := context.WithTimeout(ctx, e2etest.StartTimeout)
	defer cancel()
	bare := exec.CommandContext(bareCtx, e2etest.Binary(t), "controller-manager", "--kubeconfig", kubeconfig)
	bare.Dir = t.TempDir()
	if out, err := bare.CombinedOutput(); err == nil || !strings.Contains(string(out), "read the cluster signing certificate") {
		t.Errorf("controller-manager --kubeconfig alone: %v\n%s; want it refused for want of the signing CA", err, out)
	}
	third := exec.Command(e2etest.Binary(t), "controller-manager", "--kubeconfig", kubeconfig,
		"--cluster-signing-cert-file", filepath.Join(c.Dir, "pki", "ca.crt"), "--cluster-signing-key-file", filepath.Join(c.Dir, "pki", "ca.key"))
	third.Dir = t.TempDir()
	next := e2etest.Start(t, third)
	next.WaitLine(t, "controller manager running: ")
	waitFor(t, "the new instance stands by", func(context.Context) error {
		if !strings.Contains(next.Output(), "controller manager: another instance leads") {
			return errors.New("it has not seen the leader")
		}
		return nil
	})
	leader, err := holder(ctx)
	if err != nil {
		t.Fatal(err)
	}
	standby.Kill()
	killed := time.Now()
	// SIGKILL releases nothing: the Lease is still the dead leader's.
	if h, err := holder(ctx); err != nil || h != leader {
		t.Fatalf("the Lease just after the leader was killed: held by %q (%v), want still %q", h, err, leader)
	}
	// The standby takes the Lease at its first try (every 2s) after it
	// has gone its duration (15s) without seeing it renewed: by design
	// about the duration and a try after the kill (15-18s on a quiet
	// machine); twice that for a loaded one.
	const bound = 2 * (15*time.Second + 2*time.Second)
	waitWithin(t, bound, "the instance run from its kubeconfig leads", heldByAnother(leader))
	l, err := admin.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if at := l.Spec.AcquireTime; at == nil || at.Time.Before(killed) || at.Time.Sub(killed) > bound {
		t.Errorf("the Lease acquired at %v, the leader killed at %v: want within %s after", at, killed, bound)
	} else {
		t.Logf("the Lease taken %s after the leader was killed", at.Time.Sub(killed).Round(time.Millisecond))
	}
	leads(t, admin, "after-kill", "the instance run from its kubeconfig", next.Output)
}

// leads checks that the controller manager instance who, whose output is
// output, leads: it says so, and a new namespace, namespace, gets its
// default ServiceAccount.
func leads(t *testing.T, admin kubernetes.Interface, namespace, who string, output func() string) {
	t.Helper()
	if _, err := admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, who+" provides for a new namespace", func(ctx context.Context) error {
		_, err := admin.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	if !strings.Contains(output(), "controller manager: leading") {
		t.Errorf("%s does not say it leads:\n%s", who, output())
	}
}
