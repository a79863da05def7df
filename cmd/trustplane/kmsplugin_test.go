package main

import (
	"log/slog"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"

	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/etcd/etcdtest"
	"github.com/trustplane/trustplane/kms"
)

// TestKMSPluginRotateAndRemoveKey: rotate-key puts a new key first and
// names it by id; remove-key removes an old one once no object in etcd is
// under it, and refuses while one is, the write key, a key the file
// lacks, or none named; no output holds a key.
func TestKMSPluginRotateAndRemoveKey(t *testing.T) {
	e := etcdtest.Start(t)
	dir := e.Dir
	l := datadir.Layout{Dir: dir}
	if err := kms.NewKeyFile(l.KMSKey()); err != nil {
		t.Fatal(err)
	}
	config, err := kms.NewConfig(l.KMSSocket())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.EncryptionConfig(), config, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := datadir.WriteEtcdServers(l, e.ClientConfig.Endpoints); err != nil {
		t.Fatal(err)
	}
	first := strings.TrimSpace(readString(t, l.KMSKey()))
	oldID := keyIDs(t, l.KMSKey())[0]
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
	if ids := keyIDs(t, l.KMSKey()); ids[0] != newID || ids[1] != oldID {
		t.Errorf("rotate-key said %s, the file's keys are %v", newID, ids)
	}

	// A Secret still under the old key id.
	sealed, err := proto.Marshal(&kmstypes.EncryptedObject{EncryptedData: []byte("sealed"), KeyID: oldID, EncryptedDEKSource: []byte("dek"), EncryptedDEKSourceType: kmstypes.EncryptedDEKSourceType_AES_GCM_KEY})
	if err != nil {
		t.Fatal(err)
	}
	key := storage.Key(secretsGR, "team-a", "db")
	if _, err := e.Client(t).Put(t.Context(), key, "k8s:enc:kms:v2:trustplane:"+string(sealed)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"remove-key", "--dir", dir, "--key-id", oldID}, 1, "still stored under key " + oldID + " (1 of secrets)"},
		{[]string{"remove-key", "--dir", dir}, 2, "--key-id is required"},
		{[]string{"remove-key", "--dir", dir, "--key-id", newID}, 2, "write key"},
		{[]string{"remove-key", "--dir", dir, "--key-id", "trustplane-0000000000000000"}, 2, "not in the key file"},
	} {
		if out, code := run(tt.args...); code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tt.args, code, out, tt.code, tt.want)
		}
	}
	if got := keyIDs(t, l.KMSKey()); len(got) != 2 {
		t.Fatalf("a refused remove-key changed the file: %v", got)
	}
	if _, err := e.Client(t).Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if out, code := run("remove-key", "--dir", dir, "--key-id", oldID); code != 0 {
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
