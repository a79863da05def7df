package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// labelPolicy patches a label onto every ConfigMap: the mutating stage.
const labelPolicy = `# METADATA
# custom:
#   enforcement: deny
package kubernetes.admission

patch contains {"op": "add", "path": "/metadata/labels", "value": {"checked": "true"}} if {
	input.request.kind.kind == "ConfigMap"
	not input.request.object.metadata.labels
}
`

// verifyFixtures writes policies and suites for each case of verify.
func verifyFixtures(t *testing.T) string {
	t.Helper()
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: hunter2-value\n"
	return writeFiles(t, t.TempDir(), map[string]string{
		"policies/nodefault.rego":      noDefaultPolicy,
		"policies/nodefault_test.rego": noDefaultTests,
		"policies/label.rego":          labelPolicy,
		"suites/secret.yaml":           secret,
		"suites/manifests.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
		"suites/pass.yaml": `cases:
  - name: a Secret in default is denied
    object: secret.yaml
    expect:
      outcome: denied
      deniedBy: [nodefault]
      messages: ['Secret db may not be in default']
  - name: a Secret in prod is allowed
    object: secret.yaml
    namespace: prod
    expect: {outcome: allowed}
  - name: a ConfigMap is labelled
    object: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: prod}, data: {mode: strict}}
    expect:
      outcome: allowed
      patched: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, labels: {checked: "true"}}, data: {mode: strict}}
  - name: a recorded delete
    review: {apiVersion: admission.k8s.io/v1, kind: AdmissionReview, request: {uid: "1", kind: {group: "", version: v1, kind: Secret}, resource: {group: "", version: v1, resource: secrets}, name: db, namespace: prod, operation: DELETE, userInfo: {username: alice}, oldObject: {metadata: {name: db, namespace: prod}}}}
    expect: {outcome: allowed}
`,
		"suites/fail.yaml": `cases:
  - name: a Secret in default is allowed
    object: secret.yaml
    expect: {outcome: allowed}
  - name: the patch is another
    object: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}}
    namespace: prod
    expect:
      outcome: allowed
      patched: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, labels: {checked: "false"}}}
`,
		"missing/suite.yaml":   "cases:\n  - name: x\n    object: nowhere.yaml\n    expect: {outcome: allowed}\n",
		"syntax/suite.yaml":    "cases:\n  - name: x\n    object: [\n",
		"unknown/suite.yaml":   "cases:\n  - name: x\n    objekt: a.yaml\n    expect: {outcome: allowed}\n",
		"dup/suite.yaml":       "cases:\n  - name: x\n    object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n    expect: {outcome: allowed}\n  - name: x\n    object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n    expect: {outcome: allowed}\n",
		"outcome/suite.yaml":   "cases:\n  - name: x\n    object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n    expect: {outcome: permitted}\n",
		"badobject/suite.yaml": "cases:\n  - name: x\n    object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, dta: {}}\n    expect: {outcome: allowed}\n",
		"update/suite.yaml":    "cases:\n  - name: x\n    operation: UPDATE\n    object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n    expect: {outcome: allowed}\n",
		"empty/notes.yaml":     "title: not a suite\n",
		"badpolicy/bad.rego":   "package kubernetes.admission\n\ndeny contains msg if {\n\tmsg := \"unterminated\n}\n",
	})
}

