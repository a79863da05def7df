package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trustplane/trustplane/e2e/e2etest"
	"github.com/trustplane/trustplane/rbac"
)

func TestParseWhoCanArgs(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		namespace string
		want      whoCanQuery
		wantErr   string // a substring of the error; "": none
	}{
		{args: []string{"get", "secrets"}, want: whoCanQuery{verb: "get", resource: "secrets"}},
		{args: []string{"get", "secrets", "tls"}, namespace: "a", want: whoCanQuery{verb: "get", resource: "secrets", name: "tls", namespace: "a"}},
		{args: []string{"create", "deployments.apps"}, want: whoCanQuery{verb: "create", group: "apps", resource: "deployments"}},
		{args: []string{"escalate", "clusterroles.rbac.authorization.k8s.io"}, want: whoCanQuery{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles"}},
		{args: []string{"get", "pods/log"}, namespace: "a", want: whoCanQuery{verb: "get", resource: "pods", subresource: "log", namespace: "a"}},
		{args: []string{"update", "deployments.apps/scale", "web"}, want: whoCanQuery{verb: "update", group: "apps", resource: "deployments", subresource: "scale", name: "web"}},
		{args: []string{"get", "/metrics"}, want: whoCanQuery{verb: "get", path: "/metrics"}},
		{args: []string{"get", "/metrics", "x"}, wantErr: `NAME "x"`},
		{args: []string{"get", "/metrics"}, namespace: "a", wantErr: `--namespace "a"`},
		{args: []string{"", "pods"}, wantErr: `VERB ""`},
		{args: []string{"get pods", "pods"}, wantErr: "VERB"},
		{args: []string{"get", "pods/"}, wantErr: `RESOURCE "pods/"`},
		{args: []string{"get", "pods/log/x"}, wantErr: `RESOURCE "pods/log/x"`},
		{args: []string{"get", ".apps"}, wantErr: `RESOURCE ".apps"`},
	} {
		got, err := parseWhoCanArgs(tc.args, tc.namespace)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseWhoCanArgs(%q, %q): error %v, want one naming %q", tc.args, tc.namespace, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseWhoCanArgs(%q, %q): %v", tc.args, tc.namespace, err)
			continue
		}
		if got != tc.want {
			t.Errorf("parseWhoCanArgs(%q, %q):\n got %+v\nwant %+v", tc.args, tc.namespace, got, tc.want)
		}
	}
}

func TestWhoCanResolve(t *testing.T) {
	v1 := metav1.GroupVersionForDiscovery{GroupVersion: "v1", Version: "v1"}
	appsV1 := metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"}
	mapper := restmapper.NewDiscoveryRESTMapperWithContext([]*restmapper.APIGroupResources{
		{
			Group: metav1.APIGroup{Name: "", Versions: []metav1.GroupVersionForDiscovery{v1}, PreferredVersion: v1},
			VersionedResources: map[string][]metav1.APIResource{"v1": {
				{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod"},
				{Name: "pods/log", Namespaced: true, Kind: "Pod"},
				{Name: "secrets", SingularName: "secret", Namespaced: true, Kind: "Secret"},
				{Name: "nodes", SingularName: "node", Kind: "Node"},
			}},
		},
		{
			Group: metav1.APIGroup{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{appsV1}, PreferredVersion: appsV1},
			VersionedResources: map[string][]metav1.APIResource{"v1": {
				{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment"},
			}},
		},
	})
	for _, tc := range []struct {
		in, want    whoCanQuery
		wantWarning string
		wantErr     string
	}{
		{in: whoCanQuery{verb: "get", resource: "pods", namespace: "a"}, want: whoCanQuery{verb: "get", resource: "pods", namespace: "a"}},
		{in: whoCanQuery{verb: "get", resource: "pod"}, want: whoCanQuery{verb: "get", resource: "pods"}},
		{in: whoCanQuery{verb: "get", resource: "pods", subresource: "log", name: "web", namespace: "a"},
			want: whoCanQuery{verb: "get", resource: "pods", subresource: "log", name: "web", namespace: "a"}},
		{in: whoCanQuery{verb: "create", resource: "deployments", namespace: "a"}, want: whoCanQuery{verb: "create", group: "apps", resource: "deployments", namespace: "a"}},
		{in: whoCanQuery{verb: "create", resource: "deployment", group: "apps"}, want: whoCanQuery{verb: "create", group: "apps", resource: "deployments"}},
		{in: whoCanQuery{verb: "get", resource: "nodes"}, want: whoCanQuery{verb: "get", resource: "nodes"}},
		{in: whoCanQuery{verb: "get", resource: "nodes", namespace: "a"}, wantErr: `--namespace "a": nodes is cluster-scoped`},
		{in: whoCanQuery{verb: "get", resource: "widgets", group: "example.com", namespace: "a"},
			want:        whoCanQuery{verb: "get", resource: "widgets", group: "example.com", namespace: "a"},
			wantWarning: `the server does not serve "widgets.example.com"`},
		{in: whoCanQuery{verb: "get", resource: "*", namespace: "a"}, want: whoCanQuery{verb: "get", resource: "*", namespace: "a"}},
	} {
		q := tc.in
		var warnings []string
		err := q.resolve(t.Context(), mapper, func(s string) { warnings = append(warnings, s) })
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("resolve(%+v): error %v, want one naming %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("resolve(%+v): %v", tc.in, err)
			continue
		}
		if q != tc.want {
			t.Errorf("resolve(%+v):\n got %+v\nwant %+v", tc.in, q, tc.want)
		}
		switch {
		case tc.wantWarning == "" && len(warnings) > 0:
			t.Errorf("resolve(%+v): warnings %q, want none", tc.in, warnings)
		case tc.wantWarning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.wantWarning)):
			t.Errorf("resolve(%+v): warnings %q, want one naming %q", tc.in, warnings, tc.wantWarning)
		}
	}
}

