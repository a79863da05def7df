package kms

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	kmsapi "k8s.io/kms/apis/v2"
	"k8s.io/kms/pkg/service"
	"sigs.k8s.io/yaml"
)

// Plugin is a KMS v2 service over the key-encryption keys of one key
// file: the first key seals, and every key of the file opens what it
// sealed, told by the key id the API server stores beside each value.
// It reloads the file when it changes (Serve looks every
// ReloadInterval): a new first key changes the key id Status reports,
// which is how the API server learns to generate a new data key. It is
// safe for concurrent use.
type Plugin struct {
	path   string
	logger *slog.Logger
	keys   atomic.Pointer[keyring]
	// mu serializes Reload and guards sum and failed.
	mu sync.Mutex
	// sum is the fingerprint of the file the running keys were read
	// from; failed, of the last file that did not load, so that it is
	// reported once.
	sum, failed [sha256.Size]byte
}

var _ service.Service = (*Plugin)(nil)

// keyring is the keys of one key file, the write key first.
type keyring struct {
	keys []kek
}

// kek is one key-encryption key.
type kek struct {
	id   string
	aead cipher.AEAD
}

// KeySize is the size of a key-encryption key: AES-256.
const KeySize = 32

// ReloadInterval is how often Serve looks at the key file: a read and a
// SHA-256 of a small file.
const ReloadInterval = 2 * time.Second

// notFound is err, answered over gRPC as NotFound: a definite refusal,
// which `secrets-encrypt verify` tells from a plugin it could not ask.
type notFound struct{ error }

func (e notFound) Unwrap() error { return e.error }

func (e notFound) GRPCStatus() *status.Status { return status.New(codes.NotFound, e.Error()) }

// ErrUnknownKey is a value sealed under a key the key file does not have
// (any more): it cannot be opened.
var ErrUnknownKey = errors.New("not in the key file")

// NewKeyFile writes a new random key to path, 0600; it never replaces a
// file.
func NewKeyFile(path string) error {
	line, _, err := newKey()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write KMS key: %w", err)
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("write KMS key: %w", err)
	}
	return f.Close()
}

// newKey is a random key as a line of the key file, and its id.
func newKey() (line, id string, err error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return "", "", fmt.Errorf("generate KMS key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(key), keyID(key), nil
}

// keyID is a key's public fingerprint: the API server stores it beside
// each value, and tells a key from another by it.
func keyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("trustplane kms key id\x00"), key...))
	return "trustplane-" + hex.EncodeToString(sum[:8])
}

// readKeyFile reads the key file at path: one key a line, 32 bytes in
// base64, the write key first; blank lines are skipped. It refuses a file
// that others than its owner may read or write, and one without a key or
// with the same key twice. Its errors name the file and the line, never
// a key.
func readKeyFile(path string) (*keyring, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("KMS key file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("KMS key file %s has mode %s: others may read it; it must be 0600", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("KMS key file: %w", err)
	}
	kr := &keyring{}
	seen := map[string]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(key) != KeySize {
			// Neither the content nor the decoder's error, which
			// quotes it.
			return nil, fmt.Errorf("KMS key file %s, line %d: not %d bytes in base64", path, i+1, KeySize)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("KMS key file %s, line %d: %w", path, i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("KMS key file %s, line %d: %w", path, i+1, err)
		}
		id := keyID(key)
		if seen[id] {
			return nil, fmt.Errorf("KMS key file %s, line %d: key %s is there twice", path, i+1, id)
		}
		seen[id] = true
		kr.keys = append(kr.keys, kek{id: id, aead: aead})
	}
	if len(kr.keys) == 0 {
		return nil, fmt.Errorf("KMS key file %s has no key", path)
	}
	return kr, nil
}

// fingerprint is a SHA-256 of the key file's mode and content: a change
// of either is a file to read again.
func fingerprint(path string) ([sha256.Size]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("KMS key file: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("KMS key file: %w", err)
	}
	return sha256.Sum256(append([]byte(fi.Mode().String()+"\x00"), data...)), nil
}

// Load reads the key file at path. logger hears of each reload.
func Load(path string, logger *slog.Logger) (*Plugin, error) {
	if logger == nil {
		return nil, errors.New("KMS plugin: logger is nil")
	}
	sum, err := fingerprint(path)
	if err != nil {
		return nil, err
	}
	kr, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	p := &Plugin{path: path, logger: logger, sum: sum}
	p.keys.Store(kr)
	return p, nil
}

