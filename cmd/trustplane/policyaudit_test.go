package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
)

// nowhereConfig is a kubeconfig that loads, of a server nothing listens
// for: what is refused with it is refused before the cluster is read.
const nowhereConfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
users:
- name: u
  user:
    token: t
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`

// Bad flags, policies, kubeconfigs and names exit 2, with what is wrong;
// the policies and the names are checked before the cluster is read.
// (e2e's TestPolicyAudit runs the audit against a real cluster.)
func TestPolicyAuditBadInput(t *testing.T) {
	fixtures := policyFixtures(t)
	nowhere := writeFiles(t, t.TempDir(), map[string]string{"nowhere.conf": nowhereConfig})
	kubeconfig := filepath.Join(nowhere, "nowhere.conf")
	dir := t.TempDir()
	pass := filepath.Join(fixtures, "pass")
	for _, tc := range []struct {
		name   string
		args   []string
		stderr []string
	}{
		{"bad output", []string{"-o", "yaml", pass}, []string{`-o "yaml": want text or json`}},
		{"zero timeout", []string{"--timeout", "0s", pass}, []string{"--timeout 0s must be positive"}},
		{"group without user", []string{"--as-group", "dev", pass}, []string{"--as-group requires --as"}},
		{"zero chunk size", []string{"--chunk-size", "0", pass}, []string{"--chunk-size 0 must be positive"}},
		{"empty kind", []string{"--kinds", "secrets,", pass}, []string{"an empty resource"}},
		{"every problem at once", []string{"-o", "yaml", "--as-group", "dev", pass}, []string{`-o "yaml"`, "--as-group requires --as"}},
		{"unknown flag", []string{"--nope", pass}, []string{"unknown flag: --nope"}},
		{"kubeconfig that does not exist", []string{"--kubeconfig", filepath.Join(dir, "missing.conf"), pass}, []string{"load kubeconfig", "missing.conf"}},
		{"data directory without admin.conf", []string{"--dir", dir, pass}, []string{"load kubeconfig", "admin.conf"}},
		{"policy that does not parse", []string{"--kubeconfig", kubeconfig, filepath.Join(fixtures, "parse")}, []string{"bad.rego:4"}},
		{"policy whose test fails", []string{"--kubeconfig", kubeconfig, filepath.Join(fixtures, "fail")}, []string{"test_wrong"}},
		{"path that does not exist", []string{"--kubeconfig", kubeconfig, filepath.Join(dir, "nothing")}, []string{"nothing"}},
		{"unknown kind", []string{"--kubeconfig", kubeconfig, "--kinds", "secrets,widgets,apps/pods", pass}, []string{"widgets: not a resource", "apps/pods: not a resource", "apps/deployments"}},
		{"review kind", []string{"--kubeconfig", kubeconfig, "--kinds", "authorization.k8s.io/subjectaccessreviews", pass}, []string{"subjectaccessreviews: not a resource trustplane stores"}},
		{"unknown policy", []string{"--kubeconfig", kubeconfig, "--policy", "nodefault", "--policy", "other", pass}, []string{`policy "other" is not among the policies`}},
		{"cluster that cannot be read", []string{"--kubeconfig", kubeconfig, pass}, []string{"127.0.0.1:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", "")
			stdout, stderr, code := policyRun(t, append([]string{"audit", "--dir", dir}, tc.args...)...)
			if code != exitBadInput || stdout != "" {
				t.Errorf("exit %d, stdout %q; want %d and nothing on stdout\nstderr: %s", code, stdout, exitBadInput, stderr)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q lacks %q", stderr, want)
				}
			}
			if tc.name != "cluster that cannot be read" && strings.Contains(stderr, "127.0.0.1:1") {
				t.Errorf("stderr %q: the cluster was read before the input was checked", stderr)
			}
		})
	}
}

// The policies' data is what the replicate.yaml beside them names, else
// the data directory's.
func TestPolicyAuditReplication(t *testing.T) {
	root := writeFiles(t, t.TempDir(), map[string]string{
		"own/replicate.yaml":           "resources: [namespaces, apps/deployments]\n",
		"other/replicate.yaml":         "resources: [namespaces, serviceaccounts]\n",
		"bare/p.rego":                  noDefaultPolicy,
		"data/policies/replicate.yaml": "resources: [serviceaccounts]\n",
		"secrets/replicate.yaml":       "resources: [secrets]\n",
	})
	data := filepath.Join(root, "data")
	ns, sa, deploy := schema.GroupResource{Resource: "namespaces"}, schema.GroupResource{Resource: "serviceaccounts"}, schema.GroupResource{Group: "apps", Resource: "deployments"}
	for _, tc := range []struct {
		name  string
		paths []string
		dir   string
		want  []schema.GroupResource
		file  string
	}{
		{"beside the policies", []string{filepath.Join(root, "own")}, data, []schema.GroupResource{ns, deploy}, "own"},
		{"two directories", []string{filepath.Join(root, "own"), filepath.Join(root, "other")}, data, []schema.GroupResource{ns, deploy, sa}, "other"},
		{"none beside: the data directory's", []string{filepath.Join(root, "bare"), filepath.Join(root, "bare", "p.rego")}, data, []schema.GroupResource{sa}, "data"},
		{"none at all", []string{filepath.Join(root, "bare")}, filepath.Join(root, "nothing"), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, file, err := replication(tc.paths, tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) || !strings.Contains(file, tc.file) || (tc.file == "") != (file == "") {
				t.Errorf("replication = %v from %q; want %v from a file in %q", got, file, tc.want, tc.file)
			}
		})
	}
	if _, _, err := replication([]string{filepath.Join(root, "secrets")}, data); err == nil || !strings.Contains(err.Error(), "never replicated") {
		t.Errorf("a replicate.yaml naming secrets: %v, want a refusal", err)
	}
}

// Without --as the requests are made by the audit's own user, in
// system:authenticated only; with it, as impersonation makes them.
func TestPolicyAuditUser(t *testing.T) {
	for _, tc := range []struct {
		f          policyAuditFlags
		name       string
		wantGroups []string
	}{
		{policyAuditFlags{}, auditUser, []string{user.AllAuthenticated}},
		{policyAuditFlags{as: "alice", asGroups: []string{"dev"}}, "alice", []string{"dev", user.AllAuthenticated}},
		{policyAuditFlags{as: user.Anonymous}, user.Anonymous, nil},
	} {
		u := tc.f.user()
		if u.GetName() != tc.name || !slices.Equal(u.GetGroups(), tc.wantGroups) {
			t.Errorf("user() = %s in %q, want %s in %q", u.GetName(), u.GetGroups(), tc.name, tc.wantGroups)
		}
	}
}
