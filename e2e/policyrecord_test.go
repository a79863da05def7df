package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// recordManifests are what the recorded traffic creates: a namespace that
// may hold Secrets, a ServiceAccount whose pods may use db, a pod that
// uses db and one that names another Secret.
var recordManifests = map[string]string{
	"team.yaml": `apiVersion: v1
kind: Namespace
metadata:
  name: team
  labels:
    trustplane.io/secrets: allowed
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: app
  namespace: team
  annotations:
    trustplane.io/allowed-secrets: db
`,
	"web.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: team
spec:
  serviceAccountName: app
  containers:
  - name: web
    image: registry.example/web:1.0
    envFrom:
    - secretRef:
        name: db
`,
	"thief.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: thief
  namespace: team
spec:
  serviceAccountName: app
  containers:
  - name: thief
    image: registry.example/thief:1.0
    envFrom:
    - secretRef:
        name: payments
`,
}

// Traffic made with stock kubectl and recorded from the real audit log
// replays, through policy verify, to the outcomes the server gave; against
// a changed policy it shows what the change would change.
func TestPolicyRecordReplaysKubectlTraffic(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	k := newKubectl(t, kubectlVersions[len(kubectlVersions)-1])
	c := e2etest.StartCluster(t)
	dir := t.TempDir()
	for name, content := range recordManifests {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	admin := c.AdminConf()
	must := func(args ...string) {
		t.Helper()
		if res := k.run(t, admin, args...); res.exit != 0 {
			t.Fatalf("kubectl %s: exit %d: %s", strings.Join(args, " "), res.exit, res.stderr)
		}
	}
	mustFail := func(want string, args ...string) {
		t.Helper()
		if res := k.run(t, admin, args...); res.exit == 0 || !strings.Contains(res.stderr, want) {
			t.Fatalf("kubectl %s: exit %d, stderr %q; want a refusal with %q", strings.Join(args, " "), res.exit, res.stderr, want)
		}
	}
	must("create", "-f", filepath.Join(dir, "team.yaml"))
	// The policies read the ServiceAccount from their replicated data,
	// which follows the watch cache: give it a moment.
	time.Sleep(time.Second)
	must("create", "-f", filepath.Join(dir, "web.yaml"))
	mustFail("policy pods_secret_refs", "create", "-f", filepath.Join(dir, "thief.yaml"))
	must("label", "namespace", "team", "owner=team")
	must("create", "clusterrole", "namespace-labeller", "--verb=get,patch", "--resource=namespaces")
	must("create", "clusterrolebinding", "alice-labels", "--clusterrole=namespace-labeller", "--user=alice")
	// A patch refused by a policy: the log holds the patch, not what it
	// would have made.
	mustFail("policy namespaces_policy_labels", "--as", "alice", "label", "namespace", "team", "trustplane.io/secrets-")
	// Audited at Metadata: not recorded.
	must("create", "secret", "generic", "db", "-n", "team", "--from-literal=password=recorded-never-0xfeed")
	objects := k.run(t, admin, "get", "namespaces,serviceaccounts", "-A", "-o", "yaml")
	if objects.exit != 0 {
		t.Fatal(objects.stderr)
	}
	objectsFile := filepath.Join(dir, "objects.yaml")
	if err := os.WriteFile(objectsFile, []byte(objects.stdout), 0o600); err != nil {
		t.Fatal(err)
	}

	policies := filepath.Join(c.Dir, "policies")
	out := filepath.Join(dir, "recorded")
	stdout, stderr, err := e2etest.Run(t, "policy", "record", "--audit-log", c.AuditLog(), "--out", out, "--objects", objectsFile, policies)
	if err != nil {
		t.Fatalf("policy record: %v\n%s\n%s", err, stdout, stderr)
	}
	report := string(stdout)
	m := regexp.MustCompile(`recorded (\d+) cases into .*: \d+ allowed, \d+ warned, 2 denied`).FindStringSubmatch(report)
	if m == nil || !regexp.MustCompile(`skipped \d+: no request body`).MatchString(report) {
		t.Errorf("policy record says:\n%s\n%s", report, stderr)
	}
	if !regexp.MustCompile(`replayed against .*: (\d+) of (\d+) cases reproduce`).MatchString(report) || strings.Contains(report, "not reproduced") {
		t.Errorf("the recording does not replay to the server's outcomes:\n%s", report)
	}
	fi, err := os.Stat(filepath.Join(out, "recorded.yaml"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("recorded.yaml: %v, mode %v; want 0600, as the audit log", err, fi.Mode())
	}

	stdout, stderr, err = e2etest.Run(t, "policy", "verify", out, "--policies", policies, "-v")
	if err != nil {
		t.Fatalf("policy verify of the recording: %v\n%s\n%s", err, stdout, stderr)
	}
	for _, want := range []string{"create pods team/thief by admin: PASS", "patch namespaces team by alice: PASS"} {
		if !strings.Contains(string(stdout), want) {
			t.Errorf("policy verify does not say %q:\n%s", want, stdout)
		}
	}

	// The change under review: pods_secret_refs to dryrun. The replay
	// shows the one request it would let through.
	changed := filepath.Join(dir, "changed")
	if err := os.CopyFS(changed, os.DirFS(policies)); err != nil {
		t.Fatal(err)
	}
	refs := filepath.Join(changed, "pods_secret_refs.rego")
	src, err := os.ReadFile(refs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(refs, []byte(strings.Replace(string(src), "enforcement: deny", "enforcement: dryrun", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, _, err = e2etest.Run(t, "policy", "verify", out, "--policies", changed)
	var exitErr *exec.ExitError
	code := 0
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	}
	if code != 1 || !strings.Contains(string(stdout), "create pods team/thief by admin: FAIL") || !strings.Contains(string(stdout), "FAIL: 1/") {
		t.Errorf("policy verify against the change: exit %d:\n%s", code, stdout)
	}
	assertNotLeaked(t, c, "recorded-never-0xfeed")
	for _, f := range []string{filepath.Join(out, "recorded.yaml")} {
		raw, _ := os.ReadFile(f)
		if strings.Contains(string(raw), "recorded-never-0xfeed") {
			t.Errorf("%s holds the Secret's value", f)
		}
	}
}
