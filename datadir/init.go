package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/kms"
	"github.com/trustplane/trustplane/pki"
	"github.com/trustplane/trustplane/policies"
	"github.com/trustplane/trustplane/rbac"
)

// Options configures Init.
type Options struct {
	Dir string
	// Hosts are extra names and addresses for the serving certificates.
	Hosts []string
	// APIServerURL is the server the kubeconfigs point at.
	APIServerURL string
	CAValidity   time.Duration
	LeafValidity time.Duration
	// Encryption is the provider of a new encryption configuration:
	// "aesgcm" (the default, "" too), or "kms" for the KMS v2 plugin
	// trustplane runs, with its key in pki/kms.key. An existing
	// configuration is kept whatever it says.
	Encryption string
}

// The providers Options.Encryption may name.
const (
	EncryptionAESGCM = "aesgcm"
	EncryptionKMS    = "kms"
)

// Identity is a client identity that gets a kubeconfig.
type Identity struct {
	File   string // kubeconfig name, without .conf
	User   string
	Groups []string
}

// Identities are the kubeconfigs Init writes, a fresh list each call.
func Identities() []Identity {
	return []Identity{
		{File: "admin", User: "admin", Groups: []string{rbac.ClusterAdminsGroup}},
		{File: "scheduler", User: rbac.SchedulerUser},
		{File: "controller-manager", User: rbac.ControllerManagerUser},
	}
}

// Init creates what is missing of the data directory and keeps what
// exists: no key, certificate or configuration is ever replaced. The one
// thing it updates is the server URL in existing kubeconfigs, when the API
// server moved. It returns what it created or changed, relative to Dir.
func Init(o Options) ([]string, error) {
	if o.Dir == "" {
		return nil, errors.New("data directory is not set")
	}
	if o.APIServerURL == "" {
		return nil, errors.New("API server URL is not set")
	}
	if o.Encryption != "" && o.Encryption != EncryptionAESGCM && o.Encryption != EncryptionKMS {
		return nil, fmt.Errorf("encryption %q: want %s or %s", o.Encryption, EncryptionAESGCM, EncryptionKMS)
	}
	if o.CAValidity == 0 {
		o.CAValidity = pki.DefaultCAValidity
	}
	if o.LeafValidity == 0 {
		o.LeafValidity = pki.DefaultLeafValidity
	}
	l := Layout{Dir: o.Dir}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(o.Dir, 0o700); err != nil {
		return nil, err
	}
	tree, err := pki.Init(pki.Options{Dir: l.PKI(), Hosts: o.Hosts, CAValidity: o.CAValidity, LeafValidity: o.LeafValidity})
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, f := range tree.Created {
		changed = append(changed, filepath.Join("pki", f))
	}
	auditKeys, err := audit.EnsureSigningKey(l.PKI())
	if err != nil {
		return nil, err
	}
	for _, f := range auditKeys {
		changed = append(changed, filepath.Join("pki", f))
	}
	for _, id := range Identities() {
		did, err := ensureKubeconfig(l.Kubeconfig(id.File), tree.ClusterCA, id, o)
		if err != nil {
			return nil, err
		}
		if did != "" {
			changed = append(changed, id.File+".conf ("+did+")")
		}
	}
	newConfig := storage.NewEncryptionConfig
	if o.Encryption == EncryptionKMS {
		socket, err := filepath.Abs(l.KMSSocket())
		if err != nil {
			return nil, err
		}
		newConfig = func() ([]byte, error) { return kms.NewConfig(socket) }
	}
	created, err := ensureFile(l.EncryptionConfig(), newConfig)
	if err != nil {
		return nil, err
	}
	if created {
		changed = append(changed, filepath.Base(l.EncryptionConfig()))
	}
	if created && o.Encryption == EncryptionKMS {
		if err := kms.NewKeyFile(l.KMSKey()); err != nil {
			return nil, err
		}
		changed = append(changed, filepath.Join("pki", filepath.Base(l.KMSKey())))
	}
	if created, err := ensureFile(l.AuditPolicy(), func() ([]byte, error) { return []byte(audit.DefaultPolicy), nil }); err != nil {
		return nil, err
	} else if created {
		changed = append(changed, filepath.Base(l.AuditPolicy()))
	}
	if err := os.MkdirAll(filepath.Dir(l.AuditLog()), 0o700); err != nil {
		return nil, err
	}
	if created, err := ensurePolicies(l.Policies()); err != nil {
		return nil, err
	} else if created {
		changed = append(changed, filepath.Base(l.Policies())+"/")
	}
	return changed, nil
}

// ensurePolicies installs the shipped policy library, and the replication
// of the namespaces and ServiceAccounts it reads, when the admission
// policy directory does not exist. One that exists is the operator's,
// kept as it is, even empty.
func ensurePolicies(dir string) (bool, error) {
	if _, err := os.Stat(dir); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	// Written beside, then renamed: a directory that exists is whole.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".policies-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	files, err := policies.Files()
	if err != nil {
		return false, fmt.Errorf("install the policy library: %w", err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o600); err != nil {
			return false, err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, opa.ReplicationFile), []byte(replication), 0o600); err != nil {
		return false, err
	}
	if err := os.Chmod(tmp, 0o700); err != nil {
		return false, err
	}
	return true, os.Rename(tmp, dir)
}

// replication names what the shipped library reads besides its input.
const replication = `# The kinds the admission policies read as data.kubernetes.<resource>:
# the shipped library reads namespaces' labels and ServiceAccounts'
# annotations. Secrets are never replicated.
resources: [namespaces, serviceaccounts]
`

func ensureFile(path string, content func() ([]byte, error)) (bool, error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	data, err := content()
	if err != nil {
		return false, err
	}
	if err := pki.WriteFile(path, data, 0o600); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}

// ensureKubeconfig writes a kubeconfig with a fresh client certificate for
// id unless one exists; an existing one keeps its credentials and only has
// its server URL updated. It says what it did, or "" for nothing.
func ensureKubeconfig(path string, ca *pki.CA, id Identity, o Options) (string, error) {
	if existing, err := clientcmd.LoadFromFile(path); err == nil {
		changed := false
		for _, c := range existing.Clusters {
			if c.Server != o.APIServerURL {
				c.Server = o.APIServerURL
				changed = true
			}
		}
		if !changed {
			return "", nil
		}
		data, err := clientcmd.Write(*existing)
		if err != nil {
			return "", err
		}
		if err := replaceFile(path, data); err != nil {
			return "", err
		}
		return "server set to " + o.APIServerURL, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	certPEM, keyPEM, err := ca.Issue(pki.Request{CommonName: id.User, Organizations: id.Groups, Profile: pki.Client, Validity: o.LeafValidity})
	if err != nil {
		return "", err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["trustplane"] = &clientcmdapi.Cluster{Server: o.APIServerURL, CertificateAuthorityData: ca.CertPEM}
	cfg.AuthInfos[id.User] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[id.User+"@trustplane"] = &clientcmdapi.Context{Cluster: "trustplane", AuthInfo: id.User}
	cfg.CurrentContext = id.User + "@trustplane"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", err
	}
	if err := pki.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return "created", nil
}

// replaceFile writes data to path through a temporary file and a rename,
// keeping mode 0600.
func replaceFile(path string, data []byte) error {
	tmp := path + ".tmp"
	os.Remove(tmp)
	if err := pki.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
