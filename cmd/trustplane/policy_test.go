package main

import (
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// policyRun runs `trustplane policy args...` in-process, as main would:
// stderr holds the error main prints, code the exit status.
func policyRun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runRoot(t, append([]string{"policy"}, args...)...)
}

// writeFiles writes files (name → content) below dir and returns dir.
func writeFiles(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const (
	// noDefaultPolicy denies Secrets in namespace default; one of its
	// lines (the ConfigMap rule) no test reaches.
	noDefaultPolicy = `# METADATA
# custom:
#   enforcement: deny
package kubernetes.admission

deny contains msg if {
	input.request.kind.kind == "Secret"
	input.request.namespace == "default"
	msg := sprintf("Secret %s may not be in default", [input.request.name])
}

deny contains "no ConfigMaps in default" if {
	input.request.kind.kind == "ConfigMap"
	input.request.namespace == "default"
}
`
	noDefaultTests = `package kubernetes.admission_test

import data.kubernetes.admission

# The tests see every policy file of the package at once, as on the
# server: they look for this policy's message only.
test_default_denied if {
	"Secret x may not be in default" in admission.deny with input as {"request": {"kind": {"kind": "Secret"}, "namespace": "default", "name": "x"}}
}

test_prod_allowed if {
	not "Secret x may not be in default" in admission.deny with input as {"request": {"kind": {"kind": "Secret"}, "namespace": "prod", "name": "x"}}
}

todo_test_later if {
	false
}
`
)

// policyFixtures writes a directory of policies and tests for each case
// of policy test.
func policyFixtures(t *testing.T) string {
	t.Helper()
	return writeFiles(t, t.TempDir(), map[string]string{
		"pass/nodefault.rego":      noDefaultPolicy,
		"pass/nodefault_test.rego": noDefaultTests,
		"fail/nodefault.rego":      noDefaultPolicy,
		"fail/nodefault_test.rego": noDefaultTests + `
test_wrong if {
	count(admission.deny) == 1 with input as {"request": {"kind": {"kind": "Secret"}, "namespace": "prod", "name": "x"}}
}
`,
		"error/conflict.rego": `package lib

x := 1 if input.a
x := 2 if input.a
`,
		"error/conflict_test.rego": `package lib_test

import data.lib

test_conflict if {
	lib.x == 1 with input as {"a": true}
}
`,
		"parse/ok.rego": noDefaultPolicy,
		"parse/bad.rego": `package kubernetes.admission

deny contains msg if {
	msg := "unterminated
}
`,
		"unsafe/unsafe.rego": `package kubernetes.admission

deny contains msg if {
	input.request.name == name
	msg := "x"
}
`,
		"notrego/data.json":                 `{}`,
		"data/policies/nodefault.rego":      noDefaultPolicy,
		"data/policies/nodefault_test.rego": noDefaultTests,
	})
}

func TestPolicyTest(t *testing.T) {
	dir := policyFixtures(t)
	at := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string // substrings of stdout
		wantErr    []string // substrings of stderr
		wantNotOut []string
	}{
		{name: "passing tests", args: []string{at("pass")}, wantCode: 0, wantOut: []string{"PASS: 2/3", "SKIPPED: 1/3"}},
		{name: "one file", args: []string{at("pass/nodefault_test.rego"), at("pass/nodefault.rego")}, wantCode: 0, wantOut: []string{"PASS: 2/3"}},
		{name: "verbose lists every test", args: []string{at("pass"), "-v"}, wantCode: 0, wantOut: []string{"test_default_denied: PASS", "test_prod_allowed: PASS"}},
		{name: "a failing test", args: []string{at("fail")}, wantCode: 1, wantOut: []string{"test_wrong: FAIL", "FAIL: 1/4"}, wantErr: []string{"1 of 4 tests failed"}},
		{name: "an erroring test", args: []string{at("error")}, wantCode: 1, wantOut: []string{"test_conflict: ERROR", "eval_conflict_error"}, wantErr: []string{"1 of 1 tests failed"}},
		{name: "--run leaves the failing test out", args: []string{at("fail"), "--run", "prod_allowed"}, wantCode: 0, wantOut: []string{"PASS: 1/1"}},
		{name: "--run keeps the failing test", args: []string{at("fail"), "--run", "wrong"}, wantCode: 1, wantOut: []string{"FAIL: 1/1"}},
		{name: "--run matches nothing", args: []string{at("fail"), "--run", "^nothing$"}, wantCode: 0, wantOut: []string{"no tests ran"}},
		{name: "coverage below the threshold", args: []string{at("pass"), "--threshold", "95"}, wantCode: 1, wantOut: []string{"COVERAGE: ", "nodefault.rego: 57.14%, not covered: lines 12-14"}, wantErr: []string{"is below the threshold 95%"}},
		{name: "coverage above the threshold", args: []string{at("pass"), "--coverage", "--threshold", "50"}, wantCode: 0, wantOut: []string{"COVERAGE: ", "(threshold 50%)"}},
		{name: "coverage without threshold", args: []string{at("pass"), "--coverage"}, wantCode: 0, wantOut: []string{"COVERAGE: "}},
		{name: "default data directory", args: []string{"--dir", at("data")}, wantCode: 0, wantOut: []string{"PASS: 2/3"}},
		{name: "a file that does not parse", args: []string{at("parse")}, wantCode: 2, wantErr: []string{filepath.Join(dir, "parse", "bad.rego") + ":4", "rego_parse_error"}},
		{name: "a file that does not compile", args: []string{at("unsafe")}, wantCode: 2, wantErr: []string{filepath.Join(dir, "unsafe", "unsafe.rego") + ":4", "rego_unsafe_var_error"}},
		{name: "a path that does not exist", args: []string{at("missing")}, wantCode: 2, wantErr: []string{"missing"}},
		{name: "a data directory without policies", args: []string{"--dir", at("nothing")}, wantCode: 2, wantErr: []string{filepath.Join("nothing", "policies")}},
		{name: "a directory without .rego files", args: []string{at("notrego")}, wantCode: 2, wantErr: []string{"no .rego files"}},
		{name: "a file that is not .rego", args: []string{at("notrego/data.json")}, wantCode: 2, wantErr: []string{"is not a .rego file"}},
		{name: "threshold above 100", args: []string{at("pass"), "--threshold", "101"}, wantCode: 2, wantErr: []string{"--threshold 101"}},
		{name: "bad --run", args: []string{at("pass"), "--run", "("}, wantCode: 2, wantErr: []string{"--run"}},
		{name: "bad -o", args: []string{at("pass"), "-o", "xml"}, wantCode: 2, wantErr: []string{`-o "xml"`}},
		{name: "unknown flag", args: []string{at("pass"), "--nope"}, wantCode: 2, wantErr: []string{"--nope"}},
		{name: "bad flag value", args: []string{at("pass"), "--threshold", "many"}, wantCode: 2, wantErr: []string{"many"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := policyRun(t, append([]string{"test"}, tc.args...)...)
			if code != tc.wantCode {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			for _, want := range tc.wantOut {
				if !strings.Contains(out, want) {
					t.Errorf("stdout does not contain %q:\n%s", want, out)
				}
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr does not contain %q:\n%s", want, errOut)
				}
			}
		})
	}
}

