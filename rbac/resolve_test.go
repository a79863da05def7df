package rbac

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// resolveObjects is a small cluster: alice reads pods everywhere, edits
// configmaps in a by a Role, and reads secrets in a and b through a
// ClusterRole bound by RoleBindings; the devs group reads nodes.
func resolveObjects() []any {
	return []any{
		testClusterRole("pod-reader", newRule("get", "list").groups("").resources("pods")),
		testClusterRole("node-reader", newRule("get").groups("").resources("nodes")),
		testClusterRole("secret-reader", newRule("get").groups("").resources("secrets")),
		testRole("a", "cm-editor", newRule("update").groups("").resources("configmaps").names("app")),
		testClusterRoleBinding("alice-pods", "pod-reader", userSubject("alice")),
		testClusterRoleBinding("devs-nodes", "node-reader", groupSubject("devs")),
		testClusterRoleBinding("bob-pods", "pod-reader", userSubject("bob")),
		testClusterRoleBinding("dangling", "no-such-role", userSubject("alice")),
		testRoleBinding("a", "alice-cm", "Role", "cm-editor", userSubject("alice")),
		testRoleBinding("a", "alice-secrets", "ClusterRole", "secret-reader", userSubject("alice")),
		testRoleBinding("b", "alice-secrets", "ClusterRole", "secret-reader", userSubject("alice")),
		testRoleBinding("a", "dangling", "Role", "no-such-role", userSubject("alice")),
	}
}