func TestWhoCanQueryString(t *testing.T) {
	for _, tc := range []struct {
		q    whoCanQuery
		want string
	}{
		{whoCanQuery{verb: "get", resource: "secrets", namespace: "a"}, "get secrets in namespace a"},
		{whoCanQuery{verb: "update", group: "apps", resource: "deployments", subresource: "scale", name: "web"}, "update deployments.apps/scale web cluster-wide"},
		{whoCanQuery{verb: "post", path: "/metrics"}, "post /metrics"},
	} {
		if got := tc.q.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.q, got, tc.want)
		}
	}
}

func whoCanTestGrants() []rbac.Grant {
	return []rbac.Grant{
		{Subject: rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: rbac.ClusterAdminsGroup},
			BindingKind: "ClusterRoleBinding", BindingName: "trustplane:cluster-admins", RoleKind: "ClusterRole", RoleName: "cluster-admin"},
		{Subject: rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "ci", Name: "builder"},
			BindingKind: "RoleBinding", BindingNamespace: "a", BindingName: "deploy", RoleKind: "Role", RoleName: "deployer"},
		{Subject: rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"},
			BindingKind: "RoleBinding", BindingNamespace: "a", BindingName: "alice-edit", RoleKind: "ClusterRole", RoleName: "edit"},
	}
}

