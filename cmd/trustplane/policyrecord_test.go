package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// createEvent is an audit event of an allowed create of a ConfigMap, at
// level RequestResponse.
const createEvent = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"a1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/prod/configmaps","verb":"create","user":{"username":"alice","groups":["dev","system:authenticated"]},"objectRef":{"resource":"configmaps","namespace":"prod","name":"settings","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestObject":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"prod"},"data":{"mode":"strict"}},"responseObject":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"prod","uid":"u1","resourceVersion":"5"},"data":{"mode":"strict"}}}`

// deniedEvent is a create of a Secret refused by the policy nodefault, at
// level Metadata, as Secrets always are.
const deniedEvent = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a2","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/secrets","verb":"create","user":{"username":"alice"},"objectRef":{"resource":"secrets","namespace":"default","name":"db","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":403},"annotations":{"policy.trustplane.io/nodefault":"{\"deny\":[\"Secret db may not be in default\"],\"enforcement\":\"deny\"}"}}`

func TestPolicyRecord(t *testing.T) {
	dir := writeFiles(t, t.TempDir(), map[string]string{
		"policies/nodefault.rego":      noDefaultPolicy,
		"policies/nodefault_test.rego": noDefaultTests,
		// A signed checkpoint of the log's chain is no event.
		"audit.log": createEvent + "\n" + deniedEvent + "\n" + `{"kind":"Checkpoint","apiVersion":"audit.trustplane.io/v1","note":"trustplane-audit\n2\nAAAA\n"}` + "\n",
		"bad.log":   createEvent + "\n{not json\n",
		"other.log": `{"kind":"Policy","apiVersion":"audit.k8s.io/v1"}` + "\n",
	})
	at := func(name string) string { return filepath.Join(dir, name) }
	out := at("rec")
	stdout, stderr, code := policyRun(t, "record", "--audit-log", at("audit.log"), "--out", out, at("policies"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"recorded 1 cases into " + filepath.Join(out, "recorded.yaml") + ": 1 allowed, 0 warned, 0 denied",
		"skipped 1: no request body",
		"1 of 1 cases reproduce",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not say %q:\n%s", want, stdout)
		}
	}
	stdout, _, code = policyRun(t, "verify", out, "--policies", at("policies"), "-v")
	if code != 0 || !strings.Contains(stdout, "0001 create configmaps prod/settings by alice: PASS") {
		t.Errorf("verify of the recording: exit %d\n%s", code, stdout)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"a line that is not JSON", []string{"--audit-log", at("bad.log"), "--out", at("rec-bad")}, "bad.log:2: not an audit event"},
		{"a line that is not an event", []string{"--audit-log", at("other.log"), "--out", at("rec-other")}, "other.log:1: not an audit.k8s.io/v1 Event"},
		{"a recording already there", []string{"--audit-log", at("audit.log"), "--out", out}, "recorded.yaml exists"},
		{"no event to record", []string{"--audit-log", at("policies/nodefault.rego"), "--out", at("rec-none")}, "nodefault.rego:1: not an audit event"},
		{"no out", []string{"--audit-log", at("audit.log")}, "--audit-log and --out are required"},
		{"a missing log", []string{"--audit-log", at("nowhere.log"), "--out", at("rec-missing")}, "nowhere.log: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := policyRun(t, append([]string{"record"}, tc.args...)...)
			if code != 2 || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.wantErr)
			}
		})
	}
}
