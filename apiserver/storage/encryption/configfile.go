package encryption

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"sigs.k8s.io/yaml"
)

// configFile is the EncryptionConfiguration file as a rotation edits it.
// It holds key material: nothing of it but key names is ever printed.
type configFile struct {
	path string
	cfg  *apiserverv1.EncryptionConfiguration
}

func readConfigFile(path string) (*configFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("encryption config: %w", err)
	}
	cfg, err := parseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("encryption config %s: %w", path, err)
	}
	return &configFile{path: path, cfg: cfg}, nil
}

// fileHash is the loader's hash of the file's bytes, the one the API
// servers record.
func fileHash(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("encryption config: %w", err)
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256(data)), nil
}

// aesgcmRules are the indexes of the rules whose first provider is
// AES-GCM: those a rotation rotates.
func (f *configFile) aesgcmRules() []int {
	var out []int
	for i, rc := range f.cfg.Resources {
		if len(rc.Providers) > 0 && rc.Providers[0].AESGCM != nil {
			out = append(out, i)
		}
	}
	return out
}

var numberedKey = regexp.MustCompile(`^key([0-9]+)$`)

// nextKeyName is key<N>, N one more than the largest of the file's
// key<N> names: unique in the file.
func (f *configFile) nextKeyName() string {
	n := 0
	for _, rc := range f.cfg.Resources {
		for _, p := range rc.Providers {
			for _, ks := range [][]apiserverv1.Key{aesKeys(p.AESGCM), aesKeys(p.AESCBC), boxKeys(p.Secretbox)} {
				for _, k := range ks {
					if m := numberedKey.FindStringSubmatch(k.Name); m != nil {
						if v, err := strconv.Atoi(m[1]); err == nil && v > n {
							n = v
						}
					}
				}
			}
		}
	}
	return "key" + strconv.Itoa(n+1)
}

func aesKeys(c *apiserverv1.AESConfiguration) []apiserverv1.Key {
	if c == nil {
		return nil
	}
	return c.Keys
}

func boxKeys(c *apiserverv1.SecretboxConfiguration) []apiserverv1.Key {
	if c == nil {
		return nil
	}
	return c.Keys
}

// keys are rule i's AES-GCM keys; the rule's first provider is AES-GCM.
func (f *configFile) keys(i int) *[]apiserverv1.Key {
	return &f.cfg.Resources[i].Providers[0].AESGCM.Keys
}

func keyIndex(keys []apiserverv1.Key, name string) int {
	return slices.IndexFunc(keys, func(k apiserverv1.Key) bool { return k.Name == name })
}

// addKey gives rule i a new random 32-byte key named name, second: read,
// not yet written. It reports whether the file changed.
func (f *configFile) addKey(i int, name string) (bool, error) {
	keys := f.keys(i)
	if keyIndex(*keys, name) >= 0 {
		return false, nil
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return false, fmt.Errorf("generate key %s: %w", name, err)
	}
	k := apiserverv1.Key{Name: name, Secret: base64.StdEncoding.EncodeToString(secret)}
	*keys = slices.Insert(*keys, min(1, len(*keys)), k)
	return true, nil
}

// promote makes name rule i's write key, first.
func (f *configFile) promote(i int, name string) (bool, error) {
	keys := f.keys(i)
	at := keyIndex(*keys, name)
	switch {
	case at < 0:
		return false, fmt.Errorf("rule %d of %s has no key %s", i, f.path, name)
	case at == 0:
		return false, nil
	}
	k := (*keys)[at]
	*keys = slices.Insert(slices.Delete(*keys, at, at+1), 0, k)
	return true, nil
}

// removeOthers leaves name, the write key, alone in rule i's AES-GCM
// provider.
func (f *configFile) removeOthers(i int, name string) (bool, error) {
	keys := f.keys(i)
	if keyIndex(*keys, name) != 0 {
		return false, fmt.Errorf("rule %d of %s does not write with key %s", i, f.path, name)
	}
	if len(*keys) == 1 {
		return false, nil
	}
	*keys = (*keys)[:1]
	return true, nil
}

// write replaces the file: a new one, 0600, renamed over it, so that a
// server never reads half of it.
func (f *configFile) write() error {
	data, err := yaml.Marshal(f.cfg)
	if err != nil {
		return fmt.Errorf("encode encryption config: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".encryption-config-")
	if err != nil {
		return fmt.Errorf("write encryption config: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write encryption config: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write encryption config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write encryption config: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("write encryption config: %w", err)
	}
	return nil
}