// Reload reads the key file again if it changed since the running keys
// were read from it, and swaps its keys in. A file that does not load
// leaves the running keys and returns why, once: until it changes again,
// Reload reports no change.
func (p *Plugin) Reload() (changed bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sum, err := fingerprint(p.path)
	if err != nil {
		return false, err
	}
	if sum == p.sum || sum == p.failed {
		return false, nil
	}
	kr, err := readKeyFile(p.path)
	if err != nil {
		p.failed = sum
		return false, err
	}
	p.keys.Store(kr)
	p.sum, p.failed = sum, [sha256.Size]byte{}
	return true, nil
}

// KeyID is the write key's public fingerprint.
func (p *Plugin) KeyID() string { return p.keys.Load().keys[0].id }

// KeyIDs are the ids of every key of the file, the write key's first.
func (p *Plugin) KeyIDs() []string {
	kr := p.keys.Load()
	ids := make([]string, len(kr.keys))
	for i, k := range kr.keys {
		ids[i] = k.id
	}
	return ids
}

// Encrypt seals data (a data-encryption key) under the write key with a
// random nonce, its key id as additional data.
func (p *Plugin) Encrypt(_ context.Context, _ string, data []byte) (*service.EncryptResponse, error) {
	k := p.keys.Load().keys[0]
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	return &service.EncryptResponse{Ciphertext: k.aead.Seal(nonce, nonce, data, []byte(k.id)), KeyID: k.id}, nil
}

// Decrypt opens what Encrypt sealed under any key of the file. A key id
// the file does not have is ErrUnknownKey, named.
func (p *Plugin) Decrypt(_ context.Context, _ string, req *service.DecryptRequest) ([]byte, error) {
	var k *kek
	kr := p.keys.Load()
	for i := range kr.keys {
		if kr.keys[i].id == req.KeyID {
			k = &kr.keys[i]
		}
	}
	if k == nil {
		return nil, notFound{fmt.Errorf("decrypt: sealed under KMS key %q, which is %w %s (removed?)", req.KeyID, ErrUnknownKey, p.path)}
	}
	n := k.aead.NonceSize()
	if len(req.Ciphertext) < n {
		return nil, errors.New("decrypt: ciphertext too short")
	}
	out, err := k.aead.Open(nil, req.Ciphertext[:n], req.Ciphertext[n:], []byte(k.id))
	if err != nil {
		return nil, fmt.Errorf("decrypt under KMS key %s: %w", k.id, err)
	}
	return out, nil
}

// Status says the plugin is healthy, and its write key's id.
func (p *Plugin) Status(context.Context) (*service.StatusResponse, error) {
	return &service.StatusResponse{Version: "v2", Healthz: "ok", KeyID: p.KeyID()}, nil
}

// RotateKeyFile puts a new random key first in the key file at path,
// the write key from then on, and keeps the others, to open what they
// sealed. It replaces the file at once (a new 0600 file renamed over
// it), and returns the new key's id.
func RotateKeyFile(path string) (string, error) {
	unlock, err := lockKeyFile(path)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := readKeyFile(path); err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("KMS key file: %w", err)
	}
	line, id, err := newKey()
	if err != nil {
		return "", err
	}
	return id, replaceKeyFile(path, append([]byte(line+"\n"), data...))
}

// RemoveKey removes the key of id from the key file at path. It refuses
// the write key: what the API server writes must stay readable.
func RemoveKey(path, id string) error {
	unlock, err := lockKeyFile(path)
	if err != nil {
		return err
	}
	defer unlock()
	kr, err := readKeyFile(path)
	if err != nil {
		return err
	}
	if kr.keys[0].id == id {
		return fmt.Errorf("KMS key %s is the write key of %s: rotate-key first", id, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("KMS key file: %w", err)
	}
	var kept []string
	found := false
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(line)
		if err == nil && keyID(key) == id {
			found = true
			continue
		}
		kept = append(kept, line)
	}
	if !found {
		return fmt.Errorf("KMS key %s is %w %s", id, ErrUnknownKey, path)
	}
	return replaceKeyFile(path, []byte(strings.Join(kept, "\n")+"\n"))
}

