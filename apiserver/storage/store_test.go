package storage_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/etcd/etcdtest"
)

var (
	configmaps = schema.GroupResource{Resource: "configmaps"}
	secrets    = schema.GroupResource{Resource: "secrets"}
)

func newStore(t testing.TB) (*storage.Store, *etcdtest.Etcd) {
	t.Helper()
	e := etcdtest.Start(t)
	path := filepath.Join(t.TempDir(), "encryption-config.yaml")
	cfg, err := storage.NewEncryptionConfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	transformers, err := storage.LoadEncryption(t.Context(), path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s, err := storage.New(e.Client(t), clientgoscheme.Scheme, transformers, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return s, e
}

func TestCreateGetUpdateDelete(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	key := storage.Key(configmaps, "default", "a")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"}, Data: map[string]string{"k": "v1"}}
	if err := s.Create(ctx, configmaps, key, cm); err != nil {
		t.Fatal(err)
	}
	rv1, _ := storage.ParseResourceVersion(cm.ResourceVersion)
	if rv1 == 0 {
		t.Fatalf("create set resourceVersion %q", cm.ResourceVersion)
	}
	if err := s.Create(ctx, configmaps, key, cm.DeepCopy()); !errors.Is(err, storage.ErrAlreadyExists) {
		t.Fatalf("second create: %v, want ErrAlreadyExists", err)
	}

	got := &corev1.ConfigMap{}
	if err := s.Get(ctx, configmaps, key, got); err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "v1" || got.ResourceVersion != cm.ResourceVersion {
		t.Fatalf("get = %+v", got)
	}

	got.Data["k"] = "v2"
	if err := s.Update(ctx, configmaps, key, rv1, got); err != nil {
		t.Fatal(err)
	}
	stale := cm.DeepCopy()
	stale.Data["k"] = "stale"
	if err := s.Update(ctx, configmaps, key, rv1, stale); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("update at a stale revision: %v, want ErrConflict", err)
	}
	rv2, _ := storage.ParseResourceVersion(got.ResourceVersion)
	if _, err := s.Delete(ctx, key, rv1); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("delete at a stale revision: %v, want ErrConflict", err)
	}
	if _, err := s.Delete(ctx, key, rv2); err != nil {
		t.Fatal(err)
	}
	if err := s.Get(ctx, configmaps, key, &corev1.ConfigMap{}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get after delete: %v, want ErrNotFound", err)
	}
	if err := s.Update(ctx, configmaps, key, rv2, got); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("update after delete: %v, want ErrNotFound", err)
	}
}

func TestListAndPrefixDelete(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for _, ns := range []string{"a", "ab", "b"} {
		for _, name := range []string{"x", "y"} {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
			if err := s.Create(ctx, configmaps, storage.Key(configmaps, ns, name), cm); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func(prefix string) int {
		n := 0
		_, err := s.ListPage(ctx, configmaps, prefix, prefix, 0, 0, func() runtime.Object { return &corev1.ConfigMap{} }, func(runtime.Object) error { n++; return nil })
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(storage.ListPrefix(configmaps, "a")); n != 2 {
		t.Errorf("list in a: %d, want 2 (namespace ab must not match)", n)
	}
	if n := count(storage.ListPrefix(configmaps, "")); n != 6 {
		t.Errorf("list all: %d, want 6", n)
	}
	guard := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: "b"}}
	key := storage.Key(configmaps, "b", "guard")
	if err := s.Create(ctx, configmaps, key, guard); err != nil {
		t.Fatal(err)
	}
	rv, _ := storage.ParseResourceVersion(guard.ResourceVersion)
	if _, err := s.Delete(ctx, key, rv, storage.ListPrefix(configmaps, "a")); err != nil {
		t.Fatal(err)
	}
	if n := count(storage.ListPrefix(configmaps, "")); n != 4 {
		t.Errorf("after deleting namespace a's prefix: %d, want 4", n)
	}
}

func TestSecretsEncryptedAtRest(t *testing.T) {
	s, e := newStore(t)
	ctx := context.Background()
	key := storage.Key(secrets, "default", "s")
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Data: map[string][]byte{"password": []byte("hunter2-plaintext")}}
	if err := s.Create(ctx, secrets, key, sec); err != nil {
		t.Fatal(err)
	}
	raw, err := e.Client(t).Get(ctx, key)
	if err != nil || len(raw.Kvs) != 1 {
		t.Fatalf("raw get: %v %v", raw, err)
	}
	v := raw.Kvs[0].Value
	if !bytes.HasPrefix(v, []byte("k8s:enc:aesgcm:v1:key1:")) {
		t.Errorf("stored secret starts %q, want the aesgcm prefix", v[:min(len(v), 24)])
	}
	if bytes.Contains(v, []byte("hunter2-plaintext")) || bytes.Contains(v, []byte("password")) {
		t.Error("stored secret holds its data in plain text")
	}
	got := &corev1.Secret{}
	if err := s.Get(ctx, secrets, key, got); err != nil {
		t.Fatal(err)
	}
	if string(got.Data["password"]) != "hunter2-plaintext" {
		t.Errorf("read back %q", got.Data["password"])
	}
	// Moving the ciphertext to another key breaks its authentication.
	other := storage.Key(secrets, "default", "moved")
	if _, err := e.Client(t).Put(ctx, other, string(v)); err != nil {
		t.Fatal(err)
	}
	if err := s.Get(ctx, secrets, other, &corev1.Secret{}); err == nil {
		t.Error("ciphertext copied to another key decrypted")
	}
}

