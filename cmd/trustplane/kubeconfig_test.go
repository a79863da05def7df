package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/pki"
	"github.com/trustplane/trustplane/rbac"
)

const kubeconfigTestServer = "https://127.0.0.1:6443"

func TestKubeconfigFlagsValidate(t *testing.T) {
	valid := func() kubeconfigFlags {
		return kubeconfigFlags{dir: "d", user: "alice", ttl: time.Hour}
	}
	for _, tc := range []struct {
		name   string
		modify func(*kubeconfigFlags)
		want   []string // substrings of the error; none: valid
	}{
		{"user only", func(*kubeconfigFlags) {}, nil},
		{"groups", func(f *kubeconfigFlags) { f.groups = []string{"dev", "ops", "dev"} }, nil},
		{"no user", func(f *kubeconfigFlags) { f.user = "" }, []string{"--user is required"}},
		{"no dir", func(f *kubeconfigFlags) { f.dir = "" }, []string{"--dir"}},
		{"system user", func(f *kubeconfigFlags) { f.user = "system:kube-scheduler" }, []string{`--user "system:kube-scheduler"`, "--allow-system"}},
		{"system user allowed", func(f *kubeconfigFlags) { f.user, f.allowSystem = "system:node:n1", true }, nil},
		{"serviceaccount user", func(f *kubeconfigFlags) { f.user = "system:serviceaccount:default:builder" }, []string{"--allow-system"}},
		{"system group", func(f *kubeconfigFlags) { f.groups = []string{"dev", "system:masters"} }, []string{`--group "system:masters"`, "--allow-system"}},
		{"system group allowed", func(f *kubeconfigFlags) { f.groups, f.allowSystem = []string{"system:nodes"}, true }, nil},
		{"admin group", func(f *kubeconfigFlags) { f.groups = []string{rbac.ClusterAdminsGroup} }, []string{`--group "` + rbac.ClusterAdminsGroup + `"`, "--allow-admin"}},
		{"admin group with allow-system", func(f *kubeconfigFlags) {
			f.groups, f.allowSystem = []string{rbac.ClusterAdminsGroup}, true
		}, []string{"--allow-admin"}},
		{"admin group allowed", func(f *kubeconfigFlags) { f.groups, f.allowAdmin = []string{rbac.ClusterAdminsGroup}, true }, nil},
		{"empty group", func(f *kubeconfigFlags) { f.groups = []string{""} }, []string{"--group must not be empty"}},
		{"control character", func(f *kubeconfigFlags) { f.user = "alice\nadmin" }, []string{"--user", "control character"}},
		{"zero ttl", func(f *kubeconfigFlags) { f.ttl = 0 }, []string{"--ttl 0s must be positive"}},
		{"negative ttl", func(f *kubeconfigFlags) { f.ttl = -time.Hour }, []string{"--ttl -1h0m0s must be positive"}},
		{"user leaving dir", func(f *kubeconfigFlags) { f.user = "../alice" }, []string{"--out"}},
		{"hidden user file", func(f *kubeconfigFlags) { f.user = ".alice" }, []string{"--out"}},
		{"user leaving dir with out", func(f *kubeconfigFlags) { f.user, f.out = "../alice", "alice.conf" }, nil},
		{"http server", func(f *kubeconfigFlags) { f.server = "http://127.0.0.1:6443" }, []string{`--server "http://127.0.0.1:6443"`}},
		{"https server", func(f *kubeconfigFlags) { f.server = "https://cp.example.com:6443" }, nil},
		{"every problem", func(f *kubeconfigFlags) {
			f.user, f.groups, f.ttl = "system:x", []string{rbac.ClusterAdminsGroup}, 0
		}, []string{"--user", "--allow-system", "--allow-admin", "--ttl"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := valid()
			tc.modify(&f)
			checkValidation(t, f.validate(), tc.want)
		})
	}
}

// kcDataDir creates a data directory as `trustplane init` does.
func kcDataDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := datadir.Init(datadir.Options{Dir: dir, APIServerURL: kubeconfigTestServer}); err != nil {
		t.Fatalf("datadir.Init: %v", err)
	}
	return dir
}

// kcRun runs `trustplane kubeconfig args...` in-process.
func kcRun(t *testing.T, args ...string) (stdout string, err error) {
	t.Helper()
	cmd := newKubeconfigCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.ExecuteContext(t.Context())
	return out.String(), err
}

