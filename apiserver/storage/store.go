package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apiserver/pkg/storage/value"
)

// Store reads and writes objects in etcd. It is safe for concurrent use.
type Store struct {
	client       *clientv3.Client
	scheme       *runtime.Scheme
	serializer   runtime.Serializer
	transformers value.ResourceTransformers
	timeout      time.Duration
	// written maps a resource (its name, the first segment of its keys)
	// to an *atomic.Int64 holding the revision of the last write this
	// store made to it, for readers of a watch cache to read their writes.
	written sync.Map
}

// noteWrite records that a write to key, or to every key under it, is at
// revision rev.
func (s *Store) noteWrite(key string, rev int64) {
	resource, _, _ := strings.Cut(strings.TrimPrefix(key, Prefix), "/")
	v, _ := s.written.LoadOrStore(resource, new(atomic.Int64))
	last := v.(*atomic.Int64)
	for {
		cur := last.Load()
		if cur >= rev || last.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// Written is the revision of the last write this store made to a resource
// of gr, 0 if none: a watch cache of gr that has reached it reflects every
// write this server has answered.
func (s *Store) Written(gr schema.GroupResource) int64 {
	v, ok := s.written.Load(gr.Resource)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

// New returns a store over client. Objects pass through their resource's
// transformer (encryption) on their way to and from etcd; with
// transformers nil, every object is stored as encoded. timeout bounds
// every etcd call.
func New(client *clientv3.Client, scheme *runtime.Scheme, transformers value.ResourceTransformers, timeout time.Duration) (*Store, error) {
	var errs []error
	if client == nil {
		errs = append(errs, errors.New("etcd client is nil"))
	}
	if scheme == nil {
		errs = append(errs, errors.New("scheme is nil"))
	}
	if timeout <= 0 {
		errs = append(errs, fmt.Errorf("etcd timeout must be positive, got %s", timeout))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	return &Store{
		client:       client,
		scheme:       scheme,
		serializer:   protobuf.NewSerializer(scheme, scheme),
		transformers: transformers,
		timeout:      timeout,
	}, nil
}

func (s *Store) transformer(gr schema.GroupResource) value.Transformer {
	if s.transformers == nil {
		return identity{}
	}
	return s.transformers.TransformerForResource(gr)
}

// encode serializes obj without its resourceVersion, which is the etcd
// revision and never stored, and transforms it for key.
func (s *Store) encode(ctx context.Context, gr schema.GroupResource, key string, obj runtime.Object) ([]byte, error) {
	gvks, _, err := s.scheme.ObjectKinds(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", key, err)
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", key, err)
	}
	rv := accessor.GetResourceVersion()
	accessor.SetResourceVersion("")
	defer accessor.SetResourceVersion(rv)
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	var buf bytes.Buffer
	if err := s.serializer.Encode(obj, &buf); err != nil {
		return nil, fmt.Errorf("encode %s: %w", key, err)
	}
	out, err := s.transformer(gr).TransformToStorage(ctx, buf.Bytes(), value.DefaultContext(key))
	if err != nil {
		return nil, fmt.Errorf("transform %s for storage: %w", key, err)
	}
	if len(out) > MaxObjectBytes {
		return nil, ErrTooLarge
	}
	return out, nil
}

// decode reverses encode into into and sets its resourceVersion.
func (s *Store) decode(ctx context.Context, gr schema.GroupResource, key string, data []byte, rev int64, into runtime.Object) error {
	plain, _, err := s.transformer(gr).TransformFromStorage(ctx, data, value.DefaultContext(key))
	if err != nil {
		return undecryptable(key, data, err)
	}
	if _, _, err := s.serializer.Decode(plain, nil, into); err != nil {
		return fmt.Errorf("decode %s: %w", key, err)
	}
	accessor, err := meta.Accessor(into)
	if err != nil {
		return err
	}
	accessor.SetResourceVersion(strconv.FormatInt(rev, 10))
	return nil
}

func (s *Store) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// writeContext is the context of a write about to be sent to etcd. A
// request already cancelled is not sent. One that is sent is not
// cancelled by its caller going away, only bounded by the store's
// timeout: etcd may apply a transaction whose client stopped waiting, and
// then the caller, its response and its audit event would report a
// failure for a write that happened.
func (s *Store) writeContext(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	return ctx, cancel, nil
}

// Create stores obj at key unless the key exists, and sets obj's
// resourceVersion. The also writes go in the same transaction, each only
// if its key is still at the revision it names: otherwise nothing is
// written and the error is ErrAlsoChanged.
func (s *Store) Create(ctx context.Context, gr schema.GroupResource, key string, obj runtime.Object, also ...Also) error {
	data, err := s.encode(ctx, gr, key, obj)
	if err != nil {
		return err
	}
	cmps, puts, err := s.alsoOps(ctx, also)
	if err != nil {
		return err
	}
	ctx, cancel, err := s.writeContext(ctx)
	if err != nil {
		return fmt.Errorf("create %s: %w", key, err)
	}
	defer cancel()
	resp, err := s.client.Txn(ctx).
		If(append([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}, cmps...)...).
		Then(append([]clientv3.Op{clientv3.OpPut(key, string(data))}, puts...)...).
		Else(clientv3.OpGet(key, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return fmt.Errorf("create %s: %w", key, err)
	}
	if !resp.Succeeded {
		if r := resp.Responses[0].GetResponseRange(); r != nil && r.Count == 0 {
			return ErrAlsoChanged
		}
		return ErrAlreadyExists
	}
	s.noteWrite(key, resp.Header.Revision)
	return s.wrote(resp.Header.Revision, obj, also)
}

// Also is a write of another key in the same transaction as an object's,
// held to the revision that key was read at: the record of the share of a
// range an object holds (a Service's cluster IP), which must never
// disagree with the objects.
type Also struct {
	GR  schema.GroupResource
	Key string
	// Rev is the revision Obj was read at; 0 means the key must not
	// exist yet.
	Rev int64
	Obj runtime.Object
}

// alsoOps are the comparisons and puts of also.
func (s *Store) alsoOps(ctx context.Context, also []Also) ([]clientv3.Cmp, []clientv3.Op, error) {
	var cmps []clientv3.Cmp
	var puts []clientv3.Op
	for _, a := range also {
		data, err := s.encode(ctx, a.GR, a.Key, a.Obj)
		if err != nil {
			return nil, nil, err
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(a.Key), "=", a.Rev))
		puts = append(puts, clientv3.OpPut(a.Key, string(data)))
	}
	return cmps, puts, nil
}

// wrote sets the resourceVersion of obj, if any, and of the also objects
// written at rev.
func (s *Store) wrote(rev int64, obj runtime.Object, also []Also) error {
	for _, a := range also {
		s.noteWrite(a.Key, rev)
		if err := setResourceVersion(a.Obj, rev); err != nil {
			return err
		}
	}
	if obj == nil {
		return nil
	}
	return setResourceVersion(obj, rev)
}

// Get reads the object at key into into.
func (s *Store) Get(ctx context.Context, gr schema.GroupResource, key string, into runtime.Object) error {
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return ErrNotFound
	}
	kv := resp.Kvs[0]
	return s.decode(ctx, gr, key, kv.Value, kv.ModRevision, into)
}

// Page is one page of a paged list.
type Page struct {
	// Rev is the revision the whole list is read at.
	Rev int64
	// Next is the key to continue from, "" when the list is complete.
	Next string
}

// ListPage reads at most limit keys (0: all) from start up to the end of
// prefix at revision rev (0: the current one), decoding each into a fresh
// object from newItem and passing it to add. A revision that etcd has
// compacted is ErrExpired.
func (s *Store) ListPage(ctx context.Context, gr schema.GroupResource, prefix, start string, rev, limit int64, newItem func() runtime.Object, add func(runtime.Object) error) (Page, error) {
	if !strings.HasPrefix(start, prefix) {
		return Page{}, fmt.Errorf("list %s: start key %q is outside the prefix", prefix, start)
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(limit))
	}
	resp, err := s.client.Get(ctx, start, opts...)
	if errors.Is(err, rpctypes.ErrCompacted) {
		return Page{}, fmt.Errorf("%w: revision %d was compacted", ErrExpired, rev)
	}
	if err != nil {
		return Page{}, fmt.Errorf("list %s: %w", prefix, err)
	}
	page := Page{Rev: resp.Header.Revision}
	if rev > 0 {
		page.Rev = rev
	}
	for _, kv := range resp.Kvs {
		item := newItem()
		if err := s.decode(ctx, gr, string(kv.Key), kv.Value, kv.ModRevision, item); err != nil {
			return Page{}, err
		}
		if err := add(item); err != nil {
			return Page{}, err
		}
	}
	if resp.More && len(resp.Kvs) > 0 {
		page.Next = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	return page, nil
}

// Update replaces the object at key with obj if the stored object is still
// at revision rev, and sets obj's resourceVersion. It returns ErrNotFound
// if the key is gone and ErrConflict if it changed. The also writes go in
// the same transaction, as in Create.
func (s *Store) Update(ctx context.Context, gr schema.GroupResource, key string, rev int64, obj runtime.Object, also ...Also) error {
	data, err := s.encode(ctx, gr, key, obj)
	if err != nil {
		return err
	}
	cmps, puts, err := s.alsoOps(ctx, also)
	if err != nil {
		return err
	}
	ctx, cancel, err := s.writeContext(ctx)
	if err != nil {
		return fmt.Errorf("update %s: %w", key, err)
	}
	defer cancel()
	resp, err := s.client.Txn(ctx).
		If(append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)}, cmps...)...).
		Then(append([]clientv3.Op{clientv3.OpPut(key, string(data))}, puts...)...).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return fmt.Errorf("update %s: %w", key, err)
	}
	if !resp.Succeeded {
		return missingOrConflict(resp, rev)
	}
	s.noteWrite(key, resp.Header.Revision)
	return s.wrote(resp.Header.Revision, obj, also)
}

