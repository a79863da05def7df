package rbac

import (
	"context"
	"errors"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// authzCase is one request and the decision it must get.
type authzCase struct {
	name  string
	attrs authorizer.AttributesRecord
	allow bool
	// reason, when set, is the exact reason an allow must give.
	reason string
}

func newTestAuthorizer(t testing.TB, l Lister) *Authorizer {
	t.Helper()
	az, err := New(l)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return az
}

// runCases checks each case against az; none may return an error.
func runCases(t *testing.T, az *Authorizer, cases []authzCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, reason, err := az.Authorize(t.Context(), c.attrs)
			if err != nil {
				t.Fatalf("Authorize: got error %v, want none", err)
			}
			checkDecision(t, d, reason, c.allow, c.reason)
		})
	}
}

// checkDecision checks the invariants of every decision and then the wanted
// one: only Allow or NoOpinion, a reason exactly when allowed.
func checkDecision(t *testing.T, d authorizer.Decision, reason string, wantAllow bool, wantReason string) {
	t.Helper()
	switch {
	case wantAllow && d != authorizer.DecisionAllow:
		t.Errorf("decision: got %v, want Allow", d)
	case !wantAllow && d != authorizer.DecisionNoOpinion:
		t.Errorf("decision: got %v, want NoOpinion", d)
	}
	switch {
	case d == authorizer.DecisionAllow && wantReason != "" && reason != wantReason:
		t.Errorf("reason:\n got %q\nwant %q", reason, wantReason)
	case d == authorizer.DecisionAllow && !strings.HasPrefix(reason, "RBAC: allowed by "):
		t.Errorf("reason: got %q, want it to start with %q", reason, "RBAC: allowed by ")
	case d != authorizer.DecisionAllow && reason != "":
		t.Errorf("reason: got %q on %v, want empty", reason, d)
	}
}

func TestNew(t *testing.T) {
	if az, err := New(nil); err == nil || az != nil {
		t.Errorf("New(nil): got (%v, %v), want (nil, error)", az, err)
	}
	if _, err := New(newMemLister(t)); err != nil {
		t.Errorf("New(memLister): got error %v, want none", err)
	}
}

func TestAuthorizeNoBindingsDenies(t *testing.T) {
	az := newTestAuthorizer(t, newMemLister(t))
	var zero authorizer.Decision
	if zero != authorizer.DecisionDeny {
		t.Fatalf("zero Decision: got %v, want Deny", zero)
	}
	alice := testUser("alice", "system:authenticated")
	runCases(t, az, []authzCase{
		{name: "get pods", attrs: resourceRequest(alice, "get", "", "pods", "default", "web")},
		{name: "get /api", attrs: pathRequest(alice, "get", "/api")},
	})
}

