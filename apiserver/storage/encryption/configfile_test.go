package encryption

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func keyNames(f *configFile, rule int) []string {
	var out []string
	for _, k := range *f.keys(rule) {
		out = append(out, k.Name)
	}
	return out
}

// TestConfigFileEdits walks a rule through a rotation's edits, with a
// second rule (identity first) that a rotation leaves alone.
func TestConfigFileEdits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "encryption-config.yaml")
	const secret = "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="
	if err := os.WriteFile(path, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aesgcm:
      keys:
      - {name: key7, secret: `+secret+`}
      - {name: old, secret: `+secret+`}
  - identity: {}
- resources: [configmaps]
  providers:
  - identity: {}
  - aescbc:
      keys:
      - {name: key9, secret: `+secret+`}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := readConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.aesgcmRules(); !slices.Equal(got, []int{0}) {
		t.Fatalf("aesgcm rules %v, want [0]", got)
	}
	name := f.nextKeyName()
	if name != "key10" {
		t.Errorf("next key name %s, want key10: above every key<N> of the file", name)
	}
	steps := []struct {
		edit func(*configFile, int, string) (bool, error)
		want []string
	}{
		{(*configFile).addKey, []string{"key7", "key10", "old"}},
		{(*configFile).addKey, []string{"key7", "key10", "old"}},
		{(*configFile).promote, []string{"key10", "key7", "old"}},
		{(*configFile).promote, []string{"key10", "key7", "old"}},
		{(*configFile).removeOthers, []string{"key10"}},
		{(*configFile).removeOthers, []string{"key10"}},
	}
	for i, s := range steps {
		changed, err := s.edit(f, 0, name)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := keyNames(f, 0); !slices.Equal(got, s.want) {
			t.Errorf("step %d: keys %v, want %v", i, got, s.want)
		}
		// Each edit is done once; again, it changes nothing.
		if changed != (i%2 == 0) {
			t.Errorf("step %d: changed = %v", i, changed)
		}
		if err := f.write(); err != nil {
			t.Fatal(err)
		}
		if f, err = readConfigFile(path); err != nil {
			t.Fatalf("step %d: the written file does not read: %v", i, err)
		}
	}
	if _, err := f.promote(0, "absent"); err == nil {
		t.Error("promote of an absent key succeeded")
	}
	if _, err := f.removeOthers(0, "absent"); err == nil {
		t.Error("removeOthers keeping an absent key succeeded")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("written file: %v, %v; want mode 0600", fi, err)
	}
	if k := (*f.keys(0))[0]; len(k.Secret) != 44 || k.Secret == secret {
		t.Errorf("the new key's secret is not a fresh 32-byte key")
	}
}
