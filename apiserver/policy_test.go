package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/e2e/e2etest"
	"github.com/trustplane/trustplane/etcd/etcdtest"
	"github.com/trustplane/trustplane/rbac"
)

// warningLog collects the Warning headers client-go is sent.
type warningLog struct {
	mu   sync.Mutex
	list []string
}

func (l *warningLog) HandleWarningHeader(_ int, _ string, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, text)
}

// The Rego stage runs in both admission chains through client-go: a patch
// mutates before validation, a deny refuses with the policy's message, a
// warn reaches the client as a Warning header, and each decision is in
// the audit event.
func TestRegoAdmission(t *testing.T) {
	set, err := opa.Compile(context.Background(), map[string][]byte{
		"no-forbidden.rego": []byte(`# METADATA
# custom:
#   enforcement: deny
package kubernetes.admission

deny contains msg if {
	input.request.kind.kind == "ConfigMap"
	input.request.object.metadata.labels.forbidden
	msg := sprintf("ConfigMap %s is labelled forbidden", [input.request.object.metadata.name])
}

warn contains "ConfigMaps in default are shared" if {
	input.request.kind.kind == "ConfigMap"
	input.request.namespace == "default"
}
`),
		"owner.rego": []byte(`package kubernetes.admission

patch contains {"op": "add", "path": "/metadata/annotations", "value": {"owner": input.request.userInfo.username}} if {
	input.request.kind.kind == "ConfigMap"
	input.request.operation == "CREATE"
	not input.request.object.metadata.annotations
}

# The patched object is judged again: a ConfigMap the patch gave no
# owner would be refused.
deny contains "a ConfigMap needs an owner" if {
	input.request.kind.kind == "ConfigMap"
	input.request.operation == "CREATE"
	not input.request.object.metadata.annotations.owner
}
`),
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, func(c *Config) { c.AdmissionPolicies = set })
	warnings := &warningLog{}
	cfg := ts.restConfig(t, admin)
	cfg.WarningHandler = warnings
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := testContext(t)

	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ok"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Annotations["owner"] != "admin" {
		t.Errorf("annotations %v: want owner=admin from the policy's patch", cm.Annotations)
	}
	if got := strings.Join(warnings.list, "\n"); got != "policy no-forbidden: ConfigMaps in default are shared" {
		t.Errorf("warnings %q", got)
	}

	_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bad", Labels: map[string]string{"forbidden": "yes"}}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "policy no-forbidden: ConfigMap bad is labelled forbidden") {
		t.Fatalf("forbidden ConfigMap: %v, want 403 naming the policy and its message", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused ConfigMap was stored: %v", err)
	}

	// A PATCH that adds the label is refused too: every write route is.
	_, err = cs.CoreV1().ConfigMaps("default").Patch(ctx, "ok", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"forbidden":"yes"}}}`), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("patch adding the label: %v, want 403", err)
	}

	// However a body repeats its keys, the object the policy judges is the
	// object stored: no body stores a ConfigMap the policy refuses.
	c := ts.httpClient(t, admin)
	refusedOnes := 0
	for _, tt := range []struct{ name, contentType, body string }{
		{"dup-labels-a", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup-labels-a","labels":{"forbidden":"yes"},"labels":{"fine":"yes"}}}`},
		{"dup-labels-b", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup-labels-b","labels":{"fine":"yes"},"labels":{"forbidden":"yes"}}}`},
		{"dup-metadata", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup-metadata","labels":{"forbidden":"yes"}},"metadata":{"name":"dup-metadata"}}`},
		{"dup-key", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup-key","labels":{"forbidden":"yes","forbidden":""}}}`},
		{"yaml-dup", "application/yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml-dup\n  labels:\n    fine: \"yes\"\n  labels:\n    forbidden: \"yes\"\n"},
	} {
		resp := do(t, c, "POST", ts.url+"/api/v1/namespaces/default/configmaps", tt.contentType, tt.body)
		resp.Body.Close()
		stored, err := cs.CoreV1().ConfigMaps("default").Get(ctx, tt.name, metav1.GetOptions{})
		switch resp.StatusCode {
		case 403:
			refusedOnes++
			if !apierrors.IsNotFound(err) {
				t.Errorf("%s: refused, yet stored: %v", tt.name, err)
			}
		case 201:
			if err != nil || stored.Labels["forbidden"] != "" {
				t.Errorf("%s: stored with labels %v (%v): the policy judged another object", tt.name, stored.Labels, err)
			}
		default:
			t.Errorf("%s: status %d", tt.name, resp.StatusCode)
		}
	}
	if refusedOnes == 0 {
		t.Error("no body was refused: the policy did not see the forbidden label in any")
	}

	var found bool
	for _, ev := range readAuditLog(t, ts.auditLog) {
		if ev.ObjectRef != nil && ev.ObjectRef.Name == "bad" && ev.Verb == "create" {
			found = strings.Contains(ev.Annotations["policy.trustplane.io/no-forbidden"], "labelled forbidden")
		}
	}
	if !found {
		t.Error("the refusal's decision is not in its audit event")
	}
}

// Policies read the replicated namespaces as data.kubernetes; a change of
// the policy directory is in force without a restart, and one that does
// not load leaves the running set in force.
func TestRegoReplicationAndReload(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("closed.rego", `package kubernetes.admission

deny contains "this namespace takes no ConfigMaps" if {
	input.request.kind.kind == "ConfigMap"
	data.kubernetes.namespaces[input.request.namespace].metadata.labels.configmaps == "closed"
}
`)
	data := opa.NewData()
	set, err := data.LoadDirs(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	log := &e2etest.Buffer{}
	ts := startServer(t, func(c *Config) {
		c.AdmissionPolicies, c.AdmissionData, c.AdmissionPolicyDir = set, data, dir
		c.AdmissionReplicate = []schema.GroupResource{{Resource: "namespaces"}}
		c.Logger = slog.New(slog.NewTextHandler(log, nil))
	})
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	for name, label := range map[string]string{"closed": "closed", "open": "open"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"configmaps": label}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create := func(ns, name string) error {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}
	// Replication follows the cache: poll until the new namespace is in.
	eventually(t, "the closed namespace replicated", func() error { return refused(create("closed", "cm")) })
	if err := create("open", "cm"); err != nil {
		t.Fatalf("ConfigMap in an open namespace: %v", err)
	}

	write("late.rego", `package kubernetes.admission

deny contains "no ConfigMap may be called late" if input.request.name == "late"
`)
	eventually(t, "the new policy loaded", func() error { return refused(create("open", "late")) })

	// A policy in a ConfigMap of kube-system labelled for it is loaded;
	// one in another namespace, whose ConfigMaps others may write, is not.
	policyConfigMap := func(ns, name, forbidden string) {
		t.Helper()
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"trustplane.io/policy": "rego"}},
			Data:       map[string]string{name + ".rego": "package kubernetes.admission\n\ndeny contains \"no " + forbidden + "\" if input.request.name == \"" + forbidden + "\"\n"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The root CA publisher may create ConfigMaps in kube-system, but not
	// those that carry policies.
	publisher := ts.clientset(t, &identity{user: rbac.ControllerUser("root-ca-cert-publisher"), groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"}})
	_, err = publisher.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "usurper", Labels: map[string]string{"trustplane.io/policy": "rego"}},
		Data:       map[string]string{"u.rego": "package kubernetes.admission\n"},
	}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "carry admission policies") {
		t.Errorf("the root CA publisher's policy ConfigMap: %v, want 403 from admission", err)
	}
	policyConfigMap("open", "sneaky", "from-open")
	policyConfigMap("kube-system", "official", "from-system")
	eventually(t, "the kube-system policy loaded", func() error { return refused(create("open", "from-system")) })
	if err := create("open", "from-open"); err != nil {
		t.Errorf("a policy from a ConfigMap outside kube-system is in force: %v", err)
	}

	write("broken.rego", "package kubernetes.admission\n\ndeny contains if {\n")
	eventually(t, "the broken policy refused", func() error {
		if !strings.Contains(log.String(), "not loaded") {
			return errors.New("no refusal logged")
		}
		return nil
	})
	if !strings.Contains(log.String(), "broken.rego:3") {
		t.Errorf("the refused reload does not name the file and line: %s", log.String())
	}
	if err := create("open", "late"); !apierrors.IsForbidden(err) {
		t.Errorf("after a broken reload: %v, want the running set still in force", err)
	}
}

// refused is nil for a 403, else an error saying what happened instead.
func refused(err error) error {
	if apierrors.IsForbidden(err) {
		return nil
	}
	return fmt.Errorf("not refused: %v", err)
}

// What a policy's patch adds is defaulted like what a client sends: a
// patched stringData is merged into data, where validation sees it.
func TestRegoPatchDefaulted(t *testing.T) {
	set, err := opa.Compile(context.Background(), map[string][]byte{"add.rego": []byte(`package kubernetes.admission

patch contains {"op": "add", "path": "/stringData", "value": {"added": "by-policy"}} if {
	input.request.kind.kind == "Secret"
	not input.request.object.data.added
}
`)})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, func(c *Config) { c.AdmissionPolicies = set })
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Secrets("default").Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Data["added"]) != "by-policy" || len(got.StringData) != 0 {
		t.Errorf("data %v, stringData %v: want the patch's stringData merged into data", got.Data, got.StringData)
	}
}