// lockKeyFile takes an exclusive lock on the directory of path until the
// returned function is called or the process ends: two edits of the key
// file at once would each keep what the other does not see, and a key
// lost after the plugin sealed with it loses what it sealed.
func lockKeyFile(path string) (unlock func(), err error) {
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("lock KMS key file: %w", err)
	}
	if err := syscall.Flock(int(dir.Fd()), syscall.LOCK_EX); err != nil {
		dir.Close()
		return nil, fmt.Errorf("lock KMS key file: %w", err)
	}
	return func() { dir.Close() }, nil
}

// replaceKeyFile writes data to a new 0600 file beside path and renames
// it over path: a reader sees the old file or the new one, whole.
func replaceKeyFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write KMS key file: %w", err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// CreateTemp makes it 0600; said again, against a umask of 0.
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("write KMS key file: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write KMS key file: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write KMS key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write KMS key file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write KMS key file: %w", err)
	}
	ok = true
	return nil
}

// Listen opens the Unix socket at path, 0600; one left by a plugin that
// died is replaced.
func Listen(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("KMS socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("KMS socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("KMS socket: %w", err)
	}
	return ln, nil
}

// Serve answers the KMS v2 API on ln until ctx is done, then stops,
// letting calls in flight end, and closes ln. Meanwhile it reloads the
// key file every ReloadInterval, and logs each change, by key ids, and
// each file that does not load.
func (p *Plugin) Serve(ctx context.Context, ln net.Listener) error {
	gs := grpc.NewServer(grpc.ConnectionTimeout(10 * time.Second))
	kmsapi.RegisterKeyManagementServiceServer(gs, service.NewGRPCService(ln.Addr().String(), 10*time.Second, p))
	errc := make(chan error, 1)
	go func() { errc <- gs.Serve(ln) }()
	tick := time.NewTicker(ReloadInterval)
	defer tick.Stop()
	for {
		select {
		case err := <-errc:
			return fmt.Errorf("KMS plugin: %w", err)
		case <-tick.C:
			changed, err := p.Reload()
			switch {
			case err != nil:
				p.logger.ErrorContext(ctx, "KMS key file changed but not loaded; the running keys stay", "key_id", p.KeyID(), "err", err)
			case changed:
				p.logger.InfoContext(ctx, "KMS key file reloaded", "key_id", p.KeyID(), "key_ids", p.KeyIDs())
			}
			continue
		case <-ctx.Done():
		}
		gs.GracefulStop()
		<-errc
		return nil
	}
}

// Name is the KMS provider name trustplane init writes; it is in each
// value's prefix, k8s:enc:kms:v2:trustplane:.
const Name = "trustplane"

// NewConfig is an EncryptionConfiguration that encrypts Secrets with the
// KMS v2 provider at the Unix socket socketPath (absolute), and reads data
// stored before encryption through identity.
func NewConfig(socketPath string) ([]byte, error) {
	timeout := 3 * time.Second
	cfg := apiserverv1.EncryptionConfiguration{
		Resources: []apiserverv1.ResourceConfiguration{{
			Resources: []string{"secrets"},
			Providers: []apiserverv1.ProviderConfiguration{
				{KMS: &apiserverv1.KMSConfiguration{APIVersion: "v2", Name: Name, Endpoint: "unix://" + socketPath, Timeout: &metav1.Duration{Duration: timeout}}},
				{Identity: &apiserverv1.IdentityConfiguration{}},
			},
		}},
	}
	cfg.APIVersion, cfg.Kind = apiserverv1.SchemeGroupVersion.String(), "EncryptionConfiguration"
	return yaml.Marshal(cfg)
}

// Sockets are the Unix socket paths of the KMS v2 providers of the
// EncryptionConfiguration at path.
func Sockets(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("encryption config: %w", err)
	}
	var cfg apiserverv1.EncryptionConfiguration
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("encryption config %s: not an EncryptionConfiguration", path)
	}
	var out []string
	for _, rc := range cfg.Resources {
		for _, p := range rc.Providers {
			if p.KMS != nil && p.KMS.APIVersion == "v2" && strings.HasPrefix(p.KMS.Endpoint, "unix://") {
				out = append(out, strings.TrimPrefix(p.KMS.Endpoint, "unix://"))
			}
		}
	}
	return out, nil
}
