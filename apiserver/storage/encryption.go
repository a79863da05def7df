package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"
	"sigs.k8s.io/yaml"
)

// encryptedPrefix starts every value an encrypting provider writes, as
// kube-apiserver writes it (k8s:enc:aesgcm:v1:<key>:...).
var encryptedPrefix = []byte("k8s:enc:")

var secrets = schema.GroupResource{Resource: "secrets"}

// EncryptionReloadInterval is how often Encryption.Run looks at the
// configuration file. A look is a read and a SHA-256 of a small file; the
// loader runs only when the sum changed.
const EncryptionReloadInterval = 2 * time.Second

// NewEncryptionConfig returns an apiserver.config.k8s.io/v1
// EncryptionConfiguration that encrypts Secrets with AES-GCM under a fresh
// random 32-byte key, and reads data stored before encryption through the
// identity provider.
func NewEncryptionConfig() ([]byte, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate encryption key: %w", err)
	}
	cfg := apiserverv1.EncryptionConfiguration{
		TypeMeta: metav1.TypeMeta{Kind: "EncryptionConfiguration", APIVersion: apiserverv1.SchemeGroupVersion.String()},
		Resources: []apiserverv1.ResourceConfiguration{{
			Resources: []string{"secrets"},
			Providers: []apiserverv1.ProviderConfiguration{
				{AESGCM: &apiserverv1.AESConfiguration{Keys: []apiserverv1.Key{{Name: "key1", Secret: base64.StdEncoding.EncodeToString(key)}}}},
				{Identity: &apiserverv1.IdentityConfiguration{}},
			},
		}},
	}
	return yaml.Marshal(cfg)
}

// Encryption is the running encryption-at-rest configuration, read from
// an EncryptionConfiguration file with k8s.io/apiserver's loader, which
// gives the providers, their on-disk formats and the resource wildcards.
// Reload swaps in a new configuration when the file changes, atomically:
// each transformation runs whole under one configuration. A file that does
// not load, or that would store Secrets in plain text, leaves the running
// configuration in place.
//
// Encryption is safe for concurrent use.
type Encryption struct {
	path        string
	logger      *slog.Logger
	transformer *encryptionconfig.DynamicTransformers
	// hash is the loader's content hash ("sha256:<hex>") of the file the
	// running configuration was read from.
	hash atomic.Pointer[string]
	// mu serializes Reload and guards failed.
	mu sync.Mutex
	// failed is the hash of the last file that did not load, so that the
	// same file is not loaded and logged again until it changes.
	failed string
	// wear counts the values each AES-GCM key encrypts.
	wear *Wear
}

var _ value.ResourceTransformers = (*Encryption)(nil)

// LoadEncryption reads the EncryptionConfiguration at path. It fails
// unless Secrets are encrypted: a configuration whose first provider for
// Secrets is identity would store them in plain text. ctx bounds the life
// of the transformers (a KMS plugin's connection), and of those Reload
// loads with it: cancel it when the server stops.
func LoadEncryption(ctx context.Context, path string, logger *slog.Logger) (*Encryption, error) {
	if path == "" {
		return nil, errors.New("encryption config file is not set")
	}
	if logger == nil {
		return nil, errors.New("encryption config: logger is nil")
	}
	cfg, closeTransformers, err := loadEncryption(ctx, path)
	if err != nil {
		return nil, err
	}
	e := &Encryption{
		path:        path,
		logger:      logger,
		transformer: encryptionconfig.NewDynamicTransformers(cfg.Transformers, cfg.HealthChecks[0], closeTransformers, cfg.KMSCloseGracePeriod),
		wear:        newWear(logger),
	}
	e.hash.Store(&cfg.EncryptionFileContentHash)
	return e, nil
}

// loadEncryption loads and checks the file at path. Its transformers live
// until the returned function is called, or ctx is done.
func loadEncryption(ctx context.Context, path string) (*encryptionconfig.EncryptionConfiguration, context.CancelFunc, error) {
	ctx, cancel := context.WithCancel(ctx)
	// reload: the file may change while the server runs; the loader then
	// refuses KMS v1, as kube-apiserver's automatic reload does, and
	// returns one health check for all the KMS plugins.
	cfg, err := encryptionconfig.LoadEncryptionConfig(ctx, path, true, "trustplane")
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("encryption config %s: %w", path, err)
	}
	if err := checkEncryption(ctx, cfg); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("encryption config %s: %w", path, err)
	}
	return cfg, cancel, nil
}

