package main

import (
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/kms"
)

// TestKMSPluginRotateAndRemoveKey: rotate-key puts a new key first and
// names it by id, remove-key removes an old one and refuses the write key,
// a key the file lacks, or none named; no output holds a key.
func TestKMSPluginRotateAndRemoveKey(t *testing.T) {
	dir := t.TempDir()
	l := datadir.Layout{Dir: dir}
	if err := kms.NewKeyFile(l.KMSKey()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(l.KMSKey())
	if err != nil {
		t.Fatal(err)
	}
	first := strings.TrimSpace(string(data))
	var outputs []string
	run := func(args ...string) (string, int) {
		out, errOut, code := runRoot(t, append([]string{"kms-plugin"}, args...)...)
		outputs = append(outputs, out, errOut)
		return out + errOut, code
	}

	out, code := run("rotate-key", "--dir", dir)
	if code != 0 || !strings.HasPrefix(out, "new write key trustplane-") {
		t.Fatalf("rotate-key: exit %d\n%s", code, out)
	}
	newID := strings.Fields(out)[3]
	keys := strings.Fields(readString(t, l.KMSKey()))
	if len(keys) != 2 || keys[1] != first {
		t.Fatalf("after rotate-key the file has %d keys, the old one second: %v", len(keys), keys[1] == first)
	}
	ids := keyIDs(t, l.KMSKey())
	if ids[0] != newID {
		t.Errorf("rotate-key said %s, the file's write key is %s", newID, ids[0])
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"remove-key", "--dir", dir}, "--key-id is required"},
		{[]string{"remove-key", "--dir", dir, "--key-id", newID}, "write key"},
		{[]string{"remove-key", "--key-file", l.KMSKey(), "--key-id", "trustplane-0000000000000000"}, "not in the key file"},
	} {
		if out, code := run(tt.args...); code != 2 || !strings.Contains(out, tt.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tt.args, code, out, tt.want)
		}
	}
	if out, code := run("remove-key", "--key-file", l.KMSKey(), "--key-id", ids[1]); code != 0 {
		t.Fatalf("remove-key of the old key: exit %d\n%s", code, out)
	}
	if got := keyIDs(t, l.KMSKey()); len(got) != 1 || got[0] != newID {
		t.Errorf("after remove-key the keys are %v, want %s alone", got, newID)
	}
	if err := os.Chmod(l.KMSKey(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := run("rotate-key", "--dir", dir); code != 2 || !strings.Contains(out, "0600") {
		t.Errorf("rotate-key of a 0644 file: exit %d, %q; want a refusal", code, out)
	}
	for _, o := range outputs {
		for _, k := range keys {
			if strings.Contains(o, k) {
				t.Errorf("an output holds a key: %s", o)
			}
		}
	}
}

// keyIDs are the ids of the keys of the file at path, the write key's
// first.
func keyIDs(t *testing.T, path string) []string {
	t.Helper()
	p, err := kms.Load(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return p.KeyIDs()
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