func TestPolicyVerify(t *testing.T) {
	dir := verifyFixtures(t)
	policies := filepath.Join(dir, "policies")
	at := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{name: "a passing suite", args: []string{at("suites/pass.yaml"), "-v"}, wantOut: []string{"pass.a Secret in default is denied: PASS", "pass.a recorded delete: PASS", "PASS: 4/4"}},
		{name: "a failing suite", args: []string{at("suites/fail.yaml")}, wantCode: 1, wantOut: []string{
			"fail.a Secret in default is allowed: FAIL",
			"outcome: denied, want allowed",
			"the patched object differs",
			`"false"`,
			"FAIL: 2/2",
		}, wantErr: "2 of 2 cases failed"},
		{name: "a directory of suites", args: []string{at("suites")}, wantCode: 1, wantOut: []string{"PASS: 4/6", "FAIL: 2/6"}},
		{name: "--run", args: []string{at("suites"), "--run", `^pass\.a Secret`}, wantOut: []string{"PASS: 2/2"}},
		{name: "no suites", args: []string{}, wantCode: 2, wantErr: "give the suites to verify"},
		{name: "a directory without suites", args: []string{at("empty")}, wantCode: 2, wantErr: "no suites in"},
		{name: "a missing file", args: []string{at("missing")}, wantCode: 2, wantErr: "missing/suite.yaml:3: open "},
		{name: "a YAML error", args: []string{at("syntax/suite.yaml")}, wantCode: 2, wantErr: "syntax/suite.yaml: yaml: line 3"},
		{name: "an unknown field", args: []string{at("unknown")}, wantCode: 2, wantErr: `unknown/suite.yaml:3: unknown field "objekt" in a case`},
		{name: "two cases of one name", args: []string{at("dup")}, wantCode: 2, wantErr: `dup/suite.yaml:5: case "x": a case of that name is at line 2`},
		{name: "an unknown outcome", args: []string{at("outcome")}, wantCode: 2, wantErr: `outcome/suite.yaml:4: expect.outcome "permitted"`},
		{name: "an unknown field of the object", args: []string{at("badobject")}, wantCode: 2, wantErr: `badobject/suite.yaml:3: the inline object: strict decoding error: unknown field "dta"`},
		{name: "an update without the old object", args: []string{at("update")}, wantCode: 2, wantErr: "update/suite.yaml:2: case \"x\": an UPDATE needs oldObject"},
		{name: "policies that do not parse", args: []string{at("suites/pass.yaml"), "--policies", at("badpolicy")}, wantCode: 2, wantErr: "badpolicy/bad.rego:4"},
		{name: "a bad format", args: []string{at("suites"), "-o", "xml"}, wantCode: 2, wantErr: `-o "xml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"verify", "--policies", policies}, tc.args...)
			stdout, stderr, code := policyRun(t, args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			for _, want := range tc.wantOut {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout does not contain %q:\n%s", want, stdout)
				}
			}
			if !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("stderr does not contain %q:\n%s", tc.wantErr, stderr)
			}
			// The Secret's value is in the suite; no output shows it.
			for _, out := range []string{stdout, stderr} {
				for _, form := range []string{"hunter2-value", "aHVudGVyMi12YWx1ZQ"} {
					if strings.Contains(out, form) {
						t.Errorf("output shows the Secret's value:\n%s", out)
					}
				}
			}
		})
	}
}

// verify writes its cases in each format of policy test.
func TestPolicyVerifyFormats(t *testing.T) {
	dir := verifyFixtures(t)
	stdout, _, code := policyRun(t, "verify", "--policies", filepath.Join(dir, "policies"), filepath.Join(dir, "suites"), "-o", "json")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Results []struct {
			Package string `json:"package"`
			Name    string `json:"name"`
			Fail    bool   `json:"fail"`
			Output  []byte `json:"output"`
		} `json:"results"`
		Passed bool `json:"passed"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	failed := 0
	for _, r := range doc.Results {
		if r.Fail {
			failed++
			if len(r.Output) == 0 {
				t.Errorf("%s.%s failed without saying why", r.Package, r.Name)
			}
		}
	}
	if len(doc.Results) != 6 || failed != 2 || doc.Passed {
		t.Errorf("%d results, %d failed, passed %v:\n%s", len(doc.Results), failed, doc.Passed, stdout)
	}
	for format, want := range map[string]string{"junit": `<testcase name="a Secret in default is allowed" classname="fail"`, "tap": "not ok 1 - fail.a Secret in default is allowed"} {
		stdout, _, _ := policyRun(t, "verify", "--policies", filepath.Join(dir, "policies"), filepath.Join(dir, "suites"), "-o", format)
		if !strings.Contains(stdout, want) {
			t.Errorf("-o %s does not contain %q:\n%s", format, want, stdout)
		}
	}
}

// The shipped library passes its own suites through the command, as the
// README shows it.
func TestPolicyVerifyShippedLibrary(t *testing.T) {
	root := filepath.Join("..", "..", "policies")
	if _, err := os.Stat(filepath.Join(root, "testdata")); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := policyRun(t, "verify", "--policies", root, filepath.Join(root, "testdata"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// policy eval reads the objects --objects names as the policies' data:
// with the namespace labelled for Secrets, the library lets a Secret in;
// without the namespace, what depends on its labels cannot be told, and
// is refused.
func TestPolicyEvalObjects(t *testing.T) {
	root := filepath.Join("..", "..", "policies")
	secret := filepath.Join(root, "testdata", "secret-db.yaml")
	cluster := filepath.Join(root, "testdata", "cluster.yaml")
	stdout, stderr, code := policyRun(t, "eval", "--object", secret, "-n", "team", "--objects", cluster, root)
	if code != 0 || !strings.Contains(stdout, "\nallowed\n") {
		t.Errorf("with the cluster's objects: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, _, code = policyRun(t, "eval", "--object", secret, "-n", "team", root)
	if code != 1 || !strings.Contains(stdout, `namespace "team" is not in the policy's replicated data`) {
		t.Errorf("without: exit %d\n%s", code, stdout)
	}
	_, stderr, code = policyRun(t, "eval", "--object", secret, "--objects", secret, root)
	if code != 2 || !strings.Contains(stderr, "secrets are never replicated") {
		t.Errorf("a Secret as data: exit %d, %s", code, stderr)
	}
}
