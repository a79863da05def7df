package e2e

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// kubectlVersions are the kubectl minor versions trustplane must serve:
// its own (1.32) and the next one.
var kubectlVersions = []string{"1.32", "1.33"}

// Credentials that the refusal tests present and the server must neither
// accept nor record.
const (
	bogusToken    = "e2e-bogus-bearer-token-7f3c1a"
	basicPassword = "e2e-basic-password-92be0d"
	// probeAgent is the User-Agent of the requests made without kubectl.
	probeAgent = "trustplane-e2e-probe/1"
)

// TestKubectl drives one cluster per kubectl version through the commands
// an operator runs, the refusals they must meet, the audit trail those leave
// and a restart.
func TestKubectl(t *testing.T) {
	forEachKubectl(t, func(t *testing.T, k *kubectl, c *e2etest.Cluster) {
		// A value that occurs nowhere else, so that finding it, or its
		// base64, anywhere it should not be is a leak.
		secret := "e2e-" + rand.Text()

		commandsOK := t.Run("commands", func(t *testing.T) { testCommands(t, k, c, secret) })
		refusalsOK := t.Run("refusals", func(t *testing.T) { testRefusals(t, k, c) })
		t.Run("audit", func(t *testing.T) {
			if !commandsOK || !refusalsOK {
				t.Skip("skipping: the audit trail of the failed commands or refusals is incomplete")
			}
			testAudit(t, c, "kubectl."+k.version+"/", secret)
		})
		t.Run("restart", func(t *testing.T) { testRestart(t, k, c) })
	})
}

// step is one kubectl command and what it must do.
type step struct {
	// kubeconfig is passed with --kubeconfig; admin.conf when empty.
	kubeconfig string
	args       []string
	wantExit   int
	// stdout and stderr hold regular expressions that the output must
	// match.
	stdout, stderr []string
	// env adds environment variables, such as KUBE_EDITOR.
	env []string
	// againOnConflict runs the command again, up to five times, when the
	// server answers it with a Conflict: a controller wrote the object
	// between the command's read and its write, and a user runs it again.
	againOnConflict bool
}

// run runs s and reports every way the result differs from s.
func (s step) run(t *testing.T, k *kubectl, c *e2etest.Cluster) result {
	t.Helper()
	kubeconfig := s.kubeconfig
	if kubeconfig == "" {
		kubeconfig = c.AdminConf()
	}
	res := k.runEnv(t, kubeconfig, s.env, s.args...)
	for try := 1; s.againOnConflict && try < 5 && res.exit != 0 && strings.Contains(res.stderr, "(Conflict)"); try++ {
		res = k.runEnv(t, kubeconfig, s.env, s.args...)
	}
	cmd := "kubectl " + strings.Join(s.args, " ")
	if res.exit != s.wantExit {
		t.Errorf("%s: exit code %d, want %d\nstdout: %s\nstderr: %s", cmd, res.exit, s.wantExit, res.stdout, res.stderr)
	}
	for _, re := range s.stdout {
		if !regexp.MustCompile(re).MatchString(res.stdout) {
			t.Errorf("%s: stdout %q does not match %q", cmd, res.stdout, re)
		}
	}
	for _, re := range s.stderr {
		if !regexp.MustCompile(re).MatchString(res.stderr) {
			t.Errorf("%s: stderr %q does not match %q", cmd, res.stderr, re)
		}
	}
	return res
}

// runSteps runs steps in order and stops at the first that fails: each
// depends on the ones before it.
func runSteps(t *testing.T, k *kubectl, c *e2etest.Cluster, steps []step) {
	t.Helper()
	for _, s := range steps {
		s.run(t, k, c)
		if t.Failed() {
			t.FailNow()
		}
	}
}