// A ConfigMap's policies are its .rego keys while it is labelled, and
// none once it is deleted or unlabelled.
func TestPolicyKeys(t *testing.T) {
	cm := func(labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "kube-system", Labels: labels}, Data: map[string]string{"a.rego": "A", "notes.txt": "N"}}
	}
	labelled := map[string]string{"trustplane.io/policy": "rego"}
	files := map[string][]byte{"configmap:kube-system/other/b.rego": []byte("B")}
	policyKeys(files, cm(labelled), watch.Added)
	if string(files["configmap:kube-system/p/a.rego"]) != "A" || len(files) != 2 {
		t.Errorf("labelled: %v", files)
	}
	policyKeys(files, cm(nil), watch.Modified)
	if _, ok := files["configmap:kube-system/p/a.rego"]; ok || len(files) != 1 {
		t.Errorf("unlabelled: %v", files)
	}
	policyKeys(files, cm(labelled), watch.Modified)
	policyKeys(files, cm(labelled), watch.Deleted)
	if len(files) != 1 || files["configmap:kube-system/other/b.rego"] == nil {
		t.Errorf("deleted: %v", files)
	}
}

// The policies of kube-system's ConfigMaps are in force from a server's
// first request, not a reload later: a server that starts over a cluster
// holding one refuses what it refuses at once; one whose ConfigMap policy
// does not compile does not start, rather than serve without it.
func TestPolicyConfigMapsAtStart(t *testing.T) {
	e := etcdtest.Start(t)
	withDir := func(c *Config) {
		dir := t.TempDir()
		data := opa.NewData()
		set, err := data.LoadDirs(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		c.AdmissionPolicies, c.AdmissionData, c.AdmissionPolicyDir = set, data, dir
	}
	first := startServerOn(t, e, withDir)
	cs := first.clientset(t, admin)
	ctx := testContext(t)
	policy := func(name, src string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"trustplane.io/policy": "rego"}}, Data: map[string]string{name + ".rego": src}}
		if _, err := cs.CoreV1().ConfigMaps("kube-system").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	policy("nolate", "package kubernetes.admission\n\ndeny contains \"no ConfigMap may be called late\" if input.request.name == \"late\"\n")

	second := startServerOn(t, e, withDir)
	_, err := second.clientset(t, admin).CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "no ConfigMap may be called late") {
		t.Errorf("the first request to a server just started: %v, want the ConfigMap's policy to refuse it", err)
	}

	policy("broken", "package kubernetes.admission\n\ndeny contains if {\n")
	cfg, _ := testConfig(t, e, withDir)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.Run(runCtx, ln); err == nil || !strings.Contains(err.Error(), "configmap:kube-system/broken/broken.rego:3") {
		t.Errorf("a server whose ConfigMap policy does not compile: %v, want it not to start, naming the policy and line", err)
	}
}

