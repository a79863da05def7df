package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/e2e/e2etest"
	"github.com/trustplane/trustplane/rbac"
)

func rbacRun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runRoot(t, append([]string{"rbac"}, args...)...)
}

func TestRBACUnusedBadInput(t *testing.T) {
	dir := auditDataDir(t)
	empty := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(t.TempDir(), "audit.log.gz")
	if err := os.WriteFile(unreadable, []byte("not gzip"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--audit-log", filepath.Join(dir, "missing.log")}, "audit log: stat"},
		{[]string{"--dir", t.TempDir()}, "audit log: stat"},
		{[]string{"--audit-log", unreadable}, "audit log: " + unreadable},
		{[]string{"--audit-log", empty}, "no audit events in " + empty},
		{[]string{"--dir", dir, "--since", "1h"}, "no audit events in " + datadir.Layout{Dir: dir}.AuditLog() + " in the last 1h0m0s"},
		{[]string{"--dir", dir, "--user", "carol"}, `no audit event of user "carol"`},
		{[]string{"--dir", dir, "-o", "wide"}, `-o "wide": want table, yaml or json`},
		{[]string{"--dir", dir, "--since", "-1h"}, "--since -1h0m0s is negative"},
		{[]string{"--dir", dir, "--bogus"}, "unknown flag: --bogus"},
	} {
		stdout, stderr, code := rbacRun(t, append([]string{"unused"}, tc.args...)...)
		if code != exitBadInput || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("rbac unused %q: exit %d, stdout %q, stderr %q; want exit %d and an error naming %q", tc.args, code, stdout, stderr, exitBadInput, tc.want)
		}
	}
}