func testCommands(t *testing.T, k *kubectl, c *e2etest.Cluster, secret string) {
	notFound := []string{`NotFound`}
	runSteps(t, k, c, []step{
		{args: []string{"get", "ns"}, stdout: []string{`(?m)^default\s`, `(?m)^kube-system\s`}},

		{args: []string{"create", "secret", "generic", "s1", "--from-literal=password=" + secret}, stdout: []string{`secret/s1 created`}},
		{args: []string{"get", "secret", "s1", "-o", "yaml"}, stdout: []string{
			`(?m)^  password: ` + regexp.QuoteMeta(base64.StdEncoding.EncodeToString([]byte(secret))) + `$`,
			`(?m)^kind: Secret$`,
		}},
		{args: []string{"create", "configmap", "c1", "--from-literal=a=b"}, stdout: []string{`configmap/c1 created`}},
		{args: []string{"get", "configmap", "c1", "-o", "jsonpath={.data.a}"}, stdout: []string{`\Ab\z`}},
		{args: []string{"delete", "secret", "s1"}, stdout: []string{`secret "s1" deleted`}},
		{args: []string{"get", "secret", "s1"}, wantExit: 1, stderr: notFound},
		{args: []string{"delete", "configmap", "c1"}, stdout: []string{`configmap "c1" deleted`}},
		{args: []string{"get", "configmap", "c1"}, wantExit: 1, stderr: notFound},

		// Deleting a namespace deletes what is in it.
		{args: []string{"create", "namespace", "team-a"}, stdout: []string{`namespace/team-a created`}},
		{args: []string{"create", "configmap", "x", "-n", "team-a", "--from-literal=k=v"}, stdout: []string{`configmap/x created`}},
		{args: []string{"get", "configmap", "x", "-n", "team-a", "-o", "jsonpath={.data.k}"}, stdout: []string{`\Av\z`}},
		{args: []string{"delete", "namespace", "team-a"}, stdout: []string{`namespace "team-a" deleted`}},
		{args: []string{"get", "configmap", "x", "-n", "team-a"}, wantExit: 1, stderr: notFound},
		// A namespace of the same name starts empty: the old contents
		// are gone, not merely hidden.
		{args: []string{"create", "namespace", "team-a"}, stdout: []string{`namespace/team-a created`}},
		{args: []string{"get", "configmap", "x", "-n", "team-a"}, wantExit: 1, stderr: notFound},
		{args: []string{"delete", "namespace", "team-a"}, stdout: []string{`namespace "team-a" deleted`}},

		{args: []string{"version"}, stdout: []string{`(?m)^Server Version: v1\.32\.`}},
	})
}

