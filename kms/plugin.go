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
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	kmsapi "k8s.io/kms/apis/v2"
	"k8s.io/kms/pkg/service"
	"sigs.k8s.io/yaml"
)

// Plugin is a KMS v2 service over one key-encryption key. It is safe for
// concurrent use.
type Plugin struct {
	aead  cipher.AEAD
	keyID string
}

var _ service.Service = (*Plugin)(nil)

// NewKeyFile writes a new random key to path, 0600; it never replaces a
// file.
func NewKeyFile(path string) error {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("generate KMS key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write KMS key: %w", err)
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("write KMS key: %w", err)
	}
	return f.Close()
}

// Load reads the key at path. It refuses a file that others than its
// owner may read or write.
func Load(path string) (*Plugin, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("KMS key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("KMS key %s has mode %s: others may read it; it must be 0600", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("KMS key: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) != 32 {
		// Neither the content nor the decoder's error, which quotes it.
		return nil, fmt.Errorf("KMS key %s is not 32 bytes in base64", path)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("KMS key %s: %w", path, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("KMS key %s: %w", path, err)
	}
	// A fingerprint: the API server stores it beside each value, and
	// tells a key from another by it.
	sum := sha256.Sum256(append([]byte("trustplane kms key id\x00"), key...))
	return &Plugin{aead: aead, keyID: "trustplane-" + hex.EncodeToString(sum[:8])}, nil
}

// KeyID is the key's public fingerprint.
func (p *Plugin) KeyID() string { return p.keyID }

// Encrypt seals data (a data-encryption key) with a random nonce, the key
// id as additional data.
func (p *Plugin) Encrypt(_ context.Context, _ string, data []byte) (*service.EncryptResponse, error) {
	nonce := make([]byte, p.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	return &service.EncryptResponse{Ciphertext: p.aead.Seal(nonce, nonce, data, []byte(p.keyID)), KeyID: p.keyID}, nil
}

// Decrypt opens what Encrypt sealed under this key.
func (p *Plugin) Decrypt(_ context.Context, _ string, req *service.DecryptRequest) ([]byte, error) {
	if req.KeyID != p.keyID {
		return nil, fmt.Errorf("decrypt: sealed under KMS key %q, not this plugin's %q", req.KeyID, p.keyID)
	}
	n := p.aead.NonceSize()
	if len(req.Ciphertext) < n {
		return nil, errors.New("decrypt: ciphertext too short")
	}
	out, err := p.aead.Open(nil, req.Ciphertext[:n], req.Ciphertext[n:], []byte(p.keyID))
	if err != nil {
		return nil, fmt.Errorf("decrypt under KMS key %s: %w", p.keyID, err)
	}
	return out, nil
}

// Status says the plugin is healthy, and its key id.
func (p *Plugin) Status(context.Context) (*service.StatusResponse, error) {
	return &service.StatusResponse{Version: "v2", Healthz: "ok", KeyID: p.keyID}, nil
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
// letting calls in flight end, and closes ln.
func (p *Plugin) Serve(ctx context.Context, ln net.Listener) error {
	gs := grpc.NewServer(grpc.ConnectionTimeout(10 * time.Second))
	kmsapi.RegisterKeyManagementServiceServer(gs, service.NewGRPCService(ln.Addr().String(), 10*time.Second, p))
	errc := make(chan error, 1)
	go func() { errc <- gs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("KMS plugin: %w", err)
	case <-ctx.Done():
	}
	gs.GracefulStop()
	<-errc
	return nil
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