// policyTestJSON is what -o json writes.
type policyTestJSON struct {
	Results []struct {
		Package string          `json:"package"`
		Name    string          `json:"name"`
		Fail    bool            `json:"fail"`
		Skip    bool            `json:"skip"`
		Error   json.RawMessage `json:"error"`
	} `json:"results"`
	Coverage *struct {
		Coverage float64 `json:"coverage"`
	} `json:"coverage"`
	Threshold *float64 `json:"threshold"`
	Passed    bool     `json:"passed"`
}

type junitReport struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name    string    `xml:"name,attr"`
			File    string    `xml:"file,attr"`
			Line    int       `xml:"line,attr"`
			Failure *struct{} `xml:"failure"`
			Error   *struct{} `xml:"error"`
			Skipped *struct{} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// Each output format is well-formed and says the same: which tests
// passed, failed, were skipped, and whether coverage reached the
// threshold.
func TestPolicyTestFormats(t *testing.T) {
	dir := policyFixtures(t)
	// What each run must report, by test name: pass, fail, skip, error;
	// "coverage" is the coverage check.
	for _, tc := range []struct {
		name     string
		args     []string
		want     map[string]string
		wantCode int
	}{
		{name: "passing", args: []string{filepath.Join(dir, "pass")}, want: map[string]string{"test_default_denied": "pass", "test_prod_allowed": "pass", "todo_test_later": "skip"}},
		{name: "failing", args: []string{filepath.Join(dir, "fail")}, want: map[string]string{"test_default_denied": "pass", "test_prod_allowed": "pass", "todo_test_later": "skip", "test_wrong": "fail"}, wantCode: 1},
		{name: "erroring", args: []string{filepath.Join(dir, "error")}, want: map[string]string{"test_conflict": "error"}, wantCode: 1},
		{name: "coverage met", args: []string{filepath.Join(dir, "pass"), "--threshold", "10"}, want: map[string]string{"test_default_denied": "pass", "test_prod_allowed": "pass", "todo_test_later": "skip", "coverage": "pass"}},
		{name: "coverage not met", args: []string{filepath.Join(dir, "pass"), "--threshold", "99.5"}, want: map[string]string{"test_default_denied": "pass", "test_prod_allowed": "pass", "todo_test_later": "skip", "coverage": "fail"}, wantCode: 1},
	} {
		t.Run(tc.name+"/json", func(t *testing.T) {
			out, errOut, code := policyRun(t, append([]string{"test", "-o", "json"}, tc.args...)...)
			if code != tc.wantCode {
				t.Errorf("exit status %d, want %d; stderr: %s", code, tc.wantCode, errOut)
			}
			var got policyTestJSON
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("-o json is not JSON: %v\n%s", err, out)
			}
			outcomes := map[string]string{}
			for _, r := range got.Results {
				outcomes[r.Name] = outcome(r.Fail, r.Skip, len(r.Error) > 0)
			}
			if got.Coverage != nil && got.Threshold != nil {
				outcomes["coverage"] = outcome(got.Coverage.Coverage < *got.Threshold, false, false)
			}
			if diff := cmp.Diff(tc.want, outcomes); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if got.Passed != (tc.wantCode == 0) {
				t.Errorf("passed: %v, want %v", got.Passed, tc.wantCode == 0)
			}
		})
		t.Run(tc.name+"/junit", func(t *testing.T) {
			out, errOut, code := policyRun(t, append([]string{"test", "-o", "junit"}, tc.args...)...)
			if code != tc.wantCode {
				t.Errorf("exit status %d, want %d; stderr: %s", code, tc.wantCode, errOut)
			}
			var got junitReport
			if err := xml.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("-o junit is not XML: %v\n%s", err, out)
			}
			outcomes := map[string]string{}
			counts := map[string]int{}
			for _, s := range got.Suites {
				for _, c := range s.Cases {
					o := outcome(c.Failure != nil, c.Skipped != nil, c.Error != nil)
					counts[o]++
					if s.Name == "coverage" {
						outcomes["coverage"] = o
						continue
					}
					outcomes[c.Name] = o
					if c.File == "" || c.Line == 0 {
						t.Errorf("test case %s has no file:line", c.Name)
					}
				}
			}
			if diff := cmp.Diff(tc.want, outcomes); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if got.Tests != len(tc.want) || got.Failures != counts["fail"] || got.Errors != counts["error"] || got.Skipped != counts["skip"] {
				t.Errorf("testsuites counts tests=%d failures=%d errors=%d skipped=%d, want %d, %d, %d, %d", got.Tests, got.Failures, got.Errors, got.Skipped, len(tc.want), counts["fail"], counts["error"], counts["skip"])
			}
		})
		t.Run(tc.name+"/tap", func(t *testing.T) {
			out, errOut, code := policyRun(t, append([]string{"test", "-o", "tap"}, tc.args...)...)
			if code != tc.wantCode {
				t.Errorf("exit status %d, want %d; stderr: %s", code, tc.wantCode, errOut)
			}
			if diff := cmp.Diff(tc.want, tapOutcomes(t, out)); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s\n%s", diff, out)
			}
		})
		t.Run(tc.name+"/pretty", func(t *testing.T) {
			out, errOut, code := policyRun(t, append([]string{"test", "-o", "pretty", "-v"}, tc.args...)...)
			if code != tc.wantCode {
				t.Errorf("exit status %d, want %d; stderr: %s", code, tc.wantCode, errOut)
			}
			for name, o := range tc.want {
				want := map[string]string{"pass": name + ": PASS", "fail": name + ": FAIL", "skip": name + ": SKIPPED", "error": name + ": ERROR"}[o]
				if name == "coverage" {
					want = "COVERAGE: "
				}
				if !strings.Contains(out, want) {
					t.Errorf("pretty output does not contain %q:\n%s", want, out)
				}
			}
		})
	}
}