func TestLoadEncryptionFailsClosed(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, path, want string
	}{
		{"unset", "", "not set"},
		{"missing", filepath.Join(dir, "missing.yaml"), "missing.yaml"},
		{"malformed", write("bad.yaml", "{{{"), "bad.yaml"},
		{"identity first", write("identity.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - identity: {}
  - aesgcm:
      keys:
      - name: k
        secret: MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=
`), "plain text"},
		{"secrets not covered", write("cm.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [configmaps]
  providers:
  - aesgcm:
      keys:
      - name: k
        secret: MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=
`), "no provider covers secrets"},
		{"short key", write("short.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aesgcm:
      keys:
      - name: k
        secret: c2hvcnQ=
`), "short.yaml"},
	}
	for _, tt := range tests {
		_, err := storage.LoadEncryption(t.Context(), tt.path, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", tt.name, err, tt.want)
		}
	}
}

// leaveKey holds, in a request's context, the cancel func of its caller,
// which the etcd client below calls as it sends the transaction: the
// caller went away once its write was on its way.
type leaveKey struct{}

func leavingStore(t *testing.T) *storage.Store {
	t.Helper()
	e := etcdtest.Start(t)
	tlsConfig, err := e.ClientConfig.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	leave := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if cancel, ok := ctx.Value(leaveKey{}).(context.CancelFunc); ok && strings.HasSuffix(method, "/Txn") {
			cancel()
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   e.ClientConfig.Endpoints,
		TLS:         tlsConfig,
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithUnaryInterceptor(leave)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	s, err := storage.New(cli, clientgoscheme.Scheme, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// leaving is a caller that goes away once its write is sent.
func leaving(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return context.WithValue(ctx, leaveKey{}, cancel)
}

// A write sent to etcd is finished and reported as it happened, even if
// its caller goes away; one whose caller has already gone is not sent.
func TestWriteOutlivesItsCaller(t *testing.T) {
	s := leavingStore(t)
	key := storage.Key(configmaps, "default", "a")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"}}
	if err := s.Create(leaving(t), configmaps, key, cm); err != nil {
		t.Fatalf("create whose caller went away once it was sent: %v, want it written", err)
	}
	rv, _ := storage.ParseResourceVersion(cm.ResourceVersion)
	cm.Data = map[string]string{"k": "v"}
	if err := s.Update(leaving(t), configmaps, key, rv, cm); err != nil {
		t.Fatalf("update whose caller went away once it was sent: %v, want it written", err)
	}
	rv, _ = storage.ParseResourceVersion(cm.ResourceVersion)

	gone, cancel := context.WithCancel(t.Context())
	cancel()
	b := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default"}}
	if err := s.Create(gone, configmaps, storage.Key(configmaps, "default", "b"), b); !errors.Is(err, context.Canceled) {
		t.Errorf("create whose caller had gone: %v, want context.Canceled", err)
	}
	if err := s.Get(t.Context(), configmaps, storage.Key(configmaps, "default", "b"), &corev1.ConfigMap{}); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("get of the create whose caller had gone: %v, want ErrNotFound", err)
	}

	if _, err := s.Delete(leaving(t), key, rv); err != nil {
		t.Fatalf("delete whose caller went away once it was sent: %v, want it deleted", err)
	}
	if err := s.Get(t.Context(), configmaps, key, &corev1.ConfigMap{}); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("get after the delete: %v, want ErrNotFound", err)
	}
}
