package encryption

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/etcd/etcdtest"
)

// etcdRewriter does in etcd what the API server does for a rewrite: it
// writes the value again under the write key, held to the revision, or
// refuses with ErrChanged. before, if set, runs first: a concurrent
// writer.
type etcdRewriter struct {
	cli      *clientv3.Client
	writeKey string
	// put, if set, is the value written for key, instead of one under
	// aesgcm writeKey.
	put    func(key string) string
	calls  atomic.Int32
	before func(key string)
}

var _ Rewriter = (*etcdRewriter)(nil)

func (e *etcdRewriter) Rewrite(ctx context.Context, gr schema.GroupResource, namespace, name string, rev int64) error {
	e.calls.Add(1)
	key := storage.Key(gr, namespace, name)
	if e.before != nil {
		e.before(key)
	}
	value := "k8s:enc:aesgcm:v1:" + e.writeKey + ":sealed"
	if e.put != nil {
		value = e.put(key)
	}
	resp, err := e.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
		Then(clientv3.OpPut(key, value)).
		Else(clientv3.OpGet(key)).Commit()
	switch {
	case err != nil:
		return err
	case resp.Succeeded:
		return nil
	case len(resp.Responses[0].GetResponseRange().Kvs) == 0:
		return nil // gone
	}
	return ErrChanged
}