func outcome(fail, skip, errored bool) string {
	switch {
	case errored:
		return "error"
	case skip:
		return "skip"
	case fail:
		return "fail"
	default:
		return "pass"
	}
}

var tapLine = regexp.MustCompile(`^(ok|not ok) (\d+) - (\S+)( # SKIP)?`)

// tapOutcomes checks that out is TAP 14 with a plan that counts its test
// points, numbered in order, and returns each point's outcome.
func tapOutcomes(t *testing.T, out string) map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 2 || lines[0] != "TAP version 14" || !strings.HasPrefix(lines[1], "1..") {
		t.Fatalf("not TAP 14 with a plan:\n%s", out)
	}
	plan, err := strconv.Atoi(strings.TrimPrefix(lines[1], "1.."))
	if err != nil {
		t.Fatalf("plan %q: %v", lines[1], err)
	}
	got := map[string]string{}
	n := 0
	inYAML := false
	for _, line := range lines[2:] {
		switch {
		case line == "  ---":
			inYAML = true
		case line == "  ...":
			inYAML = false
		case inYAML:
		default:
			m := tapLine.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("not a TAP line: %q", line)
			}
			n++
			if m[2] != strconv.Itoa(n) {
				t.Errorf("test point %s is number %d", m[2], n)
			}
			name := m[3][strings.LastIndex(m[3], ".")+1:]
			if strings.HasPrefix(m[3], "coverage") {
				name = "coverage"
			}
			switch {
			case m[4] != "":
				got[name] = "skip"
			case m[1] == "ok":
				got[name] = "pass"
			case name == "test_conflict":
				got[name] = "error"
			default:
				got[name] = "fail"
			}
		}
	}
	if n != plan {
		t.Errorf("plan 1..%d, %d test points", plan, n)
	}
	return got
}