func testRefusals(t *testing.T, k *kubectl, c *e2etest.Cluster) {
	dir := t.TempDir()
	// kubectl prompts for a user name when a kubeconfig user has no
	// credential at all, so these users carry one the server does not
	// accept; the server supports neither, so to it they are callers
	// without credentials.
	tokenConf := filepath.Join(dir, "token.conf")
	writeKubeconfig(t, c.AdminConf(), tokenConf, func(u *clientcmdapi.AuthInfo) { u.Token = bogusToken })
	basicConf := filepath.Join(dir, "basic.conf")
	writeKubeconfig(t, c.AdminConf(), basicConf, func(u *clientcmdapi.AuthInfo) {
		u.Username, u.Password = "admin", basicPassword
	})

	forgedConf := filepath.Join(dir, "forged.conf")
	cert, key := forgedAdminCert(t)
	writeKubeconfig(t, c.AdminConf(), forgedConf, func(u *clientcmdapi.AuthInfo) {
		u.ClientCertificateData, u.ClientKeyData = cert, key
	})

	forbidden := []string{
		`Error from server \(Forbidden\)`,
		regexp.QuoteMeta(`User "system:kube-scheduler" cannot list resource "secrets"`),
	}
	// For a 401 to a discovery request kubectl prints its own text, not
	// the Status's message "Unauthorized"; whether `get` needs discovery
	// depends on what the admin's earlier calls left in the shared cache.
	discoveryUnauthorized := []string{`You must be logged in to the server`}
	unauthorized := []string{`You must be logged in to the server \(Unauthorized\)`}
	tests := []struct {
		name string
		step step
	}{
		{"scheduler may not list secrets", step{kubeconfig: c.Kubeconfig("scheduler"), args: []string{"get", "secrets", "-n", "default"}, wantExit: 1, stderr: forbidden}},
		{"bearer token get secrets", step{kubeconfig: tokenConf, args: []string{"get", "secrets", "-n", "default"}, wantExit: 1, stderr: discoveryUnauthorized}},
		{"bearer token raw get", step{kubeconfig: tokenConf, args: []string{"get", "--raw", "/api/v1/namespaces/default/secrets"}, wantExit: 1, stderr: unauthorized}},
		{"basic auth raw get", step{kubeconfig: basicConf, args: []string{"get", "--raw", "/api/v1/namespaces/default/configmaps"}, wantExit: 1, stderr: unauthorized}},
		// The server may refuse the certificate in the TLS handshake
		// or with a 401; either way the write must not happen.
		{"admin certificate from a foreign CA", step{kubeconfig: forgedConf, args: []string{"create", "configmap", "forged", "--from-literal=k=v"}, wantExit: 1}},
		{"forged write did not happen", step{args: []string{"get", "configmap", "forged"}, wantExit: 1, stderr: []string{`NotFound`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if res := tt.step.run(t, k, c); res.stdout != "" {
				t.Errorf("kubectl %s printed %q to stdout, want nothing", strings.Join(tt.step.args, " "), res.stdout)
			}
		})
	}

	// kubectl cannot send a request without any credential; net/http can.
	t.Run("no credential", func(t *testing.T) { testNoCredential(t, c) })
}

// testNoCredential checks that the health endpoints are open and that
// everything else answers 401 with a Status to a caller without
// credentials.
func testNoCredential(t *testing.T, c *e2etest.Cluster) {
	client := httpClient(t, c.AdminConf())
	tests := []struct {
		path string
		want int
	}{
		{"/livez", http.StatusOK},
		{"/readyz", http.StatusOK},
		{"/healthz", http.StatusOK},
		{"/version", http.StatusUnauthorized},
		{"/api", http.StatusUnauthorized},
		{"/apis", http.StatusUnauthorized},
		{"/api/v1/namespaces", http.StatusUnauthorized},
		{"/api/v1/namespaces/default/secrets", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(http.MethodGet, c.URL+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", probeAgent)
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("GET %s: %v", tt.path, err)
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Errorf("GET %s: read body: %v", tt.path, err)
			continue
		}
		if resp.StatusCode != tt.want {
			t.Errorf("GET %s without credentials: status %d, want %d; body %s", tt.path, resp.StatusCode, tt.want, body)
			continue
		}
		if tt.want != http.StatusUnauthorized {
			continue
		}
		var st metav1.Status
		if err := json.Unmarshal(body, &st); err != nil {
			t.Errorf("GET %s: body %s is not a Status: %v", tt.path, body, err)
			continue
		}
		if st.Kind != "Status" || st.Code != http.StatusUnauthorized || st.Reason != metav1.StatusReasonUnauthorized {
			t.Errorf("GET %s: Status kind %q code %d reason %q, want Status 401 Unauthorized", tt.path, st.Kind, st.Code, st.Reason)
		}
	}
}

// httpClient trusts the cluster CA of kubeconfig and presents no client
// certificate.
func httpClient(t *testing.T, kubeconfig string) *http.Client {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatalf("load %s: %v", kubeconfig, err)
	}
	pool := x509.NewCertPool()
	for name, cl := range cfg.Clusters {
		if !pool.AppendCertsFromPEM(cl.CertificateAuthorityData) {
			t.Fatalf("%s: cluster %q has no CA certificate", kubeconfig, name)
		}
	}
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		},
	}
}