// A request that follows a write to a replicated kind is decided by that
// write: a namespace created, then at once a ConfigMap in it, meets the
// namespace in the policies' data, every time.
func TestReplicatedDataFollowsTheServersWrites(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "closed.rego"), []byte(`package kubernetes.admission

deny contains "this namespace takes no ConfigMaps" if {
	input.request.kind.kind == "ConfigMap"
	data.kubernetes.namespaces[input.request.namespace].metadata.labels.configmaps == "closed"
}

deny contains "the namespace is not in the policies' data" if {
	input.request.kind.kind == "ConfigMap"
	not data.kubernetes.namespaces[input.request.namespace]
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	data := opa.NewData()
	set, err := data.LoadDirs(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, func(c *Config) {
		c.AdmissionPolicies, c.AdmissionData = set, data
		c.AdmissionReplicate = []schema.GroupResource{{Resource: "namespaces"}}
	})
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	for i := range 30 {
		label := []string{"open", "closed"}[i%2]
		ns := fmt.Sprintf("ns-%d", i)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"configmaps": label}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
		switch {
		case label == "open" && err != nil:
			t.Errorf("%s (open): %v", ns, err)
		case label == "closed" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "takes no ConfigMaps")):
			t.Errorf("%s (closed): %v, want the policy's refusal", ns, err)
		}
	}
}
