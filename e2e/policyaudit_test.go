package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// leakPolicy puts a Secret's password, decoded, into its deny message: the
// audit must print it redacted all the same.
const leakPolicy = `package kubernetes.admission

deny contains msg if {
	input.request.kind.kind == "Secret"
	msg := sprintf("password is %s", [base64.decode(input.request.object.data.password)])
}
`

// audited runs `trustplane policy audit args...` and returns its stdout,
// stderr and exit status, after checking that neither output holds
// secret in any form the server stores or serves it.
func audited(t *testing.T, secret string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	out, errOut, err := e2etest.Run(t, append([]string{"policy", "audit"}, args...)...)
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("policy audit %s: %v", strings.Join(args, " "), err)
	}
	for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
		if strings.Contains(string(out), form) || strings.Contains(string(errOut), form) {
			t.Errorf("policy audit %s printed the Secret's value (%q):\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), form, out, errOut)
		}
	}
	return string(out), string(errOut), code
}

// findings are the objects and policies of the finding lines of a text
// report: "<resource> <object>: <policy> [<enforcement>]".
func findings(stdout string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^(\S+ \S+): (\S+) (\[\w+\]):`).FindAllStringSubmatch(stdout, -1) {
		out = append(out, m[1]+" "+m[2]+" "+m[3])
	}
	slices.Sort(out)
	return out
}

// policy audit lists the live objects the shipped library would deny,
// with each policy's enforcement as written, exits 1 for them and 0 for
// none, skips what its identity may not list, refuses bad input with 2,
// and never prints a Secret's value.
func TestPolicyAudit(t *testing.T) {
	c := e2etest.StartCluster(t)
	restConfig, err := clientcmd.BuildConfigFromFlags("", c.AdminConf())
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	secret := "e2e-" + rand.Text()
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "vault", Labels: map[string]string{"trustplane.io/secrets": "allowed"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
	} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// secrets_namespace is warn as shipped: the two outside a labelled
	// namespace are created with a warning, and are what it would deny.
	for _, s := range []struct{ namespace, name string }{{"default", "db"}, {"vault", "ok"}, {"team", "stray"}} {
		obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.namespace}, Data: map[string][]byte{"password": []byte(secret)}}
		if _, err := client.CoreV1().Secrets(s.namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("shipped library", func(t *testing.T) {
		stdout, stderr, code := audited(t, secret, "--dir", c.Dir, "--kinds", "secrets,namespaces")
		// The default user is in no group the library lets through:
		// namespaces_policy_labels holds the label of vault, and of
		// kube-system (the API server's), against it.
		want := []string{
			"namespaces kube-system namespaces_policy_labels [deny]",
			"namespaces vault namespaces_policy_labels [deny]",
			"secrets default/db secrets_namespace [warn]",
			"secrets team/stray secrets_namespace [warn]",
		}
		if got := findings(stdout); !slices.Equal(got, want) || code != 1 {
			t.Errorf("exit %d, findings %q; want exit 1, findings %q\nstdout:\n%s\nstderr:\n%s", code, got, want, stdout, stderr)
		}
		// Every kind, each decoded strictly from what the server lists:
		// nothing else of a fresh cluster is denied.
		all, stderr, code := audited(t, secret, "--dir", c.Dir)
		if got := findings(all); !slices.Equal(got, want) || code != 1 || strings.Contains(all, "not decided") {
			t.Errorf("every kind: exit %d, findings %q; want exit 1, findings %q\nstdout:\n%s\nstderr:\n%s", code, got, want, all, stderr)
		}
		// Read one object at a time, the namespaces of the data too, it
		// finds the same.
		paged, stderr, code := audited(t, secret, "--dir", c.Dir, "--kinds", "secrets,namespaces", "--chunk-size", "1")
		if paged != stdout || code != 1 {
			t.Errorf("--chunk-size 1: exit %d, stdout\n%s\nwant exit 1 and\n%s\nstderr:\n%s", code, paged, stdout, stderr)
		}
		if !strings.Contains(stdout, `secrets default/db: secrets_namespace [warn]: Secret "db" may not be created in namespace "default"`) {
			t.Errorf("stdout lacks the message of the finding of default/db:\n%s", stdout)
		}
		if !strings.Contains(stdout, "secrets_namespace [warn]: would deny 2 of ") {
			t.Errorf("stdout lacks the summary of secrets_namespace:\n%s", stdout)
		}
	})

	t.Run("as the admin, one policy, json", func(t *testing.T) {
		stdout, stderr, code := audited(t, secret, "--dir", c.Dir, "--kinds", "secrets,namespaces",
			"--as", "admin", "--as-group", "trustplane:cluster-admins", "--policy", "secrets_namespace", "--policy", "namespaces_policy_labels", "-o", "json")
		var report struct {
			Evaluated int
			Findings  []struct{ Resource, Namespace, Name, Policy, Enforcement string }
		}
		if err := json.Unmarshal([]byte(stdout), &report); err != nil {
			t.Fatalf("-o json: %v\n%s", err, stdout)
		}
		var got []string
		for _, f := range report.Findings {
			got = append(got, f.Resource+" "+f.Namespace+"/"+f.Name+" "+f.Policy+" "+f.Enforcement)
		}
		want := []string{"secrets default/db secrets_namespace warn", "secrets team/stray secrets_namespace warn"}
		if !slices.Equal(got, want) || code != 1 || report.Evaluated < 3 {
			t.Errorf("exit %d, %d evaluated, findings %q; want exit 1, at least 3 evaluated, findings %q\nstderr:\n%s", code, report.Evaluated, got, want, stderr)
		}
	})

	t.Run("nothing denied", func(t *testing.T) {
		stdout, stderr, code := audited(t, secret, "--dir", c.Dir, "--kinds", "secrets", "--policy", "secrets_size")
		if code != 0 || len(findings(stdout)) != 0 || !strings.Contains(stdout, "secrets_size [deny]: would deny 0 of 3") {
			t.Errorf("exit %d; want 0 and no finding\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})

	t.Run("forbidden resource skipped", func(t *testing.T) {
		// A viewer may list namespaces, ServiceAccounts and ConfigMaps,
		// never Secrets.
		viewer := filepath.Join(t.TempDir(), "viewer.conf")
		if _, stderr, err := e2etest.Run(t, "kubeconfig", "--dir", c.Dir, "--user", "vic", "--group", "viewers", "--out", viewer); err != nil {
			t.Fatalf("trustplane kubeconfig: %v\n%s", err, stderr)
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "viewers"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "viewers"}},
		}
		if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := audited(t, secret, "--dir", c.Dir, "--kubeconfig", viewer, "--kinds", "secrets,configmaps")
		if code != 0 || !regexp.MustCompile(`(?m)^skipped secrets: .*forbidden`).MatchString(stdout) {
			t.Errorf("exit %d; want 0 and secrets skipped as forbidden\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})

	t.Run("data the policies read forbidden", func(t *testing.T) {
		// The scheduler may not list ServiceAccounts, which the library
		// reads: judged without them, pods would be judged wrongly.
		_, stderr, code := audited(t, secret, "--dir", c.Dir, "--kubeconfig", c.Kubeconfig("scheduler"), "--kinds", "pods")
		if code != 2 || !strings.Contains(stderr, "serviceaccounts") || !strings.Contains(stderr, "forbidden") {
			t.Errorf("exit %d, stderr %q; want 2 and the ServiceAccounts it may not list", code, stderr)
		}
	})

	t.Run("a policy that quotes a Secret's value", func(t *testing.T) {
		dir := t.TempDir()
		for _, name := range []string{"secrets_namespace.rego", "replicate.yaml"} {
			b, err := os.ReadFile(filepath.Join(c.Dir, "policies", name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "leak.rego"), []byte(leakPolicy), 0o600); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := audited(t, secret, "--dir", c.Dir, "--kinds", "secrets", "--policy", "leak", dir)
		if code != 1 || strings.Count(stdout, "leak [deny]: password is <redacted>") != 3 {
			t.Errorf("exit %d; want 1 and the three Secrets denied by leak, their value redacted\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})

	t.Run("a policy that cannot be evaluated", func(t *testing.T) {
		// The server refuses what its policies cannot decide: so does
		// the audit, naming no policy.
		dir := t.TempDir()
		failing := "package kubernetes.admission\n\ndeny contains sprintf(\"%d\", [to_number(input.request.name)]) if input.request.kind.kind == \"Secret\"\n"
		if err := os.WriteFile(filepath.Join(dir, "failing.rego"), []byte(failing), 0o600); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := audited(t, secret, "--dir", c.Dir, "--kinds", "secrets", dir)
		if code != 1 || strings.Count(stdout, "not decided, the server would refuse it: ") != 3 || !strings.Contains(stdout, "not decided (refused): 3 of 3") {
			t.Errorf("exit %d; want 1 and the three Secrets not decided\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		broken := filepath.Join(t.TempDir(), "broken.rego")
		if err := os.WriteFile(broken, []byte("package kubernetes.admission\n\ndeny contains msg if {\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name   string
			args   []string
			stderr string
		}{
			{"policy that does not parse", []string{"--dir", c.Dir, broken}, "broken.rego:"},
			{"kubeconfig that does not load", []string{"--dir", c.Dir, "--kubeconfig", filepath.Join(c.Dir, "missing.conf")}, "load kubeconfig"},
			{"unknown kind", []string{"--dir", c.Dir, "--kinds", "widgets"}, "widgets: not a resource trustplane stores"},
			{"unknown policy", []string{"--dir", c.Dir, "--policy", "nope"}, `policy "nope"`},
			{"bad flag", []string{"--dir", c.Dir, "-o", "yaml"}, `-o "yaml"`},
		} {
			stdout, stderr, code := audited(t, secret, tt.args...)
			if code != 2 || !strings.Contains(stderr, tt.stderr) || stdout != "" {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2, nothing on stdout, and %q", tt.name, code, stdout, stderr, tt.stderr)
			}
		}
	})
}