func TestReadSubjects(t *testing.T) {
	dir := auditDataDir(t)
	files, err := audit.LogFiles([]string{filepath.Dir(datadir.Layout{Dir: dir}.AuditLog())})
	if err != nil {
		t.Fatal(err)
	}
	subjects, events, err := readSubjects(files, &audit.Filter{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if events != 5 {
		t.Errorf("events = %d, want 5", events)
	}
	type seen struct {
		Name             string
		Groups           []string
		Requests         map[rbac.Request]int
		Allowed, Refused int
	}
	var got []seen
	for _, s := range subjects {
		got = append(got, seen{s.name, slices.Sorted(maps.Keys(s.groups)), s.requests, s.allowed, s.refused})
	}
	want := []seen{
		{"alice", []string{"dev"}, map[rbac.Request]int{
			{Verb: "get", Resource: "secrets", Namespace: "default", Name: "db"}:       2,
			{Verb: "delete", Resource: "secrets", Namespace: "default", Name: "other"}: 1,
		}, 3, 0},
		{"bob", []string{"dev"}, map[rbac.Request]int{}, 0, 1},
		{"system:serviceaccount:kube-system:c", []string{"dev"}, map[rbac.Request]int{
			{Verb: "list", Resource: "configmaps", Namespace: "default"}: 1,
		}, 1, 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readSubjects (-want +got):\n%s", diff)
	}
}

// A request counts once, whatever stages the policy logs.
func TestReadSubjectsStages(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.log")
	lines := []string{
		`{"auditID":"w","stage":"RequestReceived","verb":"watch","user":{"username":"alice"},"objectRef":{"resource":"pods","namespace":"a"}}`,
		`{"auditID":"w","stage":"ResponseStarted","verb":"watch","user":{"username":"alice"},"objectRef":{"resource":"pods","namespace":"a"},"annotations":{"authorization.k8s.io/decision":"allow"}}`,
		`{"auditID":"g","stage":"RequestReceived","verb":"get","user":{"username":"alice"},"objectRef":{"resource":"pods","namespace":"a","name":"p"}}`,
		`{"auditID":"g","stage":"ResponseComplete","verb":"get","user":{"username":"alice"},"objectRef":{"resource":"pods","namespace":"a","name":"p"},"annotations":{"authorization.k8s.io/decision":"allow"}}`,
		`{"auditID":"w","stage":"ResponseComplete","verb":"watch","user":{"username":"alice"},"objectRef":{"resource":"pods","namespace":"a"},"annotations":{"authorization.k8s.io/decision":"allow"}}`,
		`{"auditID":"x","stage":"Panic","verb":"list","user":{"username":"alice"},"objectRef":{"resource":"pods","namespace":"a"},"annotations":{"authorization.k8s.io/decision":"allow"}}`,
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	subjects, _, err := readSubjects([]string{log}, &audit.Filter{}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[rbac.Request]int{
		{Verb: "watch", Resource: "pods", Namespace: "a"}:          1,
		{Verb: "get", Resource: "pods", Namespace: "a", Name: "p"}: 1,
		{Verb: "list", Resource: "pods", Namespace: "a"}:           1,
	}
	if len(subjects) != 1 || subjects[0].refused != 0 {
		t.Fatalf("subjects %+v, want alice alone, nothing refused", subjects)
	}
	if diff := cmp.Diff(want, subjects[0].requests); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// The report of a ServiceAccount, as a table and as covering roles.
func TestRBACUnusedFormats(t *testing.T) {
	sa := &seenSubject{
		name:   "system:serviceaccount:ci:builder",
		groups: map[string]bool{"system:serviceaccounts": true},
		requests: map[rbac.Request]int{
			{Verb: "get", Resource: "configmaps", Namespace: "ci", Name: "cfg"}: 3,
			{Verb: "list", Resource: "pods", Namespace: "ci"}:                   1,
			{Verb: "get", Resource: "nodes", Name: "n1"}:                        1,
			{Verb: "get", NonResourceURL: "/healthz"}:                           2,
		},
		allowed: 7,
		refused: 1,
	}
	objs := rbacObjects{
		roles: []*rbacv1.Role{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "builder"},
			Rules: []rbacv1.PolicyRule{
				{Verbs: []string{"get", "update"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
				{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"pods"}},
			},
		}},
		roleBindings: []*rbacv1.RoleBinding{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "builder"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "builder"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "builder"}},
		}},
	}
	r := reportSubject(sa, objs)
	if r.Kind != rbacv1.ServiceAccountKind {
		t.Errorf("kind %q, want ServiceAccount", r.Kind)
	}

	var table bytes.Buffer
	if err := writeUnusedTable(&table, []subjectReport{r}); err != nil {
		t.Fatal(err)
	}
	wantTable := `SUBJECT                           VIA                                       PERMISSION         USED
system:serviceaccount:ci:builder  RoleBinding/ci/builder → Role/ci/builder  get configmaps     3
system:serviceaccount:ci:builder  RoleBinding/ci/builder → Role/ci/builder  update configmaps  never
system:serviceaccount:ci:builder  RoleBinding/ci/builder → Role/ci/builder  * pods             1: list pods -n ci ×1
system:serviceaccount:ci:builder  (not granted by RBAC now)                 get /healthz       2
system:serviceaccount:ci:builder  (not granted by RBAC now)                 get nodes n1       1
`
	if diff := cmp.Diff(wantTable, table.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}

	var out bytes.Buffer
	if err := writeCoveringYAML(&out, []subjectReport{r}); err != nil {
		t.Fatal(err)
	}
	wantYAML := `# ServiceAccount system:serviceaccount:ci:builder: 7 requests allowed (4 distinct), 1 refused
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  labels:
    trustplane.io/generated-by: rbac-unused
  name: used-by:system:serviceaccount:ci:builder
rules:
- apiGroups:
  - ""
  resourceNames:
  - n1
  resources:
  - nodes
  verbs:
  - get
- nonResourceURLs:
  - /healthz
  verbs:
  - get
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  labels:
    trustplane.io/generated-by: rbac-unused
  name: used-by:system:serviceaccount:ci:builder
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: used-by:system:serviceaccount:ci:builder
subjects:
- kind: ServiceAccount
  name: builder
  namespace: ci
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  labels:
    trustplane.io/generated-by: rbac-unused
  name: used-by:system:serviceaccount:ci:builder
  namespace: ci
rules:
- apiGroups:
  - ""
  resourceNames:
  - cfg
  resources:
  - configmaps
  verbs:
  - get
- apiGroups:
  - ""
  resources:
  - pods
  verbs:
  - list
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  labels:
    trustplane.io/generated-by: rbac-unused
  name: used-by:system:serviceaccount:ci:builder
  namespace: ci
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: used-by:system:serviceaccount:ci:builder
subjects:
- kind: ServiceAccount
  name: builder
  namespace: ci
`
	if diff := cmp.Diff(wantYAML, out.String()); diff != "" {
		t.Errorf("yaml (-want +got):\n%s", diff)
	}
}

func TestRequestOf(t *testing.T) {
	var create, token, path, metadataOnly audit.Event
	for _, c := range []struct {
		into *audit.Event
		json string
	}{
		{&create, `{"verb":"create","objectRef":{"resource":"deployments","apiGroup":"apps","namespace":"a","name":"web"}}`},
		{&token, `{"verb":"create","objectRef":{"resource":"serviceaccounts","namespace":"a","name":"builder","subresource":"token"}}`},
		{&path, `{"verb":"get","requestURI":"/healthz?verbose=1"}`},
		{&metadataOnly, `{"verb":"list","objectRef":{"resource":"secrets","namespace":"a"},"annotations":{"authorization.trustplane.io/metadata-only":"true"}}`},
	} {
		if err := json.Unmarshal([]byte(c.json), c.into); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		e    *audit.Event
		want rbac.Request
	}{
		// The authorizer never sees the name of the object a create makes.
		{&create, rbac.Request{Verb: "create", APIGroup: "apps", Resource: "deployments", Namespace: "a"}},
		// A create on a subresource names its object in the URL.
		{&token, rbac.Request{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: "a", Name: "builder"}},
		{&path, rbac.Request{Verb: "get", NonResourceURL: "/healthz"}},
		// Allowed by secrets/metadata, which is what it used.
		{&metadataOnly, rbac.Request{Verb: "list", Resource: "secrets", Subresource: "metadata", Namespace: "a"}},
	} {
		if got := requestOf(tc.e); got != tc.want {
			t.Errorf("requestOf(%+v) = %+v, want %+v", tc.e, got, tc.want)
		}
	}
}

// TestRBACUnusedEndToEnd runs a cluster, lets alice, granted get, list and
// delete on Secrets, only get and list them, and checks that `rbac unused`
// reports delete as never used, and that its covering Role, bound to a
// fresh user, allows exactly the requests alice made.
func TestRBACUnusedEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a cluster")
	}
	c := e2etest.StartCluster(t, "--controllers=false")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	admin := kubeconfigClient(t, c.AdminConf())

	const ns = "team-a"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"db", "tls"} {
		if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grant := func(user, role string, rule rbacv1.PolicyRule) {
		t.Helper()
		if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grant("alice", "secrets", rbacv1.PolicyRule{Verbs: []string{"get", "list", "delete"}, APIGroups: []string{""}, Resources: []string{"secrets"}})
	grant("carol", "pods", rbacv1.PolicyRule{Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}})

	// alice gets db twice and lists Secrets; reading ConfigMaps is refused
	// and counts for nothing.
	if _, stderr, err := e2etest.Run(t, "kubeconfig", "--dir", c.Dir, "--user", "alice"); err != nil {
		t.Fatalf("trustplane kubeconfig: %v\n%s", err, stderr)
	}
	alice := kubeconfigClient(t, filepath.Join(c.Dir, "alice.conf"))
	for range 2 {
		if _, err := alice.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("alice listed ConfigMaps without a grant")
	}
	// The admin lists pods as carol: it counts for carol.
	cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminConf())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "carol"}
	asCarol, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := asCarol.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}

	unused := func(args ...string) []byte {
		t.Helper()
		stdout, stderr, err := e2etest.Run(t, append([]string{"rbac", "unused", "--dir", c.Dir}, args...)...)
		if err != nil {
			t.Fatalf("rbac unused %q: %v\n%s", args, err, stderr)
		}
		return stdout
	}

	// The table: delete was never used, get and list were.
	table := unused()
	rows := map[string][]string{}
	for _, line := range strings.Split(string(table), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "alice" || f[0] == "carol") {
			rows[f[0]+" "+strings.Join(f[1:len(f)-1], " ")] = f
		}
	}
	for key, used := range map[string]string{
		"alice RoleBinding/team-a/alice-secrets → Role/team-a/secrets get secrets":    "2",
		"alice RoleBinding/team-a/alice-secrets → Role/team-a/secrets list secrets":   "1",
		"alice RoleBinding/team-a/alice-secrets → Role/team-a/secrets delete secrets": "never",
		"carol RoleBinding/team-a/carol-pods → Role/team-a/pods list pods":            "1",
		"carol RoleBinding/team-a/carol-pods → Role/team-a/pods watch pods":           "never",
	} {
		if f := rows[key]; f == nil || f[len(f)-1] != used {
			t.Errorf("no row %q with USED %s:\n%s", key, used, table)
		}
	}

	// The JSON report of alice alone.
	var reports []subjectReport
	if err := json.Unmarshal(unused("--user", "alice", "-o", "json"), &reports); err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].Name != "alice" || reports[0].Kind != rbacv1.UserKind || reports[0].Refused != 1 {
		t.Fatalf("rbac unused --user alice -o json: %+v, want alice alone with one refused request", reports)
	}
	wantRequests := []rbac.RequestCount{
		{Request: rbac.Request{Verb: "get", Resource: "secrets", Namespace: ns, Name: "db"}, Count: 2},
		{Request: rbac.Request{Verb: "list", Resource: "secrets", Namespace: ns}, Count: 1},
	}
	if diff := cmp.Diff(wantRequests, reports[0].Requests); diff != "" {
		t.Errorf("alice's requests (-want +got):\n%s", diff)
	}

	// The covering Role, bound to a fresh user, allows what alice did and
	// nothing else.
	var generated []map[string]any
	for _, doc := range strings.Split(string(unused("--user", "alice", "-o", "yaml")), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("yaml document %q: %v", doc, err)
		}
		if obj != nil {
			generated = append(generated, obj)
		}
	}
	var kinds []string
	for _, obj := range generated {
		kinds = append(kinds, obj["kind"].(string))
	}
	if !slices.Equal(kinds, []string{"Role", "RoleBinding"}) {
		t.Fatalf("rbac unused -o yaml: kinds %q, want a Role and its RoleBinding", kinds)
	}
	role, binding := yamlTo[rbacv1.Role](t, generated[0]), yamlTo[rbacv1.RoleBinding](t, generated[1])
	wantRules := []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db"}},
		{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"secrets"}},
	}
	if diff := cmp.Diff(wantRules, role.Rules); diff != "" || role.Namespace != ns {
		t.Errorf("covering Role in %q (-want +got):\n%s", role.Namespace, diff)
	}
	if binding.Subjects[0].Name != "alice" || binding.RoleRef.Name != role.Name {
		t.Errorf("covering RoleBinding: %+v, want alice bound to %s", binding, role.Name)
	}
	binding.Subjects[0].Name = "fresh"
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sar := func(r rbac.Request) bool {
		t.Helper()
		review, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "fresh",
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: r.Verb, Group: r.APIGroup, Resource: r.Resource, Subresource: r.Subresource, Namespace: r.Namespace, Name: r.Name,
			},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return review.Status.Allowed
	}
	for _, rc := range reports[0].Requests {
		if !sar(rc.Request) {
			t.Errorf("the covering Role does not allow %s", rc.Request)
		}
	}
	for _, r := range []rbac.Request{
		{Verb: "delete", Resource: "secrets", Namespace: ns, Name: "db"},
		{Verb: "get", Resource: "secrets", Namespace: ns, Name: "tls"},
		{Verb: "list", Resource: "configmaps", Namespace: ns},
		{Verb: "list", Resource: "secrets", Namespace: "default"},
		{Verb: "watch", Resource: "secrets", Namespace: ns},
	} {
		if sar(r) {
			t.Errorf("the covering Role allows %s, which alice never did", r)
		}
	}
	// And for real: fresh reads db, and not tls.
	if _, stderr, err := e2etest.Run(t, "kubeconfig", "--dir", c.Dir, "--user", "fresh"); err != nil {
		t.Fatalf("trustplane kubeconfig: %v\n%s", err, stderr)
	}
	fresh := kubeconfigClient(t, filepath.Join(c.Dir, "fresh.conf"))
	if _, err := fresh.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{}); err != nil {
		t.Errorf("fresh gets db: %v", err)
	}
	if _, err := fresh.CoreV1().Secrets(ns).Get(ctx, "tls", metav1.GetOptions{}); err == nil {
		t.Error("fresh got tls, which alice never read")
	}

	// A user the log does not show is bad input.
	_, stderr, err := e2etest.Run(t, "rbac", "unused", "--dir", c.Dir, "--user", "nobody")
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != exitBadInput || !strings.Contains(string(stderr), `no audit event of user "nobody"`) {
		t.Errorf("rbac unused --user nobody: %v\n%s\nwant exit %d naming the user", err, stderr, exitBadInput)
	}
}

// yamlTo converts a decoded YAML object to T.
func yamlTo[T any](t *testing.T, obj map[string]any) T {
	t.Helper()
	var out T
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