// evalPolicies are the policies of the policy eval tests, with a test
// that LoadDirs runs.
var evalPolicies = map[string]string{
	"nodefault.rego":      noDefaultPolicy,
	"nodefault_test.rego": noDefaultTests,
	// team warns of a Secret without a team label.
	"team.rego": `package kubernetes.admission

warn contains "no team label" if {
	input.request.kind.kind == "Secret"
	input.request.operation != "DELETE"
	not input.request.object.metadata.labels.team
}
`,
	// tier refuses an update that changes the tier label.
	"tier.rego": `package kubernetes.admission

deny contains msg if {
	input.request.operation == "UPDATE"
	old := input.request.oldObject.metadata.labels.tier
	new := object.get(input.request.object.metadata, ["labels", "tier"], "")
	old != new
	msg := sprintf("tier may not change from %s to %s", [old, new])
}
`,
	// owner records who created a Secret, and refuses one without the
	// record: the patch comes first, so a create passes.
	"owner.rego": `package kubernetes.admission

patch contains {"op": "add", "path": "/metadata/annotations", "value": {"owner": input.request.userInfo.username}} if {
	input.request.operation == "CREATE"
	not input.request.object.metadata.annotations
}

deny contains "no owner" if {
	input.request.operation == "CREATE"
	not input.request.object.metadata.annotations.owner
}
`,
	// audit is a dry run: its denials are only recorded. (Its METADATA
	// is the rule's: OPA allows one package annotation a package, across
	// the files compiled with the tests, and nodefault has it.)
	"audit.rego": `# METADATA
# custom:
#   enforcement: dryrun
package kubernetes.admission

deny contains "every Secret is recorded" if input.request.kind.kind == "Secret"
`,
	// soft warns instead of refusing.
	"soft.rego": `# METADATA
# custom:
#   enforcement: warn
package kubernetes.admission

deny contains "deletes are discouraged" if input.request.operation == "DELETE"
`,
}