// checkEncryption fails unless cfg encrypts Secrets, whether named or
// covered by a wildcard.
func checkEncryption(ctx context.Context, cfg *encryptionconfig.EncryptionConfiguration) error {
	if len(cfg.HealthChecks) != 1 {
		return fmt.Errorf("%d health checks, want one", len(cfg.HealthChecks))
	}
	_, named := cfg.Transformers[secrets]
	_, group := cfg.Transformers[schema.GroupResource{Resource: "*"}]
	_, all := cfg.Transformers[schema.GroupResource{Group: "*", Resource: "*"}]
	if !named && !group && !all {
		return errors.New("no provider covers secrets; they would be stored in plain text")
	}
	t := encryptionconfig.StaticTransformers(cfg.Transformers).TransformerForResource(secrets)
	probe, err := t.TransformToStorage(ctx, []byte("probe"), value.DefaultContext("/registry/secrets/probe"))
	if err != nil {
		return fmt.Errorf("encrypt secrets: %w", err)
	}
	if !bytes.HasPrefix(probe, encryptedPrefix) {
		return errors.New("the first provider for secrets is identity; they would be stored in plain text")
	}
	return nil
}

// TransformerForResource is the transformer of gr's objects under the
// running configuration, whichever it is when a value passes through it.
// A resource no provider covers is stored as it is, and a value of it
// that is encrypted fails to read. Each value it encrypts with AES-GCM
// counts in the key's wear.
func (e *Encryption) TransformerForResource(gr schema.GroupResource) value.Transformer {
	return countingTransformer{Transformer: e.transformer.TransformerForResource(gr), wear: e.wear}
}

// Check is nil while every KMS plugin of the running configuration
// answers, as kube-apiserver's kms-providers health check; a
// configuration without KMS always passes. It caches a plugin's answer
// for up to 20 seconds.
func (e *Encryption) Check(r *http.Request) error { return e.transformer.Check(r) }

// Wear is the count of the values each AES-GCM key has encrypted.
func (e *Encryption) Wear() *Wear { return e.wear }

// Hash is the content hash, "sha256:<hex>" of the file's bytes, of the
// configuration in force: the hash kube-apiserver reports in
// apiserver_encryption_config_controller_last_config_info.
func (e *Encryption) Hash() string { return *e.hash.Load() }

// Reload loads the file again if it changed since the running
// configuration was read, and swaps the new one in; the one it replaces
// is closed once the requests that may still use it are done. A file that
// does not load leaves the running configuration and returns why, once:
// until it changes again, Reload reports no change. changed is whether
// the configuration in force changed. ctx bounds the life of the new
// transformers, as LoadEncryption's.
func (e *Encryption) Reload(ctx context.Context) (changed bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	// The loader's hash of the file, or what stops it being read, so
	// that a file that stays unreadable is reported once too.
	var sum string
	data, err := os.ReadFile(e.path)
	if err == nil {
		sum = fmt.Sprintf("sha256:%x", sha256.Sum256(data))
	} else {
		sum = "unreadable: " + err.Error()
	}
	if sum == e.Hash() || sum == e.failed {
		return false, nil
	}
	if err != nil {
		e.failed = sum
		return false, fmt.Errorf("encryption config: %w", err)
	}
	cfg, closeTransformers, err := loadEncryption(ctx, e.path)
	if err != nil {
		e.failed = sum
		return false, err
	}
	if cfg.EncryptionFileContentHash == e.Hash() {
		// Changed back between the look and the load.
		closeTransformers()
		return false, nil
	}
	e.transformer.Set(cfg.Transformers, closeTransformers, cfg.HealthChecks[0], cfg.KMSCloseGracePeriod)
	e.hash.Store(&cfg.EncryptionFileContentHash)
	e.failed = ""
	return true, nil
}

// Run reloads the configuration every interval until ctx is done, and
// logs each change and each file that does not load. The errors name the
// file and the field at fault, never a key: the loader redacts them.
func (e *Encryption) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := e.Reload(ctx)
		switch {
		case err != nil:
			e.logger.ErrorContext(ctx, "encryption config changed but not loaded; the running configuration stays", "hash", e.Hash(), "err", err)
		case changed:
			e.logger.InfoContext(ctx, "encryption config reloaded", "file", e.path, "hash", e.Hash())
		}
	}
}

// EncryptionServersPrefix is where each running API server records the
// hash of the encryption configuration in force, at
// EncryptionServersPrefix<server id>, for as long as it runs: a
// rotation waits until every server that shares the etcd has loaded the
// file it wrote. It is no resource's prefix.
const EncryptionServersPrefix = Prefix + "trustplane.io/encryption-config/"

