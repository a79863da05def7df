package rbac

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestExpandRule(t *testing.T) {
	for _, tc := range []struct {
		rule rbacv1.PolicyRule
		want []string // DescribePermission of each
	}{
		{newRule("get", "list", "delete").groups("").resources("secrets").r, []string{"get secrets", "list secrets", "delete secrets"}},
		{newRule("get", "update").groups("apps").resources("deployments", "deployments/scale").names("web").r,
			[]string{"get deployments.apps [web]", "get deployments.apps/scale [web]", "update deployments.apps [web]", "update deployments.apps/scale [web]"}},
		{newRule("get", "*").groups("", "*").resources("pods", "*", "pods").r, []string{"* *.*"}},
		{newRule("get").groups("").resources("*/status", "pods").r, []string{"get */status", "get pods"}},
		{newRule("get", "get").urls("/healthz", "/logs/*").r, []string{"get /healthz", "get /logs/*"}},
		{newRule("get").urls("/healthz", "*").r, []string{"get *"}},
		{newRule("get").groups("").r, nil}, // grants nothing
	} {
		var got []string
		for _, p := range ExpandRule(tc.rule) {
			got = append(got, DescribePermission(p))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ExpandRule(%+v) (-want +got):\n%s", tc.rule, diff)
		}
	}
}

// Each permission of ExpandRule allows what the rule allows, together no more.
func TestExpandRuleAgreesWithRule(t *testing.T) {
	rules := []rbacv1.PolicyRule{
		newRule("get", "list").groups("", "apps").resources("pods", "deployments/scale", "*/status").names("a", "b").r,
		newRule("*").groups("apps").resources("*").r,
		newRule("get", "post").urls("/healthz", "/logs/*").r,
	}
	var requests []request
	for _, verb := range []string{"get", "list", "post", "delete"} {
		for _, group := range []string{"", "apps", "batch"} {
			for _, res := range []string{"pods", "deployments", "pods/status", "deployments/scale", "jobs/status"} {
				for _, name := range []string{"", "a", "c"} {
					requests = append(requests, newRequest(resourceRequest(nil, verb, group, res, "ns", name)))
				}
			}
		}
		for _, path := range []string{"/healthz", "/logs/x", "/logs", "/metrics"} {
			requests = append(requests, newRequest(pathRequest(nil, verb, path)))
		}
	}
	for _, rule := range rules {
		perms := ExpandRule(rule)
		for _, req := range requests {
			if want, got := req.allowedBy(&rule), req.allowedByAny(perms); got != want {
				t.Errorf("%+v: rule %+v allows it: %v; its permissions: %v", req, rule, want, got)
			}
		}
	}
}

func TestUsage(t *testing.T) {
	alice := testUser("alice", "devs", user.AllAuthenticated)
	objs := []any{
		testRole("a", "secret-reader", newRule("get", "list", "delete").groups("").resources("secrets")),
		testRoleBinding("a", "alice-secrets", "Role", "secret-reader", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice"}),
		testRoleBinding("b", "alice-secrets", "Role", "missing", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice"}),
		testClusterRole("pods", newRule("*").groups("").resources("pods")),
		testClusterRoleBinding("devs-pods", "pods", rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "devs"}),
		testClusterRoleBinding("bob-pods", "pods", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}),
	}
	l := newMemLister(t, objs...)
	requests := []RequestCount{
		{Request{Verb: "get", Resource: "secrets", Namespace: "a", Name: "db"}, 2},
		{Request{Verb: "list", Resource: "secrets", Namespace: "a"}, 1},
		{Request{Verb: "get", Resource: "secrets", Namespace: "b", Name: "db"}, 5}, // not by the Role of a
		{Request{Verb: "get", Resource: "pods", Namespace: "x", Name: "p"}, 3},
		{Request{Verb: "list", Resource: "pods"}, 1},
		{Request{Verb: "get", NonResourceURL: "/healthz"}, 7},
	}
	got := Usage(alice, requests, slices.Collect(maps.Values(l.clusterRoles)), slices.Collect(maps.Values(l.roles)), l.clusterRoleBindings, l.roleBindings)
	want := UserUsage{Grants: []GrantUse{
		{
			Grant: crbGrant(rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "devs"}, "devs-pods", "pods"),
			Permissions: []PermissionUse{{
				Rule: newRule("*").groups("").resources("pods").r, Wildcard: true, Used: 4,
				Requests: []RequestCount{requests[3], requests[4]},
			}},
		},
		{
			Grant: rbGrant(rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}, "a", "alice-secrets", "Role", "secret-reader"),
			Permissions: []PermissionUse{
				{Rule: newRule("get").groups("").resources("secrets").r, Used: 2},
				{Rule: newRule("list").groups("").resources("secrets").r, Used: 1},
				{Rule: newRule("delete").groups("").resources("secrets").r, Used: 0},
			},
		},
	}, Ungranted: []RequestCount{requests[2], requests[5]}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Usage (-want +got):\n%s", diff)
	}
}

