package datadir

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/kms"
	"github.com/trustplane/trustplane/pki"
)

func TestInitWritesEverythingOnceAndKeepsIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	o := Options{Dir: dir, APIServerURL: "https://127.0.0.1:6443"}
	changed, err := Init(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) == 0 {
		t.Fatal("first Init reported no change")
	}
	l := Layout{Dir: dir}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("data dir mode %v, want 0700", fi.Mode())
	}
	for _, f := range []string{l.EncryptionConfig(), l.AuditPolicy(), l.Kubeconfig("admin"), l.Kubeconfig("scheduler"), l.Kubeconfig("controller-manager"), filepath.Join(l.PKI(), audit.SigningKeyFile)} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	if _, err := audit.LoadSigner(l.PKI()); err != nil {
		t.Errorf("audit signing key: %v", err)
	}
	if _, err := audit.LoadVerifier(filepath.Join(l.PKI(), audit.VerifierKeyFile)); err != nil {
		t.Errorf("audit verifier key: %v", err)
	}
	if _, err := audit.LoadPolicy(l.AuditPolicy()); err != nil {
		t.Errorf("written audit policy: %v", err)
	}
	ca, err := pki.LoadCA(l.PKI(), pki.ClusterCAName)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range Identities() {
		cfg, err := clientcmd.LoadFromFile(l.Kubeconfig(id.File))
		if err != nil {
			t.Fatal(err)
		}
		auth := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
		block, _ := pem.Decode(auth.ClientCertificateData)
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if cert.Subject.CommonName != id.User || !slices.Equal(cert.Subject.Organization, id.Groups) {
			t.Errorf("%s: subject %v, want CN %s O %v", id.File, cert.Subject, id.User, id.Groups)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s: client certificate: %v", id.File, err)
		}
		if len(cert.ExtKeyUsage) != 1 {
			t.Errorf("%s: usages %v, want client auth only", id.File, cert.ExtKeyUsage)
		}
	}

	before, _ := os.ReadFile(l.Kubeconfig("admin"))
	enc, _ := os.ReadFile(l.EncryptionConfig())
	changed, err = Init(o)
	if err != nil || len(changed) != 0 {
		t.Errorf("second Init: changed %v, err %v; want nothing", changed, err)
	}
	o.APIServerURL = "https://127.0.0.1:7443"
	changed, err = Init(o)
	if err != nil || len(changed) != 3 {
		t.Errorf("Init with a new URL: changed %v, err %v; want the three kubeconfigs", changed, err)
	}
	after, _ := os.ReadFile(l.Kubeconfig("admin"))
	cfgBefore, _ := clientcmd.Load(before)
	cfgAfter, _ := clientcmd.Load(after)
	if cfgAfter.Clusters["trustplane"].Server != o.APIServerURL {
		t.Errorf("server %s, want %s", cfgAfter.Clusters["trustplane"].Server, o.APIServerURL)
	}
	if !bytes.Equal(cfgBefore.AuthInfos["admin"].ClientKeyData, cfgAfter.AuthInfos["admin"].ClientKeyData) {
		t.Error("the admin key changed with the server URL")
	}
	if enc2, _ := os.ReadFile(l.EncryptionConfig()); !bytes.Equal(enc, enc2) {
		t.Error("the encryption config changed on a second Init")
	}
	if fi, _ := os.Stat(l.Kubeconfig("admin")); fi.Mode().Perm() != 0o600 {
		t.Errorf("rewritten kubeconfig mode %v, want 0600", fi.Mode().Perm())
	}
}

// Init installs the shipped policy library and its replication once; a
// policy directory that exists is the operator's, even emptied.
func TestInitInstallsThePolicyLibraryOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	o := Options{Dir: dir, APIServerURL: "https://127.0.0.1:6443"}
	if _, err := Init(o); err != nil {
		t.Fatal(err)
	}
	l := Layout{Dir: dir}
	for _, name := range []string{"secrets_namespace.rego", "secrets_namespace_test.rego", "replicate.yaml"} {
		if _, err := os.Stat(filepath.Join(l.Policies(), name)); err != nil {
			t.Errorf("%s not installed: %v", name, err)
		}
	}
	if fi, err := os.Stat(l.Policies()); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("policy directory %v, %v: want mode 0700", fi, err)
	}
	if err := os.Remove(filepath.Join(l.Policies(), "secrets_namespace.rego")); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(l.Policies(), "secrets_namespace.rego")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a removed policy came back: %v", err)
	}
}

func TestInitKMS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := Init(Options{Dir: dir, APIServerURL: "https://127.0.0.1:6443", Encryption: "rot13"}); err == nil {
		t.Error("Init with encryption rot13 succeeded")
	}
	changed, err := Init(Options{Dir: dir, APIServerURL: "https://127.0.0.1:6443", Encryption: EncryptionKMS})
	if err != nil {
		t.Fatal(err)
	}
	l := Layout{Dir: dir}
	if !slices.Contains(changed, filepath.Join("pki", "kms.key")) {
		t.Errorf("Init wrote %v, want pki/kms.key among them", changed)
	}
	fi, err := os.Stat(l.KMSKey())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("KMS key: %v, %v; want mode 0600", fi, err)
	}
	sockets, err := kms.Sockets(l.EncryptionConfig())
	abs, _ := filepath.Abs(l.KMSSocket())
	if err != nil || !slices.Equal(sockets, []string{abs}) {
		t.Errorf("the config's KMS sockets: %v, %v; want %s", sockets, err, abs)
	}
	// A second Init keeps both.
	key, _ := os.ReadFile(l.KMSKey())
	if _, err := Init(Options{Dir: dir, APIServerURL: "https://127.0.0.1:6443", Encryption: EncryptionKMS}); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(l.KMSKey()); string(again) != string(key) {
		t.Error("a second Init replaced the KMS key")
	}
}