func TestRulesFor(t *testing.T) {
	podRead := newRule("get", "list").groups("").resources("pods").r
	nodeRead := newRule("get").groups("").resources("nodes").r
	secretRead := newRule("get").groups("").resources("secrets").r
	cmEdit := newRule("update").groups("").resources("configmaps").names("app").r

	tests := []struct {
		name      string
		user      user.Info
		namespace string
		want      []rbacv1.PolicyRule
	}{
		{name: "cluster-wide", user: testUser("alice", "devs"), namespace: "", want: []rbacv1.PolicyRule{podRead, nodeRead}},
		{name: "namespace a adds its bindings", user: testUser("alice", "devs"), namespace: "a",
			want: []rbacv1.PolicyRule{podRead, nodeRead, cmEdit, secretRead}},
		{name: "namespace b", user: testUser("alice"), namespace: "b", want: []rbacv1.PolicyRule{podRead, secretRead}},
		{name: "namespace without bindings", user: testUser("alice"), namespace: "c", want: []rbacv1.PolicyRule{podRead}},
		{name: "group only", user: testUser("carol", "devs"), namespace: "a", want: []rbacv1.PolicyRule{nodeRead}},
		{name: "nobody", user: testUser("mallory", "system:authenticated"), namespace: "a", want: nil},
	}
	az := newTestAuthorizer(t, newMemLister(t, resolveObjects()...))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, incomplete, err := az.RulesFor(t.Context(), tt.user, tt.namespace)
			if err != nil || incomplete {
				t.Fatalf("RulesFor: got incomplete=%v, error %v; want complete, no error", incomplete, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}
}

// RulesFor hands out copies: a caller editing them changes nothing stored.
func TestRulesForCopies(t *testing.T) {
	l := newMemLister(t, resolveObjects()...)
	az := newTestAuthorizer(t, l)
	got, _, err := az.RulesFor(t.Context(), testUser("alice"), "a")
	if err != nil || len(got) == 0 {
		t.Fatalf("RulesFor: got %v, %v; want rules", got, err)
	}
	for i := range got {
		got[i].Verbs[0] = "*"
		got[i].Resources[0] = "*"
	}
	if r := l.clusterRoles["pod-reader"].Rules[0]; r.Verbs[0] != "get" || r.Resources[0] != "pods" {
		t.Errorf("stored pod-reader rule: got %+v after editing RulesFor's result, want it unchanged", r)
	}
}

func TestRulesForIncomplete(t *testing.T) {
	alice := testUser("alice", "devs")
	tests := []struct {
		name      string
		lister    *failLister
		namespace string
		// want is what could still be read.
		want    []rbacv1.PolicyRule
		wantErr []string
	}{
		{name: "cluster role bindings fail", namespace: "a",
			lister:  &failLister{next: newMemLister(t, resolveObjects()...), failClusterRoleBindings: true},
			want:    []rbacv1.PolicyRule{newRule("update").groups("").resources("configmaps").names("app").r, newRule("get").groups("").resources("secrets").r},
			wantErr: []string{"list cluster role bindings"}},
		{name: "one cluster role fails", namespace: "",
			lister:  &failLister{next: newMemLister(t, resolveObjects()...), failClusterRoles: map[string]bool{"pod-reader": true}},
			want:    []rbacv1.PolicyRule{newRule("get").groups("").resources("nodes").r},
			wantErr: []string{`get cluster role "pod-reader" of cluster role binding "alice-pods"`}},
		{name: "roles fail", namespace: "a",
			lister: &failLister{next: newMemLister(t, resolveObjects()...), failRoles: true},
			want: []rbacv1.PolicyRule{newRule("get", "list").groups("").resources("pods").r, newRule("get").groups("").resources("nodes").r,
				newRule("get").groups("").resources("secrets").r},
			wantErr: []string{`get Role "cm-editor" of role binding "alice-cm" in namespace "a"`, `get Role "no-such-role" of role binding "dangling"`}},
		{name: "role bindings fail", namespace: "a",
			lister:  &failLister{next: newMemLister(t, resolveObjects()...), failRoleBindings: true},
			want:    []rbacv1.PolicyRule{newRule("get", "list").groups("").resources("pods").r, newRule("get").groups("").resources("nodes").r},
			wantErr: []string{`list role bindings in namespace "a"`}},
		{name: "everything fails", namespace: "a", lister: failAll(t),
			wantErr: []string{"list cluster role bindings", `list role bindings in namespace "a"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			az := newTestAuthorizer(t, tt.lister)
			got, incomplete, err := az.RulesFor(t.Context(), alice, tt.namespace)
			if !incomplete {
				t.Errorf("incomplete: got false, want true")
			}
			if !errors.Is(err, errStorage) {
				t.Fatalf("error: got %v, want one wrapping %v", err, errStorage)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error: got %q, want it to contain %q", err, want)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rules still read (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRulesForBadInput(t *testing.T) {
	az := newTestAuthorizer(t, newMemLister(t, resolveObjects()...))
	if rules, incomplete, err := az.RulesFor(t.Context(), nil, "a"); err == nil || !incomplete || rules != nil {
		t.Errorf("RulesFor(nil user): got (%v, %v, %v), want (nil, true, error)", rules, incomplete, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if rules, incomplete, err := az.RulesFor(ctx, testUser("alice"), "a"); err == nil || !incomplete || rules != nil {
		t.Errorf("RulesFor(canceled): got (%v, %v, %v), want (nil, true, error)", rules, incomplete, err)
	}
}

// RulesFor and Authorize read the same bindings: every request the rules of
// RulesFor allow, Authorize allows, and no other; malformed bindings are
// ignored by both.
func TestRulesForAgreesWithAuthorize(t *testing.T) {
	objs := append(resolveObjects(),
		testClusterRole("everything", newRule("*").groups("*").resources("*"), newRule("*").urls("*")),
		testRoleBinding("a", "unknown-kind", "Superuser", "everything", userSubject("alice")),
		func() any {
			b := testClusterRoleBinding("wrong-group", "everything", userSubject("alice"))
			b.RoleRef.APIGroup = "example.com"
			return b
		}(),
		func() any {
			b := testClusterRoleBinding("to-a-role", "everything", userSubject("alice"))
			b.RoleRef.Kind = "Role"
			return b
		}(),
		testRole("", "everything", newRule("*").groups("*").resources("*")),
	)
	az := newTestAuthorizer(t, leakyLister{newMemLister(t, objs...)})
	users := []*user.DefaultInfo{testUser("alice", "devs"), testUser("bob"), testUser("carol", "devs"), testUser("mallory")}
	resources := []string{"pods", "nodes", "secrets", "configmaps", "deployments"}
	for _, u := range users {
		for _, ns := range []string{"", "a", "b"} {
			rules, _, err := az.RulesFor(t.Context(), u, ns)
			if err != nil {
				t.Fatalf("RulesFor(%s, %q): %v", u.Name, ns, err)
			}
			for _, verb := range []string{"get", "list", "update", "delete"} {
				for _, res := range resources {
					for _, name := range []string{"", "app"} {
						attrs := resourceRequest(u, verb, "", res, ns, name)
						d, _, err := az.Authorize(t.Context(), attrs)
						if err != nil {
							t.Fatalf("Authorize: %v", err)
						}
						req := newRequest(attrs)
						if got, want := req.allowedByAny(rules), d == authorizer.DecisionAllow; got != want {
							t.Errorf("%s %s %s in %q named %q: RulesFor allows %v, Authorize allows %v", u.Name, verb, res, ns, name, got, want)
						}
					}
				}
			}
		}
	}
	// Sanity: the malformed bindings really were there to be ignored.
	if rules, _, _ := az.RulesFor(t.Context(), testUser("alice"), "a"); slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Verbs, "*") }) {
		t.Errorf("RulesFor(alice, a): got a wildcard rule from a malformed binding")
	}
}

func TestResolveRoleRef(t *testing.T) {
	objs := append(resolveObjects(), testClusterRole("empty"), testRole("a", "empty"))
	az := newTestAuthorizer(t, newMemLister(t, objs...))
	ref := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	}
	tests := []struct {
		name      string
		namespace string
		ref       rbacv1.RoleRef
		want      []rbacv1.PolicyRule
		wantNil   bool // absent: nil, not merely empty
		wantErr   bool
	}{
		{name: "cluster role from a cluster binding", ref: ref("ClusterRole", "pod-reader"),
			want: []rbacv1.PolicyRule{newRule("get", "list").groups("").resources("pods").r}},
		{name: "cluster role from a role binding", namespace: "b", ref: ref("ClusterRole", "secret-reader"),
			want: []rbacv1.PolicyRule{newRule("get").groups("").resources("secrets").r}},
		{name: "role in its namespace", namespace: "a", ref: ref("Role", "cm-editor"),
			want: []rbacv1.PolicyRule{newRule("update").groups("").resources("configmaps").names("app").r}},
		{name: "role from another namespace", namespace: "b", ref: ref("Role", "cm-editor"), wantNil: true},
		{name: "missing cluster role", ref: ref("ClusterRole", "no-such-role"), wantNil: true},
		{name: "missing role", namespace: "a", ref: ref("Role", "no-such-role"), wantNil: true},
		{name: "cluster role without rules", ref: ref("ClusterRole", "empty"), want: []rbacv1.PolicyRule{}},
		{name: "role without rules", namespace: "a", ref: ref("Role", "empty"), want: []rbacv1.PolicyRule{}},
		{name: "role outside a namespace", ref: ref("Role", "cm-editor"), wantErr: true},
		{name: "unknown kind", namespace: "a", ref: ref("Superuser", "pod-reader"), wantErr: true},
		{name: "wrong apiGroup", ref: rbacv1.RoleRef{APIGroup: "example.com", Kind: "ClusterRole", Name: "pod-reader"}, wantErr: true},
		{name: "empty apiGroup", ref: rbacv1.RoleRef{Kind: "ClusterRole", Name: "pod-reader"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := az.ResolveRoleRef(t.Context(), tt.namespace, tt.ref)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error: got %v, want error=%v", err, tt.wantErr)
			}
			if tt.wantErr {
				if got != nil {
					t.Errorf("rules: got %v with an error, want nil", got)
				}
				return
			}
			if (got == nil) != tt.wantNil {
				t.Errorf("rules == nil: got %v, want %v (nil means absent)", got == nil, tt.wantNil)
			}
			if diff := cmp.Diff(tt.want, got); !tt.wantNil && diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("lister failure", func(t *testing.T) {
		az := newTestAuthorizer(t, failAll(t))
		for _, r := range []rbacv1.RoleRef{ref("ClusterRole", "pod-reader"), ref("Role", "cm-editor")} {
			if _, err := az.ResolveRoleRef(t.Context(), "a", r); !errors.Is(err, errStorage) {
				t.Errorf("ResolveRoleRef(%s): got error %v, want one wrapping %v", r.Kind, err, errStorage)
			}
		}
	})
}
