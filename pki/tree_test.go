package pki

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func testOptions(t *testing.T) Options {
	t.Helper()
	return Options{Dir: filepath.Join(t.TempDir(), "pki"), Hosts: []string{"10.1.2.3", "cp.example"}, CAValidity: DefaultCAValidity, LeafValidity: time.Hour}
}

func TestInitCreatesTreeWithModes(t *testing.T) {
	o := testOptions(t)
	tree, err := Init(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{
		{"", 0o700 | os.ModeDir},
		{"etcd", 0o700 | os.ModeDir},
		{"ca.key", 0o600},
		{"ca.crt", 0o644},
		{"apiserver.key", 0o600},
		{"apiserver-etcd-client.key", 0o600},
		{"etcd/ca.key", 0o600},
		{"etcd/server.key", 0o600},
		{"etcd/peer.key", 0o600},
		{"sa.key", 0o600},
		{"sa.pub", 0o644},
	} {
		fi, err := os.Stat(filepath.Join(o.Dir, f.path))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != f.mode {
			t.Errorf("%s: mode %v, want %v", f.path, fi.Mode(), f.mode)
		}
	}
	if len(tree.Created) != 7 {
		t.Errorf("created %v, want 7 entries", tree.Created)
	}
}

func TestInitKeepsExistingFiles(t *testing.T) {
	o := testOptions(t)
	if _, err := Init(o); err != nil {
		t.Fatal(err)
	}
	before := readAll(t, o.Dir)
	tree, err := Init(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Created) != 0 {
		t.Errorf("second Init created %v", tree.Created)
	}
	after := readAll(t, o.Dir)
	for name, b := range before {
		if !bytes.Equal(b, after[name]) {
			t.Errorf("%s changed on second Init", name)
		}
	}
}

func TestInitRefusesLoneKeyAndUncoveredHost(t *testing.T) {
	o := testOptions(t)
	if _, err := Init(o); err != nil {
		t.Fatal(err)
	}
	o2 := o
	o2.Hosts = append(o2.Hosts, "new.example")
	if _, err := Init(o2); err == nil || !strings.Contains(err.Error(), `does not cover host "new.example"`) {
		t.Errorf("Init with a new host: err = %v, want it to name the uncovered host", err)
	}
	if err := os.Remove(filepath.Join(o.Dir, "apiserver.crt")); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(o.Dir, "apiserver.key")
	keyBefore, _ := os.ReadFile(key)
	if _, err := Init(o); err == nil || !strings.Contains(err.Error(), "only one of") {
		t.Errorf("Init with a lone key: err = %v, want refusal", err)
	}
	keyAfter, _ := os.ReadFile(key)
	if !bytes.Equal(keyBefore, keyAfter) {
		t.Error("lone key was overwritten")
	}
}

func TestLeafUsagesAndTrustDomains(t *testing.T) {
	o := testOptions(t)
	tree, err := Init(o)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir, name string
		ca        *CA
		wrongCA   *CA
		usages    []x509.ExtKeyUsage
		cn        string
	}{
		{o.Dir, APIServerName, tree.ClusterCA, tree.EtcdCA, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, APIServerCommonName},
		{o.Dir, APIServerEtcdClient, tree.EtcdCA, tree.ClusterCA, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, EtcdClientCommonName},
		{filepath.Join(o.Dir, EtcdDir), EtcdServerName, tree.EtcdCA, tree.ClusterCA, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, "etcd-server"},
		{filepath.Join(o.Dir, EtcdDir), EtcdPeerName, tree.EtcdCA, tree.ClusterCA, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, "etcd-peer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pair, err := LoadKeyPair(tt.dir, tt.name)
			if err != nil {
				t.Fatal(err)
			}
			leaf := pair.Leaf
			if leaf.Subject.CommonName != tt.cn {
				t.Errorf("CN = %q, want %q", leaf.Subject.CommonName, tt.cn)
			}
			got := slices.Clone(leaf.ExtKeyUsage)
			slices.Sort(got)
			if !slices.Equal(got, tt.usages) {
				t.Errorf("ext key usages = %v, want %v", got, tt.usages)
			}
			if leaf.IsCA {
				t.Error("leaf is a CA")
			}
			if leaf.NotAfter.Sub(leaf.NotBefore) > 2*time.Hour {
				t.Errorf("validity %s, want about 1h", leaf.NotAfter.Sub(leaf.NotBefore))
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: tt.ca.Pool(), KeyUsages: tt.usages[:1]}); err != nil {
				t.Errorf("not verified by its CA: %v", err)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: tt.wrongCA.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
				t.Error("verified by the other trust domain's CA")
			}
		})
	}
	pair, _ := LoadKeyPair(o.Dir, APIServerName)
	for _, h := range []string{"localhost", "127.0.0.1", "::1", "kubernetes.default.svc.cluster.local", "10.1.2.3", "cp.example"} {
		if err := pair.Leaf.VerifyHostname(h); err != nil {
			t.Errorf("apiserver certificate: %v", err)
		}
	}
}

func TestIssueRejectsBadRequests(t *testing.T) {
	certPEM, keyPEM, err := NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := ParseCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]Request{
		"no profile":          {CommonName: "x", Validity: time.Hour},
		"server without host": {CommonName: "x", Profile: Server, Validity: time.Hour},
		"client with host":    {CommonName: "x", Profile: Client, Hosts: []string{"a"}, Validity: time.Hour},
		"no common name":      {Profile: Client, Validity: time.Hour},
		"no validity":         {CommonName: "x", Profile: Client},
	} {
		if _, _, err := ca.Issue(r); err == nil {
			t.Errorf("%s: issued, want an error", name)
		}
	}
	certPEM, keyPEM, err = ca.Issue(Request{CommonName: "alice", Organizations: []string{"g1", "g2"}, Profile: Client, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseCA(certPEM, keyPEM); err == nil {
		t.Error("a leaf parsed as a CA")
	}
}

func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		out[path] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
