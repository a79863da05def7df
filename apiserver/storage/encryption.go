package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

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

// LoadEncryption reads an EncryptionConfiguration with k8s.io/apiserver's
// loader and returns the transformer of each resource it covers. It fails
// unless Secrets are encrypted: a configuration whose first provider for
// Secrets is identity would store them in plain text.
func LoadEncryption(ctx context.Context, path string) (map[schema.GroupResource]value.Transformer, error) {
	if path == "" {
		return nil, fmt.Errorf("encryption config file is not set")
	}
	cfg, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, "trustplane")
	if err != nil {
		return nil, fmt.Errorf("encryption config %s: %w", path, err)
	}
	t, ok := cfg.Transformers[secrets]
	if !ok {
		return nil, fmt.Errorf("encryption config %s: no provider covers secrets; they would be stored in plain text", path)
	}
	probe, err := t.TransformToStorage(ctx, []byte("probe"), value.DefaultContext("/registry/secrets/probe"))
	if err != nil {
		return nil, fmt.Errorf("encryption config %s: encrypt secrets: %w", path, err)
	}
	if !bytes.HasPrefix(probe, encryptedPrefix) {
		return nil, fmt.Errorf("encryption config %s: the first provider for secrets is identity; they would be stored in plain text", path)
	}
	return cfg.Transformers, nil
}