// kcIssued is what a written kubeconfig holds.
type kcIssued struct {
	server string
	caPEM  []byte
	cert   *x509.Certificate
	pair   tls.Certificate
}

// kcLoad reads the kubeconfig at path, checking that it is mode 0600 and
// that its key belongs to its certificate.
func kcLoad(t *testing.T, path string) kcIssued {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", path, fi.Mode().Perm())
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		t.Fatalf("%s: current context %q is incomplete", path, cfg.CurrentContext)
	}
	cluster, auth := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	pair, err := tls.X509KeyPair(auth.ClientCertificateData, auth.ClientKeyData)
	if err != nil {
		t.Fatalf("%s: client certificate and key: %v", path, err)
	}
	block, _ := pem.Decode(auth.ClientCertificateData)
	if block == nil {
		t.Fatalf("%s: no PEM client certificate", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return kcIssued{server: cluster.Server, caPEM: cluster.CertificateAuthorityData, cert: cert, pair: pair}
}

func TestKubeconfigIssues(t *testing.T) {
	dir := kcDataDir(t)
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)

	before := time.Now()
	stdout, err := kcRun(t, "--dir", dir, "--user", "alice", "--group", "dev", "--group", "ops", "--group", "dev", "--ttl", "2h")
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	path := filepath.Join(dir, "alice.conf")
	if stdout != path+"\n" {
		t.Errorf("stdout %q, want the path written, %q", stdout, path+"\n")
	}
	got := kcLoad(t, path)
	c := got.cert
	if c.Subject.CommonName != "alice" || !slices.Equal(c.Subject.Organization, []string{"dev", "ops"}) {
		t.Errorf("subject CN %q O %q, want CN alice O [dev ops]", c.Subject.CommonName, c.Subject.Organization)
	}
	if got.server != kubeconfigTestServer {
		t.Errorf("server %q, want admin.conf's %q", got.server, kubeconfigTestServer)
	}
	if !bytes.Equal(got.caPEM, caPEM) {
		t.Errorf("embedded CA differs from pki/ca.crt")
	}
	// Client authentication only: no server use, no signing of others.
	if !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || len(c.UnknownExtKeyUsage) > 0 {
		t.Errorf("extended key usages %v %v, want client auth only", c.ExtKeyUsage, c.UnknownExtKeyUsage)
	}
	if c.IsCA || c.KeyUsage&(x509.KeyUsageCertSign|x509.KeyUsageCRLSign) != 0 {
		t.Errorf("certificate is a CA (IsCA %v, key usage %b), want a leaf", c.IsCA, c.KeyUsage)
	}
	if len(c.DNSNames)+len(c.IPAddresses)+len(c.URIs)+len(c.EmailAddresses) > 0 {
		t.Errorf("certificate names hosts %v %v %v %v, want none", c.DNSNames, c.IPAddresses, c.URIs, c.EmailAddresses)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("verify as a client against ca.crt: %v", err)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Errorf("verify as a server against ca.crt: ok, want an error")
	}
	// cfssl backdates by up to five minutes and a half (rounding).
	if earliest, latest := before.Add(2*time.Hour-6*time.Minute), time.Now().Add(2*time.Hour); c.NotAfter.Before(earliest) || c.NotAfter.After(latest) {
		t.Errorf("NotAfter %s, want within [%s, %s]", c.NotAfter, earliest, latest)
	}

	// Nothing is overwritten, not even by the same request.
	data, _ := os.ReadFile(path)
	if _, err := kcRun(t, "--dir", dir, "--user", "alice"); err == nil || !strings.Contains(err.Error(), "--out "+path+" exists") {
		t.Errorf("second kubeconfig for alice: %v, want a refusal naming --out %s", err, path)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, data) {
		t.Errorf("%s changed by a refused run", path)
	}
	admin := filepath.Join(dir, "admin.conf")
	adminData, _ := os.ReadFile(admin)
	if _, err := kcRun(t, "--dir", dir, "--user", "bob", "--out", admin); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("--out admin.conf: %v, want a refusal", err)
	}
	if again, _ := os.ReadFile(admin); !bytes.Equal(again, adminData) {
		t.Errorf("admin.conf changed by a refused run")
	}

	// Refused names are refused before anything is written.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--user", "system:kube-scheduler"}, "--allow-system"},
		{[]string{"--user", "carol", "--group", "system:masters"}, "--allow-system"},
		{[]string{"--user", "carol", "--group", rbac.ClusterAdminsGroup}, "--allow-admin"},
		{[]string{"--user", "carol", "--group", rbac.ClusterAdminsGroup, "--allow-system"}, "--allow-admin"},
		{[]string{"--user", "carol", "--ttl", "0s"}, "--ttl"},
		{[]string{"--user", "carol", "--ttl", "-1h"}, "--ttl"},
		{[]string{"--user", "carol", "--ttl", "87601h"}, "--ttl 87601h0m0s exceeds"}, // the CA's ten years, and a day
	} {
		_, err := kcRun(t, append([]string{"--dir", dir}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kubeconfig %q: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*.conf")); len(matches) != 4 {
		t.Errorf("kubeconfigs in %s: %q, want the three of init and alice's", dir, matches)
	}

	// Asked explicitly, system names and the admin group are issued.
	for _, tc := range []struct {
		args       []string
		file, user string
		groups     []string
	}{
		{[]string{"--user", "system:node:n1", "--group", "system:nodes", "--allow-system"}, "system:node:n1.conf", "system:node:n1", []string{"system:nodes"}},
		{[]string{"--user", "root", "--group", rbac.ClusterAdminsGroup, "--allow-admin"}, "root.conf", "root", []string{rbac.ClusterAdminsGroup}},
	} {
		if _, err := kcRun(t, append([]string{"--dir", dir}, tc.args...)...); err != nil {
			t.Errorf("kubeconfig %q: %v", tc.args, err)
			continue
		}
		c := kcLoad(t, filepath.Join(dir, tc.file)).cert
		if c.Subject.CommonName != tc.user || !slices.Equal(c.Subject.Organization, tc.groups) {
			t.Errorf("kubeconfig %q: CN %q O %q, want %q %q", tc.args, c.Subject.CommonName, c.Subject.Organization, tc.user, tc.groups)
		}
	}

	// --out and --server are honoured; parents are created 0700.
	out := filepath.Join(t.TempDir(), "sub", "ci.conf")
	if _, err := kcRun(t, "--dir", dir, "--user", "ci", "--out", out, "--server", "https://cp.example.com:6443"); err != nil {
		t.Fatalf("kubeconfig --out --server: %v", err)
	}
	if got := kcLoad(t, out); got.server != "https://cp.example.com:6443" || got.cert.Subject.CommonName != "ci" {
		t.Errorf("%s: server %q CN %q, want https://cp.example.com:6443 and ci", out, got.server, got.cert.Subject.CommonName)
	}
	if fi, err := os.Stat(filepath.Dir(out)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("created parent %s: %v, want mode 0700", filepath.Dir(out), fi.Mode())
	}
}

// The certificate may live as long as the CA, and not a second longer.
func TestKubeconfigTTLBoundedByCA(t *testing.T) {
	dir := kcDataDir(t)
	ca, err := pki.LoadCA(filepath.Join(dir, "pki"), pki.ClusterCAName)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	remaining := ca.Cert.NotAfter.Sub(now)

	f := kubeconfigFlags{dir: dir, user: "long", ttl: remaining + time.Second}
	if _, err := writeUserKubeconfig(&f, now); err == nil || !strings.Contains(err.Error(), "--ttl") {
		t.Errorf("ttl of the CA's remaining validity and a second: %v, want an error naming --ttl", err)
	}
	f.ttl = remaining
	path, err := writeUserKubeconfig(&f, now)
	if err != nil {
		t.Fatalf("ttl of the CA's remaining validity: %v", err)
	}
	if c := kcLoad(t, path).cert; c.NotAfter.After(ca.Cert.NotAfter) {
		t.Errorf("NotAfter %s is after the CA's %s", c.NotAfter, ca.Cert.NotAfter)
	}
}

func TestKubeconfigNeedsDataDir(t *testing.T) {
	empty := t.TempDir()
	_, err := kcRun(t, "--dir", empty, "--user", "alice")
	if err == nil || !strings.Contains(err.Error(), "--server") {
		t.Errorf("without admin.conf or --server: %v, want an error naming --server", err)
	}
	_, err = kcRun(t, "--dir", empty, "--user", "alice", "--server", kubeconfigTestServer)
	if err == nil || !strings.Contains(err.Error(), "--dir") {
		t.Errorf("without a CA: %v, want an error naming --dir", err)
	}
	if _, err := os.Stat(filepath.Join(empty, "alice.conf")); err == nil {
		t.Errorf("alice.conf written without a CA")
	}
}