// Delete removes the object at key if it is still at revision rev, and
// also every key under each of prefixes, in one transaction. It returns
// ErrNotFound if the key is gone and ErrConflict if it changed.
func (s *Store) Delete(ctx context.Context, key string, rev int64, prefixes ...string) (int64, error) {
	return s.DeleteAlso(ctx, key, rev, prefixes, nil)
}

// DeleteAlso is Delete with also writes in the same transaction, as in
// Create.
func (s *Store) DeleteAlso(ctx context.Context, key string, rev int64, prefixes []string, also []Also) (int64, error) {
	ops := []clientv3.Op{clientv3.OpDelete(key)}
	for _, p := range prefixes {
		ops = append(ops, clientv3.OpDelete(p, clientv3.WithPrefix()))
	}
	cmps, puts, err := s.alsoOps(ctx, also)
	if err != nil {
		return 0, err
	}
	ctx, cancel, err := s.writeContext(ctx)
	if err != nil {
		return 0, fmt.Errorf("delete %s: %w", key, err)
	}
	defer cancel()
	resp, err := s.client.Txn(ctx).
		If(append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)}, cmps...)...).
		Then(append(ops, puts...)...).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("delete %s: %w", key, err)
	}
	if !resp.Succeeded {
		return 0, missingOrConflict(resp, rev)
	}
	s.noteWrite(key, resp.Header.Revision)
	for i, p := range prefixes {
		// Only a prefix that held something was written: a resource
		// noted as written at a revision has an event there, which its
		// readers may wait for.
		if r := resp.Responses[1+i].GetResponseDeleteRange(); r != nil && r.Deleted > 0 {
			s.noteWrite(p, resp.Header.Revision)
		}
	}
	return resp.Header.Revision, s.wrote(resp.Header.Revision, nil, also)
}

// missingOrConflict tells why a write held to the object's revision rev
// failed, from the object as read in its Else branch: gone, changed, or
// else an also key changed.
func missingOrConflict(resp *clientv3.TxnResponse, rev int64) error {
	if len(resp.Responses) == 1 {
		if r := resp.Responses[0].GetResponseRange(); r != nil {
			switch {
			case len(r.Kvs) == 0:
				return ErrNotFound
			case r.Kvs[0].ModRevision == rev:
				return ErrAlsoChanged
			}
		}
	}
	return ErrConflict
}

func setResourceVersion(obj runtime.Object, rev int64) error {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	accessor.SetResourceVersion(strconv.FormatInt(rev, 10))
	return nil
}

// ParseResourceVersion parses a resourceVersion; "" is 0.
func ParseResourceVersion(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("invalid resourceVersion %q", rv)
	}
	return n, nil
}

// identity stores data as it is, for resources without encryption.
type identity struct{}

func (identity) TransformFromStorage(_ context.Context, data []byte, _ value.Context) ([]byte, bool, error) {
	return data, false, nil
}

func (identity) TransformToStorage(_ context.Context, data []byte, _ value.Context) ([]byte, error) {
	return data, nil
}