// EncryptionServer is the record of one API server under
// EncryptionServersPrefix.
type EncryptionServer struct {
	// Hash is Encryption.Hash of the server's running configuration.
	Hash string `json:"hash"`
}

// encryptionServerTTL is the life of a server's record once it stops
// renewing it: a server that died is no longer waited for after it.
const encryptionServerTTL = 20 * time.Second

// Publish records the hash of the running configuration as server id's,
// and again each time it changes, in a key attached to a lease that it
// keeps alive, until ctx is done; then it revokes the lease, and the
// record goes. A lost lease is granted again.
func (e *Encryption) Publish(ctx context.Context, client *clientv3.Client, id string) {
	for {
		err := e.publish(ctx, client, EncryptionServersPrefix+id)
		if ctx.Err() != nil {
			return
		}
		e.logger.WarnContext(ctx, "encryption config record lost; recording it again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// publish keeps key up to date under one lease until ctx is done or the
// lease is lost.
func (e *Encryption) publish(ctx context.Context, client *clientv3.Client, key string) error {
	callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	lease, err := client.Grant(callCtx, int64(encryptionServerTTL/time.Second))
	cancel()
	if err != nil {
		return fmt.Errorf("grant lease: %w", err)
	}
	defer func() {
		// Gone at once rather than when the lease expires: a stopped
		// server is not waited for.
		revokeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		client.Revoke(revokeCtx, lease.ID)
	}()
	alive, err := client.KeepAlive(ctx, lease.ID)
	if err != nil {
		return fmt.Errorf("keep lease alive: %w", err)
	}
	// The hash changes rarely; looking at it is an atomic load.
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	recorded := ""
	for {
		if h := e.Hash(); h != recorded {
			data, err := json.Marshal(EncryptionServer{Hash: h})
			if err != nil {
				return err
			}
			callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err = client.Put(callCtx, key, string(data), clientv3.WithLease(lease.ID))
			cancel()
			if err != nil {
				return fmt.Errorf("record %s: %w", key, err)
			}
			recorded = h
		}
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-alive:
			if !ok {
				return errors.New("lease keep-alive ended")
			}
		case <-tick.C:
		}
	}
}

// Providers a stored value's prefix may name, with the versions of their
// formats, as kube-apiserver writes them.
var providerVersions = map[string][]string{
	"aesgcm":    {"v1"},
	"aescbc":    {"v1"},
	"secretbox": {"v1"},
	"kms":       {"v1", "v2"},
}

// StoredKey is the provider and key name a stored value's prefix names
// (k8s:enc:aesgcm:v1:<key>:...): both "" for a value in plain text, and
// provider "unknown" for an encrypted prefix of no provider above. It
// reads the prefix alone.
func StoredKey(value []byte) (provider, name string) {
	rest, ok := bytes.CutPrefix(value, encryptedPrefix)
	if !ok {
		return "", ""
	}
	// <provider>:<version>:<key>:<ciphertext>; a key name has no colon.
	parts := bytes.SplitN(rest, []byte(":"), 4)
	if len(parts) == 4 {
		if versions, ok := providerVersions[string(parts[0])]; ok && slices.Contains(versions, string(parts[1])) {
			return string(parts[0]), string(parts[2])
		}
	}
	return "unknown", ""
}

// undecryptable explains why the value data of key does not read: the
// object, and the provider and key it is stored under, which the running
// configuration lacks or which does not decrypt it. cause is the
// transformer's error; none of it holds key material or data.
func undecryptable(key string, data []byte, cause error) error {
	resource, name, _ := strings.Cut(strings.TrimPrefix(key, Prefix), "/")
	object := resource + " " + name
	provider, keyName := StoredKey(data)
	switch {
	case provider == "":
		return fmt.Errorf("%s is stored in plain text and does not read: %w", object, cause)
	case provider == "unknown":
		return fmt.Errorf("%s is stored under an unknown provider: %w", object, cause)
	case strings.Contains(cause.Error(), "no matching"):
		// The loader's prefix transformers say so when no provider or
		// key of the configuration has the value's prefix.
		return fmt.Errorf("%s is stored under %s key %s, which is not in the configuration", object, provider, keyName)
	}
	return fmt.Errorf("%s is stored under %s key %s and does not decrypt with it (damaged, or copied from another object): %w", object, provider, keyName, cause)
}