func TestWriteGrantsTable(t *testing.T) {
	var buf bytes.Buffer
	if err := writeGrantsTable(&buf, whoCanTestGrants()); err != nil {
		t.Fatal(err)
	}
	want := `SUBJECT-KIND    SUBJECT                    NAMESPACE  VIA
Group           trustplane:cluster-admins             ClusterRoleBinding/trustplane:cluster-admins → ClusterRole/cluster-admin
ServiceAccount  builder                    ci         RoleBinding/a/deploy → Role/a/deployer
User            alice                                 RoleBinding/a/alice-edit → ClusterRole/edit
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

func TestWriteGrantsJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := writeGrantsJSON(&buf, nil); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "[]\n" {
		t.Errorf("no grants: %q, want %q", buf.String(), "[]\n")
	}
	buf.Reset()
	grants := whoCanTestGrants()
	if err := writeGrantsJSON(&buf, grants); err != nil {
		t.Fatal(err)
	}
	var got []rbac.Grant
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("output is not a JSON list of grants: %v\n%s", err, buf.String())
	}
	if diff := cmp.Diff(grants, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	for _, key := range []string{`"subject": {`, `"kind": "ServiceAccount"`, `"bindingKind": "RoleBinding"`, `"bindingNamespace": "a"`, `"roleName": "edit"`} {
		if !strings.Contains(buf.String(), key) {
			t.Errorf("JSON lacks %s:\n%s", key, buf.String())
		}
	}
}

// TestKubeconfigAndWhoCanEndToEnd issues a kubeconfig from a running
// cluster's CA and checks what the server makes of it, and that who-can's
// answers are the server's.
func TestKubeconfigAndWhoCanEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a cluster")
	}
	c := e2etest.StartCluster(t)
	dir, adminConf := c.Dir, c.AdminConf()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	stdout, stderr, err := e2etest.Run(t, "kubeconfig", "--dir", dir, "--user", "auditor")
	if err != nil {
		t.Fatalf("trustplane kubeconfig: %v\n%s", err, stderr)
	}
	auditorConf := strings.TrimSpace(string(stdout))
	if want := filepath.Join(dir, "auditor.conf"); auditorConf != want {
		t.Fatalf("trustplane kubeconfig printed %q, want %q", auditorConf, want)
	}
	auditor := kubeconfigClient(t, auditorConf)
	admin := kubeconfigClient(t, adminConf)

	review, err := auditor.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview as auditor: %v", err)
	}
	if u := review.Status.UserInfo; u.Username != "auditor" {
		t.Errorf("SelfSubjectReview: username %q groups %q, want auditor", u.Username, u.Groups)
	}
	if _, err := auditor.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list secrets as auditor: %v, want Forbidden", err)
	}

	// who-can answers as the server decides.
	whoCan := func(args ...string) []rbac.Grant {
		t.Helper()
		stdout, stderr, err := e2etest.Run(t, append([]string{"who-can", "--kubeconfig", adminConf, "-o", "json"}, args...)...)
		if err != nil {
			t.Fatalf("who-can %q: %v\n%s", args, err, stderr)
		}
		var grants []rbac.Grant
		if err := json.Unmarshal(stdout, &grants); err != nil {
			t.Fatalf("who-can %q -o json: %v\n%s", args, err, stdout)
		}
		return grants
	}
	admins := rbac.Grant{
		Subject:     rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: rbac.ClusterAdminsGroup},
		BindingKind: "ClusterRoleBinding", BindingName: "trustplane:cluster-admins", RoleKind: "ClusterRole", RoleName: "cluster-admin",
	}
	isAuditor := func(g rbac.Grant) bool { return g.Subject.Kind == rbacv1.UserKind && g.Subject.Name == "auditor" }

	stdout, stderr, err = e2etest.Run(t, "who-can", "--kubeconfig", adminConf, "get", "secrets", "-n", "default")
	if err != nil {
		t.Fatalf("who-can get secrets: %v\n%s", err, stderr)
	}
	wantRow := []string{"Group", rbac.ClusterAdminsGroup, "ClusterRoleBinding/trustplane:cluster-admins", "→", "ClusterRole/cluster-admin"}
	if !slices.ContainsFunc(strings.Split(string(stdout), "\n"), func(line string) bool { return slices.Equal(strings.Fields(line), wantRow) }) {
		t.Errorf("who-can get secrets -n default:\n%s\nwant a row %q", stdout, wantRow)
	}
	if grants := whoCan("get", "secrets", "-n", "default"); !slices.Contains(grants, admins) || slices.ContainsFunc(grants, isAuditor) {
		t.Errorf("who-can get secrets -n default: %+v, want %+v and not auditor", grants, admins)
	}

	// Bind view to auditor in default: who-can and the server now both let
	// it list pods and deployments there, and still not read Secrets.
	_, err = admin.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "auditor-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "auditor"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("bind view to auditor: %v", err)
	}
	viaView := rbac.Grant{
		Subject:     rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "auditor"},
		BindingKind: "RoleBinding", BindingNamespace: "default", BindingName: "auditor-view", RoleKind: "ClusterRole", RoleName: "view",
	}
	for _, args := range [][]string{
		{"list", "pods", "-n", "default"},
		{"list", "deploy", "-n", "default"}, // a short name, of apps
		{"watch", "deployment.apps", "-n", "default"},
	} {
		if grants := whoCan(args...); !slices.Contains(grants, viaView) {
			t.Errorf("who-can %q: %+v, want %+v", args, grants, viaView)
		}
	}
	if _, err := auditor.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list pods as auditor with view: %v", err)
	}
	if _, err := auditor.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list deployments as auditor with view: %v", err)
	}
	for _, args := range [][]string{
		{"get", "secrets", "-n", "default"},
		{"list", "pods", "-n", "kube-system"},
		{"list", "pods"}, // cluster-wide: a RoleBinding never grants it
	} {
		if grants := whoCan(args...); slices.ContainsFunc(grants, isAuditor) {
			t.Errorf("who-can %q: %+v, want no grant to auditor", args, grants)
		}
	}
	if _, err := auditor.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list pods in kube-system as auditor: %v, want Forbidden", err)
	}

	// who-can reads every binding; the auditor may not.
	_, stderr, err = e2etest.Run(t, "who-can", "--kubeconfig", auditorConf, "get", "secrets", "-n", "default")
	if err == nil || !strings.Contains(string(stderr), "forbidden") {
		t.Errorf("who-can as auditor: %v\n%s\nwant a forbidden error", err, stderr)
	}

	// Refusals happen before anything reaches the server or the disk.
	_, stderr, err = e2etest.Run(t, "kubeconfig", "--dir", dir, "--user", "auditor")
	if err == nil || !strings.Contains(string(stderr), "refusing to overwrite") {
		t.Errorf("second kubeconfig for auditor: %v\n%s\nwant a refusal", err, stderr)
	}
	_, stderr, err = e2etest.Run(t, "who-can", "--kubeconfig", adminConf, "get", "nodes", "-n", "default")
	if err == nil || !strings.Contains(string(stderr), "cluster-scoped") {
		t.Errorf("who-can get nodes -n default: %v\n%s\nwant an error: nodes are cluster-scoped", err, stderr)
	}
}

// kubeconfigClient is a clientset for the kubeconfig file.
func kubeconfigClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