// A RoleBinding to cluster-admin makes its subject admin of that namespace
// and of nothing else.
func TestAuthorizeRoleBindingStaysInNamespace(t *testing.T) {
	l := newMemLister(t,
		testClusterRole("cluster-admin", newRule("*").groups("*").resources("*"), newRule("*").urls("*")),
		testRoleBinding("a", "alice-admin", "ClusterRole", "cluster-admin", userSubject("alice")),
	)
	alice := testUser("alice", "system:authenticated")
	cases := []authzCase{
		{name: "get pods in a", attrs: resourceRequest(alice, "get", "", "pods", "a", "web"), allow: true,
			reason: `RBAC: allowed by RoleBinding "alice-admin/a" of ClusterRole "cluster-admin" to User "alice"`},
		{name: "delete secrets in a", attrs: resourceRequest(alice, "delete", "", "secrets", "a", "tls"), allow: true},
		{name: "create rolebindings in a", attrs: resourceRequest(alice, "create", "rbac.authorization.k8s.io", "rolebindings", "a", ""), allow: true},
		{name: "get pods in b", attrs: resourceRequest(alice, "get", "", "pods", "b", "web")},
		{name: "list secrets in b", attrs: resourceRequest(alice, "list", "", "secrets", "b", "")},
		{name: "list pods in all namespaces", attrs: resourceRequest(alice, "list", "", "pods", "", "")},
		{name: "list namespaces", attrs: resourceRequest(alice, "list", "", "namespaces", "", "")},
		{name: "get nodes", attrs: resourceRequest(alice, "get", "", "nodes", "", "n1")},
		{name: "create clusterrolebindings", attrs: resourceRequest(alice, "create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "")},
		{name: "get /metrics", attrs: pathRequest(alice, "get", "/metrics")},
		{name: "get /api", attrs: pathRequest(alice, "get", "/api")},
	}
	t.Run("lister", func(t *testing.T) { runCases(t, newTestAuthorizer(t, l), cases) })
	t.Run("leaky lister", func(t *testing.T) { runCases(t, newTestAuthorizer(t, leakyLister{l}), cases) })
}

func TestAuthorizeResourceNames(t *testing.T) {
	l := newMemLister(t,
		testClusterRole("web-pod", newRule("get", "update", "list", "watch", "create", "delete", "deletecollection").groups("").resources("pods").names("web")),
		testClusterRoleBinding("alice-web-pod", "web-pod", userSubject("alice")),
	)
	az := newTestAuthorizer(t, l)
	alice := testUser("alice")
	runCases(t, az, []authzCase{
		{name: "get the named pod", attrs: resourceRequest(alice, "get", "", "pods", "default", "web"), allow: true,
			reason: `RBAC: allowed by ClusterRoleBinding "alice-web-pod" of ClusterRole "web-pod" to User "alice"`},
		{name: "update the named pod", attrs: resourceRequest(alice, "update", "", "pods", "default", "web"), allow: true},
		{name: "get another pod", attrs: resourceRequest(alice, "get", "", "pods", "default", "db")},
		{name: "list pods", attrs: resourceRequest(alice, "list", "", "pods", "default", "")},
		{name: "watch pods", attrs: resourceRequest(alice, "watch", "", "pods", "default", "")},
		{name: "create a pod", attrs: resourceRequest(alice, "create", "", "pods", "default", "")},
		{name: "deletecollection pods", attrs: resourceRequest(alice, "deletecollection", "", "pods", "default", "")},
		{name: "named pod's subresource", attrs: resourceRequest(alice, "get", "", "pods/log", "default", "web")},
		{name: "name that prefixes the allowed one", attrs: resourceRequest(alice, "get", "", "pods", "default", "we")},
	})
}

func TestAuthorizeSubresources(t *testing.T) {
	l := newMemLister(t,
		testClusterRole("pod-subresources", newRule("get").groups("").resources("pods/*")),
		testClusterRole("pod-status", newRule("update").groups("").resources("pods/status")),
		testClusterRole("any-scale", newRule("get").groups("apps").resources("*/scale")),
		testClusterRole("pods-only", newRule("get").groups("").resources("pods")),
		testClusterRole("everything-get", newRule("get").groups("*").resources("*")),
		testClusterRoleBinding("alice-subs", "pod-subresources", userSubject("alice")),
		testClusterRoleBinding("alice-status", "pod-status", userSubject("alice")),
		testClusterRoleBinding("alice-scale", "any-scale", userSubject("alice")),
		testClusterRoleBinding("bob-pods", "pods-only", userSubject("bob")),
		testClusterRoleBinding("carol-get", "everything-get", userSubject("carol")),
	)
	az := newTestAuthorizer(t, l)
	alice, bob, carol := testUser("alice"), testUser("bob"), testUser("carol")
	runCases(t, az, []authzCase{
		{name: "pods/* is no wildcard: not pods/log", attrs: resourceRequest(alice, "get", "", "pods/log", "default", "web")},
		{name: "pods/* is no wildcard: not pods/status", attrs: resourceRequest(alice, "get", "", "pods/status", "default", "web")},
		{name: "pods/* does not allow pods", attrs: resourceRequest(alice, "get", "", "pods", "default", "web")},
		{name: "pods/* does not allow other resources' subresources", attrs: resourceRequest(alice, "get", "", "nodes/status", "", "n1")},
		{name: "pods/status allows updating it", attrs: resourceRequest(alice, "update", "", "pods/status", "default", "web"), allow: true,
			reason: `RBAC: allowed by ClusterRoleBinding "alice-status" of ClusterRole "pod-status" to User "alice"`},
		{name: "pods/status does not allow updating pods", attrs: resourceRequest(alice, "update", "", "pods", "default", "web")},
		{name: "pods/status does not allow pods/binding", attrs: resourceRequest(alice, "update", "", "pods/binding", "default", "web")},
		{name: "*/scale allows deployments/scale", attrs: resourceRequest(alice, "get", "apps", "deployments/scale", "default", "web"), allow: true},
		{name: "*/scale allows replicasets/scale", attrs: resourceRequest(alice, "get", "apps", "replicasets/scale", "default", "web"), allow: true},
		{name: "*/scale does not allow deployments", attrs: resourceRequest(alice, "get", "apps", "deployments", "default", "web")},
		{name: "*/scale does not allow deployments/status", attrs: resourceRequest(alice, "get", "apps", "deployments/status", "default", "web")},
		{name: "*/scale is bound to its group", attrs: resourceRequest(alice, "get", "", "replicationcontrollers/scale", "default", "web")},
		{name: "pods does not allow pods/status", attrs: resourceRequest(bob, "get", "", "pods/status", "default", "web")},
		{name: "pods does not allow pods/exec", attrs: resourceRequest(bob, "get", "", "pods/exec", "default", "web")},
		{name: "pods allows pods", attrs: resourceRequest(bob, "get", "", "pods", "default", "web"), allow: true},
		{name: "* allows subresources", attrs: resourceRequest(carol, "get", "", "pods/log", "default", "web"), allow: true},
		{name: "* allows any group", attrs: resourceRequest(carol, "get", "example.com", "widgets", "default", "w"), allow: true},
		{name: "* resources do not allow other verbs", attrs: resourceRequest(carol, "create", "", "pods", "default", "")},
	})
}

func TestAuthorizeSubjects(t *testing.T) {
	l := newMemLister(t,
		testClusterRole("pod-reader", newRule("get", "list").groups("").resources("pods")),
		testClusterRole("node-reader", newRule("get", "list").groups("").resources("nodes")),
		testRole("a", "secret-reader", newRule("get").groups("").resources("secrets")),
		// A ServiceAccount subject without a namespace means the binding's.
		testRoleBinding("a", "builder-secrets", "Role", "secret-reader", serviceAccountSubject("", "builder")),
		// A ClusterRoleBinding has no namespace to default to: this matches
		// no one, not even system:serviceaccount::builder.
		testClusterRoleBinding("builder-everywhere", "pod-reader", serviceAccountSubject("", "builder")),
		testClusterRoleBinding("ctrl-nodes", "node-reader", serviceAccountSubject("kube-system", "ctrl")),
		testClusterRoleBinding("devs-pods", "pod-reader", groupSubject("devs")),
		// Later subjects of a binding count too.
		testClusterRoleBinding("ops-nodes", "node-reader", userSubject("nobody"), groupSubject("ops")),
	)
	az := newTestAuthorizer(t, l)
	builderA := testUser("system:serviceaccount:a:builder", "system:serviceaccounts", "system:serviceaccounts:a")
	builderB := testUser("system:serviceaccount:b:builder", "system:serviceaccounts", "system:serviceaccounts:b")
	ctrl := testUser("system:serviceaccount:kube-system:ctrl")
	runCases(t, az, []authzCase{
		{name: "service account defaulted to binding namespace", attrs: resourceRequest(builderA, "get", "", "secrets", "a", "tls"), allow: true,
			reason: `RBAC: allowed by RoleBinding "builder-secrets/a" of Role "secret-reader" to ServiceAccount "builder/a"`},
		{name: "same name in another namespace", attrs: resourceRequest(builderB, "get", "", "secrets", "a", "tls")},
		{name: "service account outside its binding's namespace", attrs: resourceRequest(builderA, "get", "", "secrets", "b", "tls")},
		{name: "namespace-less service account in a cluster binding", attrs: resourceRequest(builderA, "list", "", "pods", "a", "")},
		{name: "empty namespace username", attrs: resourceRequest(testUser("system:serviceaccount::builder"), "list", "", "pods", "", "")},
		{name: "plain user named like the service account", attrs: resourceRequest(testUser("builder"), "get", "", "secrets", "a", "tls")},
		{name: "service account with namespace in cluster binding", attrs: resourceRequest(ctrl, "list", "", "nodes", "", ""), allow: true,
			reason: `RBAC: allowed by ClusterRoleBinding "ctrl-nodes" of ClusterRole "node-reader" to ServiceAccount "ctrl/kube-system"`},
		{name: "service account username with a suffix", attrs: resourceRequest(testUser("system:serviceaccount:kube-system:ctrl2"), "list", "", "nodes", "", "")},
		{name: "group member", attrs: resourceRequest(testUser("carol", "system:authenticated", "devs"), "list", "", "pods", "x", ""), allow: true,
			reason: `RBAC: allowed by ClusterRoleBinding "devs-pods" of ClusterRole "pod-reader" to Group "devs"`},
		{name: "user named like the group", attrs: resourceRequest(testUser("devs"), "list", "", "pods", "x", "")},
		{name: "group that prefixes the bound one", attrs: resourceRequest(testUser("carol", "dev"), "list", "", "pods", "x", "")},
		{name: "second subject of a binding", attrs: resourceRequest(testUser("dave", "ops"), "get", "", "nodes", "", "n1"), allow: true,
			reason: `RBAC: allowed by ClusterRoleBinding "ops-nodes" of ClusterRole "node-reader" to Group "ops"`},
		{name: "system:masters gets nothing", attrs: resourceRequest(testUser("root", "system:masters"), "get", "", "secrets", "a", "tls")},
		{name: "system:masters gets no path", attrs: pathRequest(testUser("root", "system:masters"), "get", "/metrics")},
	})
}

func TestAuthorizeIgnoresMalformedBindings(t *testing.T) {
	admin := func() *rbacv1.ClusterRole {
		return testClusterRole("cluster-admin", newRule("*").groups("*").resources("*"), newRule("*").urls("*"))
	}
	alice := testUser("alice")
	getSecret := resourceRequest(alice, "get", "", "secrets", "a", "tls")

	wrongRefGroup := testClusterRoleBinding("b", "cluster-admin", userSubject("alice"))
	wrongRefGroup.RoleRef.APIGroup = "example.com"
	emptyRefGroup := testClusterRoleBinding("b", "cluster-admin", userSubject("alice"))
	emptyRefGroup.RoleRef.APIGroup = ""
	clusterBindingToRole := testClusterRoleBinding("b", "cluster-admin", userSubject("alice"))
	clusterBindingToRole.RoleRef.Kind = "Role"
	wrongSubjectGroup := testClusterRoleBinding("b", "cluster-admin", userSubject("alice"))
	wrongSubjectGroup.Subjects[0].APIGroup = "example.com"
	legacySubjectGroup := testClusterRoleBinding("b", "cluster-admin", userSubject("alice"))
	legacySubjectGroup.Subjects[0].APIGroup = ""
	saWithRBACGroup := testClusterRoleBinding("b", "cluster-admin", serviceAccountSubject("a", "builder"))
	saWithRBACGroup.Subjects[0].APIGroup = rbacv1.GroupName
	unknownSubjectKind := testClusterRoleBinding("b", "cluster-admin", rbacv1.Subject{Kind: "Robot", Name: "alice"})
	emptyUserSubject := testClusterRoleBinding("b", "cluster-admin", userSubject(""))

	tests := []struct {
		name  string
		objs  []any
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{name: "roleRef apiGroup example.com", objs: []any{admin(), wrongRefGroup}, attrs: getSecret},
		{name: "roleRef apiGroup empty", objs: []any{admin(), emptyRefGroup}, attrs: getSecret},
		{name: "ClusterRoleBinding to a Role", objs: []any{admin(), testRole("", "cluster-admin", newRule("*").groups("*").resources("*")), clusterBindingToRole}, attrs: getSecret},
		{name: "RoleBinding of unknown kind", objs: []any{admin(), testRoleBinding("a", "b", "Superuser", "cluster-admin", userSubject("alice"))}, attrs: getSecret},
		{name: "User subject apiGroup example.com", objs: []any{admin(), wrongSubjectGroup}, attrs: getSecret},
		{name: "User subject apiGroup empty (legacy)", objs: []any{admin(), legacySubjectGroup}, attrs: getSecret, allow: true},
		{name: "ServiceAccount subject with rbac apiGroup", objs: []any{admin(), saWithRBACGroup}, attrs: resourceRequest(testUser("system:serviceaccount:a:builder"), "get", "", "secrets", "a", "tls")},
		{name: "unknown subject kind", objs: []any{admin(), unknownSubjectKind}, attrs: getSecret},
		{name: "empty user subject vs empty username", objs: []any{admin(), emptyUserSubject}, attrs: resourceRequest(testUser(""), "get", "", "secrets", "a", "tls")},
		{name: "ClusterRoleBinding to missing ClusterRole", objs: []any{testClusterRoleBinding("b", "cluster-admin", userSubject("alice"))}, attrs: getSecret},
		{name: "RoleBinding to missing Role", objs: []any{admin(), testRoleBinding("a", "b", "Role", "cluster-admin", userSubject("alice"))}, attrs: getSecret},
		{name: "RoleBinding to missing ClusterRole", objs: []any{testRoleBinding("a", "b", "ClusterRole", "cluster-admin", userSubject("alice"))}, attrs: getSecret},
		{name: "RoleBinding to Role of another namespace", objs: []any{testRole("b", "reader", newRule("get").groups("").resources("secrets")), testRoleBinding("a", "b", "Role", "reader", userSubject("alice"))}, attrs: getSecret},
		{name: "nil bindings", objs: []any{admin(), (*rbacv1.ClusterRoleBinding)(nil), (*rbacv1.RoleBinding)(nil)}, attrs: getSecret},
		{name: "missing role, then a good binding", objs: []any{admin(),
			testClusterRoleBinding("missing", "no-such-role", userSubject("alice")),
			testRoleBinding("a", "missing", "Role", "no-such-role", userSubject("alice")),
			testRoleBinding("a", "good", "ClusterRole", "cluster-admin", userSubject("alice")),
		}, attrs: getSecret, allow: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			az := newTestAuthorizer(t, newMemLister(t, tt.objs...))
			d, reason, err := az.Authorize(t.Context(), tt.attrs)
			if err != nil {
				t.Fatalf("Authorize: got error %v, want none", err)
			}
			checkDecision(t, d, reason, tt.allow, "")
		})
	}
}

func TestAuthorizeNonResourceURLs(t *testing.T) {
	l := newMemLister(t,
		testClusterRole("apis-and-metrics", newRule("get").urls("/apis/*", "/metrics", "/logs*")),
		testClusterRole("all-paths", newRule("get").urls("*")),
		testClusterRole("all-resources", newRule("*").groups("*").resources("*")),
		testClusterRoleBinding("alice", "apis-and-metrics", userSubject("alice")),
		testClusterRoleBinding("bob", "all-paths", userSubject("bob")),
		testClusterRoleBinding("carol", "all-resources", userSubject("carol")),
	)
	az := newTestAuthorizer(t, l)
	alice, bob, carol := testUser("alice"), testUser("bob"), testUser("carol")
	runCases(t, az, []authzCase{
		{name: "prefix match", attrs: pathRequest(alice, "get", "/apis/apps"), allow: true,
			reason: `RBAC: allowed by ClusterRoleBinding "alice" of ClusterRole "apis-and-metrics" to User "alice"`},
		{name: "deep prefix match", attrs: pathRequest(alice, "get", "/apis/apps/v1"), allow: true},
		{name: "prefix itself", attrs: pathRequest(alice, "get", "/apis/"), allow: true},
		{name: "prefix without its slash", attrs: pathRequest(alice, "get", "/apis")},
		{name: "sibling of the prefix", attrs: pathRequest(alice, "get", "/apisx/y")},
		{name: "prefix without slash matches more", attrs: pathRequest(alice, "get", "/logsfoo"), allow: true},
		{name: "exact path", attrs: pathRequest(alice, "get", "/metrics"), allow: true},
		{name: "below an exact path", attrs: pathRequest(alice, "get", "/metrics/slis")},
		{name: "exact path, other verb", attrs: pathRequest(alice, "post", "/metrics")},
		{name: "unlisted path", attrs: pathRequest(alice, "get", "/api")},
		{name: "path rule does not match a resource", attrs: resourceRequest(alice, "get", "apps", "deployments", "default", "web")},
		{name: "* matches any path", attrs: pathRequest(bob, "get", "/debug/pprof/profile"), allow: true},
		{name: "* path does not match a resource", attrs: resourceRequest(bob, "get", "", "pods", "default", "web")},
		{name: "* resources do not match a path", attrs: pathRequest(carol, "get", "/healthz")},
	})
}

func TestAuthorizeListerErrors(t *testing.T) {
	alice := testUser("alice", "devs")
	objs := []any{
		testClusterRole("broken", newRule("get").groups("").resources("pods")),
		testClusterRole("pod-reader", newRule("get").groups("").resources("pods")),
		testRole("a", "pod-reader", newRule("get").groups("").resources("pods")),
		testClusterRoleBinding("first", "broken", userSubject("alice")),
	}
	withClusterGrant := append(objs[:len(objs):len(objs)], testClusterRoleBinding("second", "pod-reader", groupSubject("devs")))
	withRoleGrant := append(objs[:len(objs):len(objs)], testRoleBinding("a", "local", "Role", "pod-reader", userSubject("alice")))
	getPod := resourceRequest(alice, "get", "", "pods", "a", "web")

	tests := []struct {
		name    string
		lister  *failLister
		attrs   authorizer.AttributesRecord
		allow   bool
		wantErr []string // substrings of the error; nil means no error
	}{
		{name: "everything fails", lister: failAll(t), attrs: getPod,
			wantErr: []string{"list cluster role bindings", `list role bindings in namespace "a"`}},
		{name: "everything fails, cluster-scoped", lister: failAll(t), attrs: resourceRequest(alice, "list", "", "nodes", "", ""),
			wantErr: []string{"list cluster role bindings"}},
		{name: "cluster role fails, no other grant",
			lister:  &failLister{next: newMemLister(t, objs...), failClusterRoles: map[string]bool{"broken": true}},
			attrs:   getPod,
			wantErr: []string{`get cluster role "broken" of cluster role binding "first"`}},
		{name: "cluster role fails, a later cluster binding allows",
			lister: &failLister{next: newMemLister(t, withClusterGrant...), failClusterRoles: map[string]bool{"broken": true}},
			attrs:  getPod, allow: true},
		{name: "cluster role bindings fail, a role binding allows",
			lister: &failLister{next: newMemLister(t, withRoleGrant...), failClusterRoleBindings: true},
			attrs:  getPod, allow: true},
		{name: "role fails",
			lister:  &failLister{next: newMemLister(t, withRoleGrant...), failRoles: true, failClusterRoles: map[string]bool{"broken": true}},
			attrs:   getPod,
			wantErr: []string{`get cluster role "broken"`, `get Role "pod-reader" of role binding "local" in namespace "a"`}},
		{name: "role bindings fail",
			lister:  &failLister{next: newMemLister(t, withRoleGrant...), failRoleBindings: true, failClusterRoles: map[string]bool{"broken": true}},
			attrs:   getPod,
			wantErr: []string{`get cluster role "broken"`, `list role bindings in namespace "a"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			az := newTestAuthorizer(t, tt.lister)
			d, reason, err := az.Authorize(t.Context(), tt.attrs)
			checkDecision(t, d, reason, tt.allow, "")
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("error: got %v, want none", err)
				}
				return
			}
			if !errors.Is(err, errStorage) {
				t.Fatalf("error: got %v, want one wrapping %v", err, errStorage)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error: got %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

func TestAuthorizeBadInput(t *testing.T) {
	// Even a lister that would allow everything must not be consulted.
	l := newMemLister(t,
		testClusterRole("all", newRule("*").groups("*").resources("*"), newRule("*").urls("*")),
		testClusterRoleBinding("all", "all", groupSubject("system:authenticated"), userSubject("")),
	)
	az := newTestAuthorizer(t, l)
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name  string
		ctx   context.Context
		attrs authorizer.Attributes
	}{
		{name: "nil attributes", ctx: t.Context(), attrs: nil},
		{name: "no user", ctx: t.Context(), attrs: resourceRequest(nil, "get", "", "pods", "a", "web")},
		{name: "canceled context", ctx: canceled, attrs: resourceRequest(testUser("alice", "system:authenticated"), "get", "", "pods", "a", "web")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, err := az.Authorize(tt.ctx, tt.attrs)
			checkDecision(t, d, reason, false, "")
			if err == nil {
				t.Errorf("error: got none, want one")
			}
		})
	}
}

func TestConditionsAware(t *testing.T) {
	l := newMemLister(t,
		testClusterRole("pod-reader", newRule("get").groups("").resources("pods")),
		testClusterRoleBinding("alice", "pod-reader", userSubject("alice")),
	)
	az := newTestAuthorizer(t, l)
	alice := testUser("alice")

	if got := az.ConditionsAwareAuthorize(t.Context(), resourceRequest(alice, "get", "", "pods", "a", "web")); !got.IsAllow() {
		t.Errorf("ConditionsAwareAuthorize(allowed request): got %v, want Allow", got)
	}
	if got := az.ConditionsAwareAuthorize(t.Context(), resourceRequest(alice, "get", "", "secrets", "a", "tls")); !got.IsNoOpinion() {
		t.Errorf("ConditionsAwareAuthorize(denied request): got %v, want NoOpinion", got)
	}
	d, _, err := az.EvaluateConditions(t.Context(), authorizer.ConditionsAwareDecision{}, nil)
	if d != authorizer.DecisionDeny || !errors.Is(err, authorizer.ErrorConditionEvaluationNotSupported) {
		t.Errorf("EvaluateConditions: got (%v, %v), want (Deny, %v)", d, err, authorizer.ErrorConditionEvaluationNotSupported)
	}
}