func TestCoveringRules(t *testing.T) {
	requests := []Request{
		{Verb: "get", Resource: "secrets", Namespace: "a", Name: "db"},
		{Verb: "get", Resource: "secrets", Namespace: "a", Name: "tls"},
		{Verb: "list", Resource: "secrets", Namespace: "a"},
		{Verb: "list", Resource: "configmaps", Namespace: "a"},
		{Verb: "watch", Resource: "configmaps", Namespace: "a"},
		{Verb: "list", Resource: "secrets", Namespace: "a", Name: "db"}, // a fieldSelector on the name
		{Verb: "update", APIGroup: "apps", Resource: "deployments", Subresource: "scale", Namespace: "a", Name: "web"},
		{Verb: "get", APIGroup: "apps", Resource: "deployments", Namespace: "a", Name: "web"},
		{Verb: "get", APIGroup: "apps", Resource: "deployments", Subresource: "scale", Namespace: "a", Name: "web"},
		{Verb: "get", Resource: "pods", Namespace: "b", Name: "p"},
		{Verb: "list", Resource: "pods"},
		{Verb: "get", Resource: "nodes", Name: "n1"},
		{Verb: "get", NonResourceURL: "/healthz"},
		{Verb: "get", NonResourceURL: "/api"},
		{Verb: "post", NonResourceURL: "/api"},
	}
	want := map[string][]rbacv1.PolicyRule{
		"": {
			newRule("get").groups("").resources("nodes").names("n1").r,
			newRule("list").groups("").resources("pods").r,
			newRule("get", "post").urls("/api").r,
			newRule("get").urls("/healthz").r,
		},
		"a": {
			newRule("list", "watch").groups("").resources("configmaps").r,
			newRule("get").groups("").resources("secrets").names("db", "tls").r,
			newRule("list").groups("").resources("secrets").r,
			newRule("get").groups("apps").resources("deployments").names("web").r,
			newRule("get", "update").groups("apps").resources("deployments/scale").names("web").r,
		},
		"b": {newRule("get").groups("").resources("pods").names("p").r},
	}
	got := CoveringRules(requests)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CoveringRules (-want +got):\n%s", diff)
	}

	// Bound to a fresh user, the rules allow every request, and each of
	// their permissions was used by some request.
	fresh := testUser("fresh")
	subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "fresh"}
	var objs []any
	for ns, rules := range got {
		if ns == "" {
			r := testClusterRole("used")
			r.Rules = rules
			objs = append(objs, r, testClusterRoleBinding("used", "used", subject))
			continue
		}
		r := testRole(ns, "used")
		r.Rules = rules
		objs = append(objs, r, testRoleBinding(ns, "used", "Role", "used", subject))
	}
	az, err := New(newMemLister(t, objs...))
	if err != nil {
		t.Fatal(err)
	}
	allowed := func(r Request) bool {
		req := r.request()
		attrs := authorizer.AttributesRecord{User: fresh, Verb: req.verb, Namespace: req.namespace, APIGroup: req.apiGroup,
			Resource: req.resource, Subresource: req.subresource, Name: req.name, Path: req.path, ResourceRequest: req.isResource}
		d, _, err := az.Authorize(t.Context(), attrs)
		if err != nil {
			t.Fatal(err)
		}
		return d == authorizer.DecisionAllow
	}
	for _, r := range requests {
		if !allowed(r) {
			t.Errorf("the covering rules do not allow %s", r)
		}
	}
	for ns, rules := range got {
		for _, rule := range rules {
			for _, p := range ExpandRule(rule) {
				used := slices.ContainsFunc(requests, func(r Request) bool {
					req := r.request()
					return (ns == "" && r.Namespace == "" || r.Namespace == ns) && req.allowedBy(&p)
				})
				if !used {
					t.Errorf("namespace %q: permission %s of the covering rules was not used", ns, DescribePermission(p))
				}
			}
		}
	}
	for _, r := range []Request{
		{Verb: "delete", Resource: "secrets", Namespace: "a", Name: "db"},
		{Verb: "get", Resource: "secrets", Namespace: "a", Name: "other"},
		{Verb: "get", Resource: "secrets", Namespace: "b", Name: "db"},
		{Verb: "update", APIGroup: "apps", Resource: "deployments", Namespace: "a", Name: "web"},
		{Verb: "get", Resource: "nodes", Name: "n2"},
		{Verb: "post", NonResourceURL: "/healthz"},
	} {
		if allowed(r) {
			t.Errorf("the covering rules allow %s, which no request did", r)
		}
	}
}
