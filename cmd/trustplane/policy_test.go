package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// policyRun runs `trustplane policy args...` in-process, as main would:
// stderr holds the error main prints, code the exit status.
func policyRun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append([]string{"policy"}, args...))
	err := cmd.ExecuteContext(t.Context())
	if err != nil && err.Error() != "" {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), exitCode(err)
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