// testAudit reads the audit log left by the commands and refusals before
// it. The server writes an event before it answers, so everything asked so
// far is already in the file.
func testAudit(t *testing.T, c *e2etest.Cluster, agent, secret string) {
	events := readAudit(t, c.AuditLog())
	if len(events) == 0 {
		t.Fatal("audit log is empty")
	}

	ids := map[string]int{}
	// The watches whose ResponseStarted was read: their ResponseComplete,
	// when they end, shares its auditID.
	watches := map[string]bool{}
	for i, ev := range events {
		line := i + 1
		if ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" {
			t.Errorf("line %d: kind %q apiVersion %q, want Event audit.k8s.io/v1", line, ev.Kind, ev.APIVersion)
		}
		// The shipped policy omits RequestReceived.
		if ev.Stage != "ResponseComplete" && !(ev.Verb == "watch" && ev.Stage == "ResponseStarted") {
			t.Errorf("line %d: stage %q, want ResponseComplete", line, ev.Stage)
		}
		id := string(ev.AuditID)
		switch prev, ok := ids[id]; {
		case id == "":
			t.Errorf("line %d: no auditID", line)
		case ok && watches[id] && ev.Stage == "ResponseComplete":
			delete(watches, id)
		case ok:
			t.Errorf("line %d: auditID %s already used on line %d", line, ev.AuditID, prev)
		case ev.Stage == "ResponseStarted":
			watches[id] = true
		}
		ids[id] = line
		if ev.ResponseStatus == nil || ev.ResponseStatus.Code == 0 {
			t.Errorf("line %d: no response code", line)
		}
		if ev.StageTimestamp.Before(&ev.RequestReceivedTimestamp) {
			t.Errorf("line %d: stageTimestamp %s before requestReceivedTimestamp %s", line, ev.StageTimestamp, ev.RequestReceivedTimestamp)
		}
		if ev.ObjectRef != nil && ev.ObjectRef.Resource == "secrets" {
			// Secrets are audited at Metadata level at most.
			if ev.Level != "Metadata" || ev.RequestObject != nil || ev.ResponseObject != nil {
				t.Errorf("line %d: secrets event at level %q with request object %t, response object %t; want Metadata without objects",
					line, ev.Level, ev.RequestObject != nil, ev.ResponseObject != nil)
			}
		}
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code == http.StatusUnauthorized {
			if ev.User.Username != "" {
				t.Errorf("line %d: 401 event names user %q, want none", line, ev.User.Username)
			}
			if d, ok := ev.Annotations[decisionKey]; ok {
				t.Errorf("line %d: 401 event has %s=%q, want no authorization decision", line, decisionKey, d)
			}
		}
	}

	tests := []struct {
		name string
		want wantEvent
	}{
		{"list namespaces", wantEvent{agent: agent, user: "admin", verb: "list", resource: "namespaces", code: 200, decision: "allow"}},
		{"create secret", wantEvent{agent: agent, user: "admin", verb: "create", resource: "secrets", namespace: "default", name: "s1", code: 201, decision: "allow"}},
		{"get secret", wantEvent{agent: agent, user: "admin", verb: "get", resource: "secrets", namespace: "default", name: "s1", code: 200, decision: "allow"}},
		{"delete secret", wantEvent{agent: agent, user: "admin", verb: "delete", resource: "secrets", namespace: "default", name: "s1", code: 200, decision: "allow"}},
		{"get deleted secret", wantEvent{agent: agent, user: "admin", verb: "get", resource: "secrets", namespace: "default", name: "s1", code: 404, decision: "allow"}},
		{"create configmap", wantEvent{agent: agent, user: "admin", verb: "create", resource: "configmaps", namespace: "default", name: "c1", code: 201, decision: "allow"}},
		{"create namespace", wantEvent{agent: agent, user: "admin", verb: "create", resource: "namespaces", name: "team-a", code: 201, decision: "allow"}},
		{"delete namespace", wantEvent{agent: agent, user: "admin", verb: "delete", resource: "namespaces", name: "team-a", code: 200, decision: "allow"}},
		{"forbidden", wantEvent{agent: agent, user: "system:kube-scheduler", verb: "list", resource: "secrets", namespace: "default", code: 403, decision: "forbid"}},
		{"unauthorized kubectl", wantEvent{agent: agent, uri: "/api/v1/namespaces/default/secrets", code: 401}},
		{"unauthorized without credential", wantEvent{agent: probeAgent, uri: "/api/v1/namespaces/default/secrets", code: 401}},
	}
	missing := false
	for _, tt := range tests {
		if !tt.want.in(events) {
			t.Errorf("%s: no audit event matches %+v", tt.name, tt.want)
			missing = true
		}
	}
	if missing {
		var seen []string
		for _, ev := range events {
			seen = append(seen, summary(ev))
		}
		t.Logf("audit events:\n%s", strings.Join(seen, "\n"))
	}

	assertNotLeaked(t, c, secret, bogusToken, basicPassword)
}