// TestRewriteOneHoldsToTheRevision: an object that changed since the scan
// is read again, and rewritten at its new revision only if the write that
// changed it did not use the new key; a deleted one is done; one that
// never stops changing is an error that names it, not a loop.
func TestRewriteOneHoldsToTheRevision(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	ctx := t.Context()
	newKey := Key{Provider: AESGCM, Name: "key2"}
	put := func(name, value string) Object {
		t.Helper()
		key := storage.Key(secrets, "ns", name)
		resp, err := cli.Put(ctx, key, value)
		if err != nil {
			t.Fatal(err)
		}
		return Object{Resource: secrets, Name: "ns/" + name, Under: KeyOf([]byte(value)), Rev: resp.Header.Revision}
	}
	under := func(name string) Key {
		t.Helper()
		resp, err := cli.Get(ctx, storage.Key(secrets, "ns", name))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get %s: %v %v", name, resp, err)
		}
		return KeyOf(resp.Kvs[0].Value)
	}
	old := "k8s:enc:aesgcm:v1:key1:sealed"

	tests := []struct {
		name string
		// before runs before each rewrite the fake server makes.
		before    func(t *testing.T, key string, call int32)
		wantCalls int32
		wantErr   string
		gone      bool
	}{
		{name: "unchanged", wantCalls: 1},
		{name: "changed under the old key", wantCalls: 2, before: func(t *testing.T, key string, call int32) {
			if call == 1 {
				if _, err := cli.Put(ctx, key, old); err != nil {
					t.Error(err)
				}
			}
		}},
		{name: "changed under the new key", wantCalls: 1, before: func(t *testing.T, key string, call int32) {
			if _, err := cli.Put(ctx, key, "k8s:enc:aesgcm:v1:key2:by-a-writer"); err != nil {
				t.Error(err)
			}
		}},
		{name: "deleted", wantCalls: 1, gone: true, before: func(t *testing.T, key string, call int32) {
			if _, err := cli.Delete(ctx, key); err != nil {
				t.Error(err)
			}
		}},
		{name: "never stops changing", wantCalls: MaxConflicts + 1, wantErr: "changed 21 times", before: func(t *testing.T, key string, call int32) {
			if _, err := cli.Put(ctx, key, old); err != nil {
				t.Error(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := strings.ReplaceAll(tt.name, " ", "-")
			o := put(name, old)
			fake := &etcdRewriter{cli: cli, writeKey: "key2"}
			if tt.before != nil {
				fake.before = func(key string) { tt.before(t, key, fake.calls.Load()) }
			}
			r := &Rotation{Etcd: cli, Rewriter: fake}
			err := r.rewriteOne(ctx, o, newKey)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("rewriteOne: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), o.Name)):
				t.Fatalf("rewriteOne = %v, want an error naming %s with %q", err, o.Name, tt.wantErr)
			}
			if got := fake.calls.Load(); got != tt.wantCalls {
				t.Errorf("rewrites sent: %d, want %d", got, tt.wantCalls)
			}
			if tt.gone || tt.wantErr != "" {
				return
			}
			if got := under(name); got != newKey {
				t.Errorf("after the rewrite, under %v, want %v", got, newKey)
			}
		})
	}
}

// TestRewriteOneFailsOnOtherErrors: an error of the API other than a
// conflict stops the rewrite of the object, as it is.
func TestRewriteOneFailsOnOtherErrors(t *testing.T) {
	refused := errors.New("rewrite secrets ns/x: forbidden")
	r := &Rotation{Rewriter: rewriterFunc(func() error { return refused })}
	if err := r.rewriteOne(t.Context(), Object{Resource: secrets, Name: "ns/x", Rev: 5}, Key{Provider: AESGCM, Name: "key2"}); !errors.Is(err, refused) {
		t.Errorf("rewriteOne = %v, want %v", err, refused)
	}
}

type rewriterFunc func() error

func (f rewriterFunc) Rewrite(context.Context, schema.GroupResource, string, string, int64) error {
	return f()
}

func TestProgressBar(t *testing.T) {
	for _, tt := range []struct {
		done, total int
		want        string
	}{
		{0, 10, "[--------------------]"},
		{5, 10, "[##########----------]"},
		{10, 10, "[####################]"},
		{0, 0, "[####################]"},
		{12, 10, "[####################]"},
	} {
		if got := progressBar(tt.done, tt.total); got != tt.want {
			t.Errorf("progressBar(%d, %d) = %s, want %s", tt.done, tt.total, got, tt.want)
		}
	}
}

// TestBeginKMS: with no rule that writes with aesgcm, a rotation is to
// the KMS v2 plugin's key id of the time, of one plugin only; with
// neither, there is nothing to rotate.
func TestBeginKMS(t *testing.T) {
	const kmsRule = "- resources: [%s]\n  providers:\n  - kms:\n      apiVersion: v2\n      name: %s\n      endpoint: unix:///tmp/%s.sock\n  - identity: {}\n"
	head := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
	asked := ""
	keyID := func(_ context.Context, endpoint string) (string, error) {
		asked = endpoint
		return "plugin-key-7", nil
	}
	for _, tt := range []struct {
		name, config, want string
	}{
		{"one plugin", head + fmt.Sprintf(kmsRule, "secrets", "p1", "p1") + fmt.Sprintf(kmsRule, "configmaps", "p1", "p1"), ""},
		{"two plugins", head + fmt.Sprintf(kmsRule, "secrets", "p1", "p1") + fmt.Sprintf(kmsRule, "configmaps", "p2", "p2"), "one plugin's"},
		{"nothing to rotate", head + "- resources: [secrets]\n  providers:\n  - identity: {}\n", "nothing to rotate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "encryption-config.yaml")
			if err := os.WriteFile(path, []byte(tt.config), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := readConfigFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r := &Rotation{ConfigPath: path, KeyID: keyID}
			j, err := r.beginKMS(t.Context(), f)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("beginKMS = %v, want an error with %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := (Key{Provider: KMS, Name: "p1", KeyID: "plugin-key-7"}); j.newKey() != want || j.Phase != phaseKeyID || len(j.Rules) != 2 || asked != "unix:///tmp/p1.sock" {
				t.Errorf("beginKMS = %+v (asked %s), want a rotation of both rules to %v", j, asked, want)
			}
		})
	}
}

// TestWaitKeyID: the wait for the API server to write under the plugin's
// new key id ends when an object rewritten is under it, and fails, naming
// the key, when none is by the timeout; nothing to rewrite ends it.
func TestWaitKeyID(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	ctx := t.Context()
	j := &journal{KMS: "p1", NewKey: "key-b", Resources: []string{"secrets"}}
	under := func(id string) string { return "k8s:enc:kms:v2:p1:" + encryptedObject(t, id) }
	put := func(name, id string) {
		t.Helper()
		if _, err := cli.Put(ctx, storage.Key(secrets, "ns", name), under(id)); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "key-b")
	put("b", "key-a")
	// A server that still writes under the old key id.
	stale := &Rotation{Etcd: cli, Scanner: Scanner{Client: cli}, WaitTimeout: time.Nanosecond,
		Rewriter: rewriterFunc(func() error { put("b", "key-a"); return nil })}
	if err := stale.waitKeyID(ctx, j); err == nil || !strings.Contains(err.Error(), "key-b") {
		t.Errorf("waitKeyID with a server on the old key id = %v, want an error naming key-b", err)
	}
	current := &Rotation{Etcd: cli, Scanner: Scanner{Client: cli}, WaitTimeout: time.Nanosecond,
		Rewriter: rewriterFunc(func() error { put("b", "key-b"); return nil })}
	if err := current.waitKeyID(ctx, j); err != nil {
		t.Errorf("waitKeyID with a server on the new key id: %v", err)
	}
	nothing := &Rotation{Etcd: cli, Scanner: Scanner{Client: cli}, WaitTimeout: time.Nanosecond,
		Rewriter: rewriterFunc(func() error { return errors.New("nothing should be rewritten") })}
	if err := nothing.waitKeyID(ctx, j); err != nil {
		t.Errorf("waitKeyID with every object under the new key id: %v", err)
	}
}

// TestKMSRotationFollowsTheKeyID: a KMS rotation that continues after the
// plugin's key was rotated again rewrites under the key id of now, and
// ends, rather than rewriting under the old one until verify gives up.
func TestKMSRotationFollowsTheKeyID(t *testing.T) {
	e := etcdtest.Start(t)
	cli := e.Client(t)
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "encryption-config.yaml")
	config := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - kms:\n      apiVersion: v2\n      name: p1\n      endpoint: unix:///tmp/p1.sock\n"
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	value := func(id string) string { return "k8s:enc:kms:v2:p1:" + encryptedObject(t, id) }
	key := storage.Key(secrets, "ns", "db")
	if _, err := cli.Put(ctx, key, value("key-a")); err != nil {
		t.Fatal(err)
	}
	// The API server writes under the plugin's key id of now, key-c.
	server := &etcdRewriter{cli: cli}
	server.put = func(string) string { return value("key-c") }
	var out strings.Builder
	r := &Rotation{ConfigPath: path, Etcd: cli, Scanner: Scanner{Client: cli}, Rewriter: server, Stored: []schema.GroupResource{secrets},
		WaitTimeout: time.Minute, Progress: &out, KeyID: func(context.Context, string) (string, error) { return "key-c", nil }}
	// A rotation to key-b, stopped while rewriting.
	j := &journal{Phase: phaseRewriting, KMS: "p1", NewKey: "key-b", Rules: []int{0}, Resources: []string{"secrets"}}
	if err := r.createJournal(ctx, j); err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "the plugin's key id is now key-c") || !strings.Contains(out.String(), "under kms key p1 (key id key-c)") {
		t.Errorf("the rotation did not follow the key id:\n%s", out.String())
	}
	resp, err := cli.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 || KeyOf(resp.Kvs[0].Value).KeyID != "key-c" {
		t.Errorf("after the rotation: %v, %v; want the Secret under key-c", resp, err)
	}
}