func secretYAML(namespace string, labels map[string]string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n")
	if namespace != "" {
		b.WriteString("  namespace: " + namespace + "\n")
	}
	if len(labels) > 0 {
		b.WriteString("  labels:\n")
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			b.WriteString("    " + k + ": " + labels[k] + "\n")
		}
	}
	b.WriteString("data:\n  password: aHVudGVyMg==\n")
	return b.String()
}

// policyEvalJSON is what policy eval -o json writes.
type policyEvalJSON struct {
	Outcome   string   `json:"outcome"`
	DeniedBy  []string `json:"deniedBy"`
	Message   string   `json:"message"`
	Warnings  []string `json:"warnings"`
	Error     string   `json:"error"`
	Decisions []struct {
		Policy      string   `json:"policy"`
		Enforcement string   `json:"enforcement"`
		Deny        []string `json:"deny"`
		Warn        []string `json:"warn"`
		Patch       []any    `json:"patch"`
	} `json:"decisions"`
	Trace string `json:"trace"`
}

func TestPolicyEval(t *testing.T) {
	dir := t.TempDir()
	policies := writeFiles(t, filepath.Join(dir, "policies"), evalPolicies)
	failing := writeFiles(t, filepath.Join(dir, "failing"), map[string]string{
		"nodefault.rego":      noDefaultPolicy,
		"nodefault_test.rego": noDefaultTests + "\ntest_wrong if false\n",
	})
	conflict := writeFiles(t, filepath.Join(dir, "conflict"), map[string]string{
		"conflict.rego": `package kubernetes.admission

x := 1 if input.request
x := 2 if input.request

deny contains "never" if x == 3
`,
	})
	objects := writeFiles(t, filepath.Join(dir, "objects"), map[string]string{
		"default.yaml":   secretYAML("", map[string]string{"team": "a"}),
		"prod.yaml":      secretYAML("prod", map[string]string{"team": "a", "tier": "gold"}),
		"nolabel.yaml":   secretYAML("prod", nil),
		"silver.yaml":    secretYAML("prod", map[string]string{"team": "a", "tier": "silver"}),
		"prod.json":      `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "prod", "labels": {"team": "a"}}}`,
		"two.yaml":       secretYAML("prod", nil) + "---\n" + secretYAML("prod", nil),
		"unknown.yaml":   "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nsecretive: true\n",
		"widget.yaml":    "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
		"badyaml.yaml":   "apiVersion: v1\nkind: Secret\nmetadata:\n  name: [db\n",
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\n",
		"namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod\n",
		"noname.yaml":    "apiVersion: v1\nkind: Secret\nmetadata:\n  namespace: prod\n",
	})
	obj := func(name string) string { return filepath.Join(objects, name) }
	type decision struct{ deny, warn []string }
	for _, tc := range []struct {
		name          string
		args          []string
		wantCode      int
		wantOutcome   string
		wantDeniedBy  []string
		wantWarnings  []string
		wantDecisions map[string]decision // policies with a message
		wantPatchBy   string              // the username owner's patch records
		wantEvalError string              // a substring of the evaluation error
		wantErr       string
	}{
		{
			name: "allowed", args: []string{"--object", obj("prod.yaml")},
			wantOutcome: "allowed", wantPatchBy: "admin",
			wantDecisions: map[string]decision{"audit": {deny: []string{"every Secret is recorded"}}},
		},
		{
			name: "JSON object", args: []string{"--object", obj("prod.json")},
			wantOutcome: "allowed", wantPatchBy: "admin",
			wantDecisions: map[string]decision{"audit": {deny: []string{"every Secret is recorded"}}},
		},
		{
			name: "denied in the default namespace", args: []string{"--object", obj("default.yaml")},
			wantCode: 1, wantOutcome: "denied", wantDeniedBy: []string{"nodefault"}, wantPatchBy: "admin",
			wantDecisions: map[string]decision{"nodefault": {deny: []string{"Secret db may not be in default"}}, "audit": {deny: []string{"every Secret is recorded"}}},
		},
		{
			name: "a --namespace that agrees", args: []string{"--object", obj("nolabel.yaml"), "-n", "prod", "--as", "alice", "--as-group", "dev"},
			wantOutcome: "warned", wantWarnings: []string{"policy team: no team label"}, wantPatchBy: "alice",
			wantDecisions: map[string]decision{"team": {warn: []string{"no team label"}}, "audit": {deny: []string{"every Secret is recorded"}}},
		},
		{
			name: "warned", args: []string{"--object", obj("nolabel.yaml"), "--as", "alice"},
			wantOutcome: "warned", wantWarnings: []string{"policy team: no team label"}, wantPatchBy: "alice",
			wantDecisions: map[string]decision{"team": {warn: []string{"no team label"}}, "audit": {deny: []string{"every Secret is recorded"}}},
		},
		{
			name: "update that keeps the tier", args: []string{"--operation", "UPDATE", "--object", obj("prod.yaml"), "--old", obj("prod.yaml")},
			wantOutcome:   "allowed",
			wantDecisions: map[string]decision{"audit": {deny: []string{"every Secret is recorded"}}},
		},
		{
			name: "update that changes the tier", args: []string{"--operation", "UPDATE", "--object", obj("silver.yaml"), "--old", obj("prod.yaml")},
			wantCode: 1, wantOutcome: "denied", wantDeniedBy: []string{"tier"},
			wantDecisions: map[string]decision{"tier": {deny: []string{"tier may not change from gold to silver"}}, "audit": {deny: []string{"every Secret is recorded"}}},
		},
		{
			name: "delete, warned by a warn policy", args: []string{"--operation", "DELETE", "--object", obj("prod.yaml")},
			wantOutcome: "warned", wantWarnings: []string{"policy soft would deny: deletes are discouraged"},
			wantDecisions: map[string]decision{"soft": {deny: []string{"deletes are discouraged"}}, "audit": {deny: []string{"every Secret is recorded"}}},
		},
		{
			name: "a ConfigMap in default", args: []string{"--object", obj("configmap.yaml")},
			wantCode: 1, wantOutcome: "denied", wantDeniedBy: []string{"nodefault"}, wantPatchBy: "admin",
			wantDecisions: map[string]decision{"nodefault": {deny: []string{"no ConfigMaps in default"}}},
		},
		{
			name: "a cluster-scoped object", args: []string{"--object", obj("namespace.yaml")},
			wantOutcome: "allowed", wantPatchBy: "admin",
		},
		{
			name: "a policy that cannot be evaluated denies", args: []string{"--object", obj("prod.yaml"), conflict},
			wantCode: 1, wantOutcome: "denied", wantEvalError: "conflict.rego:4: eval_conflict_error",
		},
		{name: "UPDATE without --old", args: []string{"--operation", "UPDATE", "--object", obj("prod.yaml")}, wantCode: 2, wantErr: "requires --old"},
		{name: "--old without UPDATE", args: []string{"--object", obj("prod.yaml"), "--old", obj("prod.yaml")}, wantCode: 2, wantErr: "--old goes with --operation UPDATE"},
		{name: "an update of another kind", args: []string{"--operation", "UPDATE", "--object", obj("prod.yaml"), "--old", obj("configmap.yaml")}, wantCode: 2, wantErr: "is a /v1, Kind=ConfigMap"},
		{name: "no --object", args: []string{}, wantCode: 2, wantErr: "--object is required"},
		{name: "bad operation", args: []string{"--object", obj("prod.yaml"), "--operation", "PATCH"}, wantCode: 2, wantErr: `--operation "PATCH"`},
		{name: "--as-group without --as", args: []string{"--object", obj("prod.yaml"), "--as-group", "dev"}, wantCode: 2, wantErr: "--as-group requires --as"},
		{name: "a missing object file", args: []string{"--object", obj("missing.yaml")}, wantCode: 2, wantErr: "missing.yaml"},
		{name: "two objects", args: []string{"--object", obj("two.yaml")}, wantCode: 2, wantErr: "more than one object"},
		{name: "an unknown field", args: []string{"--object", obj("unknown.yaml")}, wantCode: 2, wantErr: `unknown field "secretive"`},
		{name: "YAML that does not parse", args: []string{"--object", obj("badyaml.yaml")}, wantCode: 2, wantErr: "badyaml.yaml: yaml: line 4"},
		{name: "a kind that is not served", args: []string{"--object", obj("widget.yaml")}, wantCode: 2, wantErr: "widget.yaml"},
		{name: "an object without a name", args: []string{"--object", obj("noname.yaml")}, wantCode: 2, wantErr: "has no name"},
		{name: "a namespace that disagrees", args: []string{"--object", obj("prod.yaml"), "-n", "dev"}, wantCode: 2, wantErr: `namespace "dev": the object is in namespace "prod"`},
		{name: "a namespace for a cluster-scoped kind", args: []string{"--object", obj("namespace.yaml"), "-n", "dev"}, wantCode: 2, wantErr: "is cluster-scoped"},
		{name: "policies whose tests fail", args: []string{"--object", obj("prod.yaml"), failing}, wantCode: 2, wantErr: "test_wrong failed"},
		{name: "policies that do not exist", args: []string{"--object", obj("prod.yaml"), filepath.Join(dir, "missing")}, wantCode: 2, wantErr: "missing"},
		{name: "bad -o", args: []string{"--object", obj("prod.yaml"), "-o", "yaml"}, wantCode: 2, wantErr: `-o "yaml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"eval", "-o", "json"}, tc.args...)
			if !slices.ContainsFunc(tc.args, func(a string) bool { return !strings.HasPrefix(a, "-") && filepath.Dir(a) == dir }) {
				args = append(args, policies)
			}
			out, errOut, code := policyRun(t, args...)
			if code != tc.wantCode {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			if tc.wantErr != "" {
				if !strings.Contains(errOut, tc.wantErr) {
					t.Errorf("stderr does not contain %q:\n%s", tc.wantErr, errOut)
				}
				return
			}
			var got policyEvalJSON
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("-o json is not JSON: %v\n%s", err, out)
			}
			if got.Outcome != tc.wantOutcome {
				t.Errorf("outcome %q, want %q (message %q, error %q)", got.Outcome, tc.wantOutcome, got.Message, got.Error)
			}
			if diff := cmp.Diff(tc.wantDeniedBy, got.DeniedBy); diff != "" {
				t.Errorf("deniedBy (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWarnings, got.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			decisions := map[string]decision{}
			patchBy := ""
			for _, d := range got.Decisions {
				if len(d.Deny) > 0 || len(d.Warn) > 0 {
					decisions[d.Policy] = decision{deny: d.Deny, warn: d.Warn}
				}
				if d.Policy == "owner" && len(d.Patch) == 1 {
					patchBy, _ = d.Patch[0].(map[string]any)["value"].(map[string]any)["owner"].(string)
				}
			}
			if diff := cmp.Diff(tc.wantDecisions, decisions, cmp.AllowUnexported(decision{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
			if patchBy != tc.wantPatchBy {
				t.Errorf("owner's patch records %q, want %q", patchBy, tc.wantPatchBy)
			}
			if (got.Error == "") != (tc.wantEvalError == "") || !strings.Contains(got.Error, tc.wantEvalError) {
				t.Errorf("evaluation error %q, want one with %q", got.Error, tc.wantEvalError)
			}
			if tc.wantOutcome == "denied" && !strings.Contains(got.Message, "is forbidden") {
				t.Errorf("message %q is not the server's refusal", got.Message)
			}

			// The text output says the same.
			text, _, textCode := policyRun(t, append([]string{"eval"}, args[3:]...)...)
			if textCode != code {
				t.Errorf("text output: exit status %d, json %d", textCode, code)
			}
			wantLine := map[string]string{"allowed": "\nallowed\n", "warned": "\nallowed with warnings\n", "denied": "\ndenied"}[tc.wantOutcome]
			if !strings.Contains("\n"+text, wantLine) {
				t.Errorf("text output does not say %q:\n%s", wantLine, text)
			}
		})
	}
}

// A policy may read a Secret's data, copy it, transform it, trace it and
// patch it into the object: nothing policy eval prints, with --explain,
// in text or JSON, on create or update, shows the value in any form.
func TestPolicyEvalRedactsSecretData(t *testing.T) {
	const value = "Zq7-unlikely-9xW"
	encoded := base64.StdEncoding.EncodeToString([]byte(value))
	forms := []string{value, encoded, base64.URLEncoding.EncodeToString([]byte(value)), strings.ToUpper(value), strings.ToLower(value), "unlikely", "UNLIKELY", strconv.Quote(value)}

	dir := t.TempDir()
	policies := writeFiles(t, filepath.Join(dir, "policies"), map[string]string{
		"peek.rego": `package kubernetes.admission

import rego.v1

secret_value(obj) := v if v := base64.decode(obj.data.password)
secret_value(obj) := v if v := obj.stringData.password

deny contains sprintf("the password is %s", [v]) if {
	v := secret_value(input.request.object)
	x := v
	x != "something else"
	upper(x) != "SOMETHING ELSE"
	parts := split(x, "-")
	count(parts) == 3
	trace(sprintf("the value is %s, upper %s, part %s", [x, upper(x), parts[1]]))
	startswith(x, "Zq7")
}

deny contains "the password changed" if {
	old := secret_value(input.request.oldObject)
	new := secret_value(input.request.object)
	old != new
	trace(old)
}

deny contains "a password is deleted" if {
	input.request.operation == "DELETE"
	v := secret_value(input.request.oldObject)
	trace(v)
	v != ""
}

warn contains sprintf("seen %s", [base64.encode(v)]) if v := secret_value(input.request.object)

patch contains {"op": "add", "path": "/metadata/annotations", "value": {"copy": v}} if {
	v := secret_value(input.request.object)
	not input.request.object.metadata.annotations
}
`,
	})
	secret := func(field, v string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: prod\n" + field + ":\n  password: " + v + "\n"
	}
	objects := writeFiles(t, filepath.Join(dir, "objects"), map[string]string{
		"data.yaml":       secret("data", encoded),
		"stringdata.yaml": secret("stringData", value),
		"other.yaml":      secret("data", base64.StdEncoding.EncodeToString([]byte("another-value"))),
	})
	for _, tc := range []struct {
		name string
		args []string
	}{
		{name: "data", args: []string{"--object", filepath.Join(objects, "data.yaml")}},
		{name: "stringData", args: []string{"--object", filepath.Join(objects, "stringdata.yaml")}},
		{name: "update", args: []string{"--operation", "UPDATE", "--object", filepath.Join(objects, "other.yaml"), "--old", filepath.Join(objects, "data.yaml")}},
		{name: "delete", args: []string{"--operation", "DELETE", "--object", filepath.Join(objects, "data.yaml")}},
	} {
		for _, output := range []string{"text", "json"} {
			t.Run(tc.name+"/"+output, func(t *testing.T) {
				out, errOut, code := policyRun(t, append([]string{"eval", "--explain", "-o", output, policies}, tc.args...)...)
				if code != 1 && code != 0 {
					t.Fatalf("exit status %d\nstderr:\n%s", code, errOut)
				}
				// The policies saw the value: the trace went through them.
				if !strings.Contains(out, "Enter data.trustplane.policies.peek") || !strings.Contains(out, "<redacted>") {
					t.Errorf("no trace of the policy, or nothing redacted:\n%s", out)
				}
				for _, f := range forms {
					if strings.Contains(out, f) || strings.Contains(errOut, f) {
						t.Errorf("the output shows %q:\n%s\nstderr:\n%s", f, out, errOut)
					}
				}
			})
		}
	}
}

// The shipped library passes its own tests as policy test runs them: each
// policy with its test file, as the server loads them.
func TestPolicyTestShippedLibrary(t *testing.T) {
	stdout, stderr, code := policyRun(t, "test", filepath.Join("..", "..", "policies"))
	if code != 0 || !strings.Contains(stdout, "PASS") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}