// assertNotLeaked checks that none of values, nor their base64, occurs in
// the audit log or in what the server wrote to stdout and stderr.
func assertNotLeaked(t *testing.T, c *e2etest.Cluster, values ...string) {
	t.Helper()
	audit, err := os.ReadFile(c.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	places := []struct {
		name string
		data []byte
	}{
		{"audit log", audit},
		{"server output", []byte(c.Output())},
	}
	for _, p := range places {
		for _, v := range values {
			for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), base64.RawStdEncoding.EncodeToString([]byte(v))} {
				if bytes.Contains(p.data, []byte(form)) {
					t.Errorf("%s contains %q (from %q)", p.name, form, v)
				}
			}
		}
	}
}

func testRestart(t *testing.T, k *kubectl, c *e2etest.Cluster) {
	secret := "e2e-" + rand.Text()
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	runSteps(t, k, c, []step{
		{args: []string{"create", "configmap", "survivor", "--from-literal=k=v"}, stdout: []string{`configmap/survivor created`}},
		{args: []string{"create", "secret", "generic", "survivor", "--from-literal=v=" + secret}, stdout: []string{`secret/survivor created`}},
	})
	uid := k.run(t, c.AdminConf(), "get", "configmap", "survivor", "-o", "jsonpath={.metadata.uid}")
	if uid.exit != 0 || uid.stdout == "" {
		t.Fatalf("get configmap survivor uid: exit %d, stdout %q, stderr %q", uid.exit, uid.stdout, uid.stderr)
	}
	before, err := os.ReadFile(c.AuditLog())
	if err != nil {
		t.Fatal(err)
	}

	oldURL := c.URL
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	// New ports: up must point the kubeconfigs at them.
	c.Start(t)
	if c.URL == oldURL {
		t.Logf("restarted on the same URL %s", c.URL)
	}

	runSteps(t, k, c, []step{
		{args: []string{"get", "ns"}, stdout: []string{`(?m)^default\s`, `(?m)^kube-system\s`}},
		{args: []string{"get", "configmap", "survivor", "-o", "jsonpath={.metadata.uid}"}, stdout: []string{`\A` + regexp.QuoteMeta(uid.stdout) + `\z`}},
		{args: []string{"get", "configmap", "survivor", "-o", "jsonpath={.data.k}"}, stdout: []string{`\Av\z`}},
		// The Secret was encrypted before the restart; reading it back
		// needs the same key after.
		{args: []string{"get", "secret", "survivor", "-o", "jsonpath={.data.v}"}, stdout: []string{`\A` + regexp.QuoteMeta(b64) + `\z`}},
		{args: []string{"delete", "secret", "survivor"}, stdout: []string{`secret "survivor" deleted`}},
	})

	after, err := os.ReadFile(c.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(after, before) {
		t.Errorf("audit log after restart (%d bytes) does not begin with the %d bytes it held before", len(after), len(before))
	} else if len(after) == len(before) {
		t.Error("no audit events written after restart")
	}
	readAudit(t, c.AuditLog())
	assertNotLeaked(t, c, secret)
}
