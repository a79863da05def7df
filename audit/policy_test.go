package audit

import (
	"slices"
	"strings"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestDefaultPolicyLevels(t *testing.T) {
	p, err := ParsePolicy([]byte(DefaultPolicy))
	if err != nil {
		t.Fatal(err)
	}
	alice := &user.DefaultInfo{Name: "alice"}
	res := func(verb, group, resource, sub string) authorizer.Attributes {
		return authorizer.AttributesRecord{User: alice, Verb: verb, APIGroup: group, APIVersion: "v1", Resource: resource, Subresource: sub, Namespace: "default", ResourceRequest: true}
	}
	path := func(p string) authorizer.Attributes {
		return authorizer.AttributesRecord{User: alice, Verb: "get", Path: p}
	}
	tests := []struct {
		name  string
		attrs authorizer.Attributes
		want  auditv1.Level
	}{
		{"create secret", res("create", "", "secrets", ""), auditv1.LevelMetadata},
		{"get secret", res("get", "", "secrets", ""), auditv1.LevelMetadata},
		{"create configmap", res("create", "", "configmaps", ""), auditv1.LevelMetadata},
		{"token request", res("create", "", "serviceaccounts", "token"), auditv1.LevelMetadata},
		{"create role", res("create", "rbac.authorization.k8s.io", "roles", ""), auditv1.LevelRequestResponse},
		{"delete namespace", res("delete", "", "namespaces", ""), auditv1.LevelRequestResponse},
		{"list namespaces", res("list", "", "namespaces", ""), auditv1.LevelRequest},
		{"discovery", path("/api"), auditv1.LevelRequest},
		{"livez", path("/livez"), auditv1.LevelNone},
		{"readyz check", path("/readyz/etcd"), auditv1.LevelNone},
	}
	for _, tt := range tests {
		if got := p.Level(tt.attrs); got != tt.want {
			t.Errorf("%s: level %s, want %s", tt.name, got, tt.want)
		}
	}
}

// A policy that asks for everything still never records Secret or token
// bodies.
func TestSecretsCappedAtMetadata(t *testing.T) {
	p, err := ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []authorizer.AttributesRecord{
		{Verb: "create", Resource: "secrets", ResourceRequest: true},
		{Verb: "list", Resource: "secrets", ResourceRequest: true},
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", ResourceRequest: true},
		{Verb: "create", APIGroup: "authentication.k8s.io", Resource: "tokenreviews", ResourceRequest: true},
	} {
		a.User = &user.DefaultInfo{Name: "alice"}
		if got := p.Level(a); got != auditv1.LevelMetadata {
			t.Errorf("%s %s/%s: level %s, want Metadata", a.Verb, a.Resource, a.Subresource, got)
		}
	}
	cm := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice"}, Verb: "create", Resource: "configmaps", ResourceRequest: true}
	if got := p.Level(cm); got != auditv1.LevelRequestResponse {
		t.Errorf("configmaps under an everything policy: %s, want RequestResponse", got)
	}
}

func TestLoadPolicyRejectsBadFiles(t *testing.T) {
	if _, err := LoadPolicy(""); err == nil {
		t.Error("empty path accepted")
	}
	if _, err := LoadPolicy(t.TempDir() + "/missing.yaml"); err == nil {
		t.Error("missing file accepted")
	}
	if _, err := ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n")); err == nil {
		t.Error("invalid level accepted")
	}
}

// omitStages, the policy's and the matching rule's together, as
// kube-apiserver reads them; the default policy omits RequestReceived
// alone.
func TestDecideStages(t *testing.T) {
	all := []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseStarted, auditv1.StageResponseComplete, auditv1.StagePanic}
	alice := &user.DefaultInfo{Name: "alice"}
	get := authorizer.AttributesRecord{User: alice, Verb: "get", Resource: "pods", ResourceRequest: true}
	list := authorizer.AttributesRecord{User: alice, Verb: "list", Resource: "pods", ResourceRequest: true}
	livez := authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/livez"}
	for _, tt := range []struct {
		name, policy string
		attrs        authorizer.Attributes
		want         []auditv1.Stage
	}{
		{"the default policy", DefaultPolicy, get, all[1:]},
		{"no omitStages", "rules:\n- level: Metadata\n", get, all},
		{"the policy's", "omitStages: [ResponseStarted]\nrules:\n- level: Metadata\n", get, []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseComplete, auditv1.StagePanic}},
		{"the rule's and the policy's", "omitStages: [Panic]\nrules:\n- level: Metadata\n  verbs: [get]\n  omitStages: [RequestReceived]\n- level: Metadata\n", get, all[1:3]},
		{"another rule's", "omitStages: [Panic]\nrules:\n- level: Metadata\n  verbs: [get]\n  omitStages: [RequestReceived]\n- level: Metadata\n", list, all[:3]},
		{"level None", DefaultPolicy, livez, nil},
	} {
		p, err := ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\n" + strings.TrimPrefix(tt.policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\n")))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		d := p.Decide(tt.attrs)
		var got []auditv1.Stage
		for _, s := range all {
			if d.Logs(s) {
				got = append(got, s)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: stages %v, want %v", tt.name, got, tt.want)
		}
	}
}
