package rbac

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Coverage is kube's Covers: each granted permission must be allowed by one
// held rule, wildcards in the grant taken literally.
func TestUncovered(t *testing.T) {
	tests := []struct {
		name        string
		held, grant []rbacv1.PolicyRule
		want        []string // describeRules of what is missing
	}{
		{name: "same rule", held: rules(newRule("get").groups("").resources("secrets")),
			grant: rules(newRule("get").groups("").resources("secrets"))},
		{name: "other verb", held: rules(newRule("get").groups("").resources("secrets")),
			grant: rules(newRule("list").groups("").resources("secrets")),
			want:  []string{`{APIGroups:[""], Resources:["secrets"], Verbs:["list"]}`}},
		{name: "split across held rules", held: rules(newRule("get").groups("").resources("pods"), newRule("list").groups("").resources("pods")),
			grant: rules(newRule("get", "list").groups("").resources("pods"))},
		{name: "nothing held", grant: rules(newRule("get", "list").groups("", "apps").resources("pods", "deployments")),
			want: []string{
				`{APIGroups:[""], Resources:["deployments"], Verbs:["get" "list"]}`,
				`{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`,
				`{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}`,
				`{APIGroups:["apps"], Resources:["pods"], Verbs:["get" "list"]}`,
			}},
		{name: "nothing granted", held: nil, grant: nil},
		{name: "a rule granting nothing needs nothing", grant: rules(newRule().groups("").resources("secrets"), newRule("get").resources("secrets"))},

		// resourceNames narrow.
		{name: "named covers the same name", held: rules(newRule("get").groups("").resources("secrets").names("a")),
			grant: rules(newRule("get").groups("").resources("secrets").names("a"))},
		{name: "named does not cover unnamed", held: rules(newRule("get").groups("").resources("secrets").names("a")),
			grant: rules(newRule("get").groups("").resources("secrets")),
			want:  []string{`{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`}},
		{name: "named does not cover another name", held: rules(newRule("get").groups("").resources("secrets").names("a")),
			grant: rules(newRule("get").groups("").resources("secrets").names("a", "b")),
			want:  []string{`{APIGroups:[""], Resources:["secrets"], ResourceNames:["b"], Verbs:["get"]}`}},
		{name: "unnamed covers any name", held: rules(newRule("get").groups("").resources("secrets")),
			grant: rules(newRule("get").groups("").resources("secrets").names("a", "b"))},

		// Wildcards held cover specific grants; only a wildcard covers one.
		{name: "* verb covers verbs", held: rules(newRule("*").groups("").resources("pods")),
			grant: rules(newRule("get", "delete", "escalate").groups("").resources("pods"))},
		{name: "* resource covers resources and subresources", held: rules(newRule("get").groups("").resources("*")),
			grant: rules(newRule("get").groups("").resources("pods", "secrets", "pods/status", "*/scale", "*"))},
		{name: "* group covers groups", held: rules(newRule("get").groups("*").resources("deployments")),
			grant: rules(newRule("get").groups("apps", "extensions", "*").resources("deployments"))},
		{name: "* resource is bound to its group", held: rules(newRule("get").groups("").resources("*")),
			grant: rules(newRule("get").groups("apps").resources("deployments")),
			want:  []string{`{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`}},
		{name: "all verbs listed do not cover *", held: rules(newRule("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection").groups("").resources("pods")),
			grant: rules(newRule("*").groups("").resources("pods")),
			want:  []string{`{APIGroups:[""], Resources:["pods"], Verbs:["*"]}`}},
		{name: "resources listed do not cover *", held: rules(newRule("get").groups("").resources("pods", "secrets")),
			grant: rules(newRule("get").groups("").resources("*")),
			want:  []string{`{APIGroups:[""], Resources:["*"], Verbs:["get"]}`}},
		{name: "groups listed do not cover *", held: rules(newRule("get").groups("", "apps").resources("pods")),
			grant: rules(newRule("get").groups("*").resources("pods")),
			want:  []string{`{APIGroups:["*"], Resources:["pods"], Verbs:["get"]}`}},
		{name: "*/scale covers each scale", held: rules(newRule("get").groups("apps").resources("*/scale")),
			grant: rules(newRule("get").groups("apps").resources("deployments/scale", "replicasets/scale", "*/scale"))},
		{name: "*/scale covers no resource itself", held: rules(newRule("get").groups("apps").resources("*/scale")),
			grant: rules(newRule("get").groups("apps").resources("deployments", "deployments/status")),
			want: []string{
				`{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`,
				`{APIGroups:["apps"], Resources:["deployments/status"], Verbs:["get"]}`,
			}},
		{name: "resource covers no subresource", held: rules(newRule("get").groups("").resources("pods")),
			grant: rules(newRule("get").groups("").resources("pods/status")),
			want:  []string{`{APIGroups:[""], Resources:["pods/status"], Verbs:["get"]}`}},
		{name: "deployments/scale does not cover */scale", held: rules(newRule("get").groups("apps").resources("deployments/scale", "replicasets/scale")),
			grant: rules(newRule("get").groups("apps").resources("*/scale")),
			want:  []string{`{APIGroups:["apps"], Resources:["*/scale"], Verbs:["get"]}`}},

		// Non-resource URLs: "*" suffixes are prefixes.
		{name: "url exact", held: rules(newRule("get").urls("/healthz")), grant: rules(newRule("get").urls("/healthz"))},
		{name: "url prefix covers below it", held: rules(newRule("get").urls("/api/*")),
			grant: rules(newRule("get").urls("/api/v1", "/api/v1/pods", "/api/", "/api/*", "/api/v1/*"))},
		{name: "url prefix covers no sibling or parent", held: rules(newRule("get").urls("/api/*")),
			grant: rules(newRule("get").urls("/api", "/apis", "/apis/*", "*")),
			want: []string{
				`{NonResourceURLs:["*"], Verbs:["get"]}`,
				`{NonResourceURLs:["/api"], Verbs:["get"]}`,
				`{NonResourceURLs:["/apis"], Verbs:["get"]}`,
				`{NonResourceURLs:["/apis/*"], Verbs:["get"]}`,
			}},
		{name: "url prefix without slash", held: rules(newRule("get").urls("/logs*")),
			grant: rules(newRule("get").urls("/logs", "/logs/kubelet", "/logsfoo", "/logs*"))},
		{name: "url exact covers nothing below", held: rules(newRule("get").urls("/healthz")),
			grant: rules(newRule("get").urls("/healthz/etcd", "/healthz*")),
			want: []string{
				`{NonResourceURLs:["/healthz*"], Verbs:["get"]}`,
				`{NonResourceURLs:["/healthz/etcd"], Verbs:["get"]}`,
			}},
		{name: "url * covers every path", held: rules(newRule("get").urls("*")),
			grant: rules(newRule("get").urls("/", "/metrics", "/debug/pprof/*", "*"))},
		{name: "url rule is not a resource rule", held: rules(newRule("*").urls("*")),
			grant: rules(newRule("get").groups("").resources("pods")),
			want:  []string{`{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`}},
		{name: "resource rule is not a url rule", held: rules(newRule("*").groups("*").resources("*")),
			grant: rules(newRule("get").urls("/metrics")),
			want:  []string{`{NonResourceURLs:["/metrics"], Verbs:["get"]}`}},
		{name: "url verb", held: rules(newRule("get").urls("*")), grant: rules(newRule("post").urls("/metrics")),
			want: []string{`{NonResourceURLs:["/metrics"], Verbs:["post"]}`}},

		{name: "cluster-admin covers everything",
			held: rules(newRule("*").groups("*").resources("*"), newRule("*").urls("*")),
			grant: rules(newRule("*").groups("*").resources("*"), newRule("*").urls("*"),
				newRule("escalate", "bind").groups("rbac.authorization.k8s.io").resources("clusterroles").names("x"),
				newRule("get").groups("example.com").resources("widgets/status"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := describeRules(Uncovered(tt.held, tt.grant))
			if len(got) == 0 {
				got = nil
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfirmNoEscalation(t *testing.T) {
	clusterAdmin := func() *rbacv1.ClusterRole {
		return testClusterRole("cluster-admin", newRule("*").groups("*").resources("*"), newRule("*").urls("*"))
	}
	l := newMemLister(t,
		clusterAdmin(),
		testClusterRole("secret-getter", newRule("get").groups("").resources("secrets")),
		testClusterRole("pod-reader", newRule("get", "list", "watch").groups("").resources("pods")),
		testRole("a", "tls-getter", newRule("get").groups("").resources("secrets").names("tls")),
		testClusterRoleBinding("alice-secrets", "secret-getter", groupSubject("g1")),
		testClusterRoleBinding("root", "cluster-admin", userSubject("root")),
		// ada is admin of namespace a only; bob reads one secret there.
		testRoleBinding("a", "ada-admin", "ClusterRole", "cluster-admin", userSubject("ada")),
		testRoleBinding("a", "bob-tls", "Role", "tls-getter", userSubject("bob")),
		testRoleBinding("a", "bob-pods", "ClusterRole", "pod-reader", userSubject("bob")),
	)
	az := newTestAuthorizer(t, l)
	alice := testUser("alice", "g1", user.AllAuthenticated)
	ada := testUser("ada", user.AllAuthenticated)
	bob := testUser("bob", user.AllAuthenticated)
	root := testUser("root")
	everything := clusterAdmin().Rules

	tests := []struct {
		name      string
		user      user.Info
		namespace string
		grant     []rbacv1.PolicyRule
		want      string // the whole error message; "" for nil
	}{
		{name: "get secrets may grant get secrets", user: alice, grant: rules(newRule("get").groups("").resources("secrets"))},
		{name: "get secrets may grant get of one secret", user: alice, namespace: "a", grant: rules(newRule("get").groups("").resources("secrets").names("x"))},
		{name: "get secrets may not grant list secrets", user: alice, grant: rules(newRule("get", "list").groups("").resources("secrets")),
			want: `user "alice" (groups=["g1" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:[""], Resources:["secrets"], Verbs:["list"]}`},
		{name: "missing permissions are merged by verb and sorted", user: alice, namespace: "a",
			grant: rules(newRule("get", "list", "watch").groups("").resources("secrets", "configmaps"), newRule("get").urls("/metrics")),
			want: `user "alice" (groups=["g1" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:[""], Resources:["configmaps"], Verbs:["get" "list" "watch"]}` + "\n" +
				`{APIGroups:[""], Resources:["secrets"], Verbs:["list" "watch"]}` + "\n" +
				`{NonResourceURLs:["/metrics"], Verbs:["get"]}`},

		{name: "namespace admin grants anything in its namespace", user: ada, namespace: "a", grant: everything},
		{name: "namespace admin grants nothing in another namespace", user: ada, namespace: "b",
			grant: rules(newRule("get").groups("").resources("pods")),
			want: `user "ada" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`},
		{name: "namespace admin grants nothing cluster-wide", user: ada, namespace: "",
			grant: rules(newRule("get").groups("").resources("pods")),
			want: `user "ada" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`},

		{name: "holding one secret covers granting it", user: bob, namespace: "a", grant: rules(newRule("get").groups("").resources("secrets").names("tls"))},
		{name: "holding one secret does not cover all", user: bob, namespace: "a", grant: rules(newRule("get").groups("").resources("secrets")),
			want: `user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		{name: "holding one secret does not cover another", user: bob, namespace: "a", grant: rules(newRule("get").groups("").resources("secrets").names("tls", "db")),
			want: `user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:[""], Resources:["secrets"], ResourceNames:["db"], Verbs:["get"]}`},
		{name: "role-bound permissions cover in their namespace", user: bob, namespace: "a", grant: rules(newRule("list", "watch").groups("").resources("pods"))},
		{name: "role-bound permissions do not cover cluster-wide", user: bob, namespace: "", grant: rules(newRule("list").groups("").resources("pods")),
			want: `user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:[""], Resources:["pods"], Verbs:["list"]}`},

		{name: "cluster-admin covers everything cluster-wide", user: root, grant: everything},
		{name: "cluster-admin covers everything in a namespace", user: root, namespace: "b", grant: append(everything,
			newRule("bind", "escalate", "impersonate").groups("rbac.authorization.k8s.io", "").resources("clusterroles", "users").names("x").r)},
		{name: "nothing to grant needs nothing", user: testUser("nobody"), grant: nil},
		{name: "nobody grants anything", user: testUser("nobody"), grant: rules(newRule("get").urls("/healthz")),
			want: `user "nobody" (groups=[]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{NonResourceURLs:["/healthz"], Verbs:["get"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := az.ConfirmNoEscalation(t.Context(), tt.user, tt.namespace, tt.grant)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error: got %q, want none", err)
			case tt.want != "" && err == nil:
				t.Errorf("error: got none, want %q", tt.want)
			case tt.want != "" && err.Error() != tt.want:
				t.Errorf("error:\n got %q\nwant %q", err, tt.want)
			case err != nil && errors.Unwrap(err) != nil:
				t.Errorf("errors.Unwrap: got %v, want nil: every binding was read", errors.Unwrap(err))
			}
		})
	}
}

// A partial view of the user's bindings may refuse what the unread part
// would have allowed, and says so; it never allows more.
func TestConfirmNoEscalationIncomplete(t *testing.T) {
	objs := []any{
		testClusterRole("pod-reader", newRule("get", "list").groups("").resources("pods")),
		testClusterRole("secret-getter", newRule("get").groups("").resources("secrets")),
		testClusterRoleBinding("pods", "pod-reader", userSubject("alice")),
		testRoleBinding("a", "secrets", "ClusterRole", "secret-getter", userSubject("alice")),
	}
	alice := testUser("alice")
	lister := &failLister{next: newMemLister(t, objs...), failRoleBindings: true}
	az := newTestAuthorizer(t, lister)

	// What the readable ClusterRoleBinding grants is still grantable.
	if err := az.ConfirmNoEscalation(t.Context(), alice, "a", rules(newRule("get").groups("").resources("pods"))); err != nil {
		t.Errorf("covered by what was read: got %v, want nil", err)
	}

	err := az.ConfirmNoEscalation(t.Context(), alice, "a", rules(newRule("get").groups("").resources("secrets")))
	if err == nil {
		t.Fatal("covered only by an unreadable binding: got nil, want an error")
	}
	for _, want := range []string{
		`user "alice" (groups=[]) is attempting to grant RBAC permissions not currently held:` + "\n" + `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`,
		"could not be read",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error: got %q, want it to contain %q", err, want)
		}
	}
	// The cause is kept for the log, not put in the message.
	if !errors.Is(err, errStorage) {
		t.Errorf("error: got %v, want one wrapping %v", err, errStorage)
	}
	if strings.Contains(err.Error(), errStorage.Error()) {
		t.Errorf("error: got %q, want the storage failure kept out of the message", err)
	}
	if cause := errors.Unwrap(err); cause == nil || !strings.Contains(cause.Error(), `list role bindings in namespace "a"`) {
		t.Errorf("errors.Unwrap: got %v, want the lookup failure", cause)
	}
}

func TestConfirmNoEscalationBadInput(t *testing.T) {
	az := newTestAuthorizer(t, newMemLister(t,
		testClusterRole("all", newRule("*").groups("*").resources("*")),
		testClusterRoleBinding("all", "all", userSubject("alice")),
	))
	grant := rules(newRule("get").groups("").resources("pods"))
	if err := az.ConfirmNoEscalation(t.Context(), nil, "", grant); err == nil {
		t.Error("nil user: got nil, want an error")
	}
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	if err := az.ConfirmNoEscalation(canceled, testUser("alice"), "", grant); err == nil {
		t.Error("canceled context: got nil, want an error")
	}
}

func TestCompactString(t *testing.T) {
	tests := []struct {
		rule rbacv1.PolicyRule
		want string
	}{
		{rule: newRule("get").groups("").resources("secrets").r, want: `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`},
		{rule: newRule("get", "update").groups("apps").resources("deployments").names("web").r,
			want: `{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["web"], Verbs:["get" "update"]}`},
		{rule: newRule("get").urls("/api/*").r, want: `{NonResourceURLs:["/api/*"], Verbs:["get"]}`},
		{rule: rbacv1.PolicyRule{}, want: `{}`},
	}
	for _, tt := range tests {
		if got := compactString(&tt.rule); got != tt.want {
			t.Errorf("compactString(%+v): got %s, want %s", tt.rule, got, tt.want)
		}
	}
}
