package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Event is one change of one object, as the cache saw it.
type Event struct {
	Type watch.EventType // Added, Modified or Deleted
	Key  string
	// Object is the object after the change; for Deleted, the object as
	// it was last, with the deletion's revision as resourceVersion.
	Object runtime.Object
	// PrevObject is the object before the change; nil for Added.
	PrevObject runtime.Object
	Rev        int64
}

// ErrNotReady means the cache has not listed its resource yet, or lost
// its etcd watch: it cannot answer.
var ErrNotReady = errors.New("watch cache is not ready")

// ErrExpired means a watch asked to start at a revision older than the
// cache remembers.
var ErrExpired = errors.New("resource version too old")

// Cacher holds every object of one resource in memory, fed by a single
// etcd watch, and serves any number of watchers from it. Objects handed
// out are shared: callers must not modify them.
type Cacher struct {
	store     *Store
	gr        schema.GroupResource
	prefix    string
	newObject func() runtime.Object
	logger    *slog.Logger
	history   int
	indexers  map[string]IndexFunc
	// pageSize is listPageSize but in tests.
	pageSize int64

	// revision is rev, for readers that take no lock: set with it.
	revision atomic.Int64

	mu      sync.RWMutex // guards the fields below
	objects map[string]runtime.Object
	// dirs indexes the keys by their parent, the prefix up to the last
	// "/": a namespace's objects are found without scanning the others.
	dirs map[string]map[string]struct{}
	// indexes map each indexer's values to the keys of the objects that
	// have them.
	indexes map[string]map[string]map[string]struct{}
	rev     int64   // revision the cache reflects
	events  []Event // the last history events, oldest first
	// oldest is the lowest revision a watch may start after: the events
	// since then are all in events.
	oldest   int64
	watchers map[*Watcher]struct{}
	// snapshots are, by prefix, the objects that watches from revision 0
	// started with since the last change, for the next such watches of
	// the prefix to share; only those watches keep them alive. Every
	// change drops them (sets nil).
	snapshots map[string]weak.Pointer[snapshot]
	ready     bool
	changed   *sync.Cond // signalled when rev advances or ready changes
}

// IndexFunc returns the values under which an object is found in an
// index.
type IndexFunc func(runtime.Object) []string

// NewCacher returns a cacher of the objects of gr under prefix; Run fills
// and follows it. history is how many events it keeps for watches that
// resume at an earlier revision.
func NewCacher(store *Store, gr schema.GroupResource, newObject func() runtime.Object, history int, logger *slog.Logger) *Cacher {
	c := &Cacher{
		store:     store,
		gr:        gr,
		prefix:    ListPrefix(gr, ""),
		newObject: newObject,
		logger:    logger,
		history:   history,
		pageSize:  listPageSize,
		objects:   map[string]runtime.Object{},
		dirs:      map[string]map[string]struct{}{},
		indexers:  map[string]IndexFunc{},
		indexes:   map[string]map[string]map[string]struct{}{},
		watchers:  map[*Watcher]struct{}{},
	}
	c.changed = sync.NewCond(&c.mu)
	return c
}

// Run lists the resource, then follows its etcd watch until ctx is done,
// listing again whenever the watch breaks. Watchers are stopped when the
// cache relists, since they may have missed events.
func (c *Cacher) Run(ctx context.Context) {
	defer func() {
		c.mu.Lock()
		c.ready = false
		c.stopWatchersLocked()
		c.changed.Broadcast()
		c.mu.Unlock()
	}()
	for ctx.Err() == nil {
		err := c.listAndWatch(ctx)
		if ctx.Err() != nil {
			return
		}
		c.logger.Warn("watch cache restarting", "resource", c.gr.String(), "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// listPageSize is how many objects the cache reads from etcd at a time
// when it lists, as kube-apiserver's cacher does: an answer of every object
// at once would be as large as the resource, and live beside the objects
// decoded from it.
const listPageSize = 10000

func (c *Cacher) listAndWatch(ctx context.Context) error {
	objects, rev, err := c.listAll(ctx)
	if err != nil {
		return err
	}

	c.mu.Lock()
	c.stopWatchersLocked()
	c.objects = objects
	c.dirs = map[string]map[string]struct{}{}
	c.indexes = map[string]map[string]map[string]struct{}{}
	for key, obj := range objects {
		c.index(key, obj)
	}
	c.rev = rev
	c.revision.Store(rev)
	c.events = nil
	c.oldest = rev
	c.snapshots = nil
	c.ready = true
	c.changed.Broadcast()
	c.mu.Unlock()

	wctx, cancel := context.WithCancel(c.streamContext(ctx))
	defer cancel()
	for wresp := range c.store.client.Watch(wctx, c.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithPrevKV(), clientv3.WithProgressNotify()) {
		if err := wresp.Err(); err != nil {
			c.setUnready()
			return fmt.Errorf("watch %s: %w", c.prefix, err)
		}
		if wresp.IsProgressNotify() {
			c.advance(wresp.Header.Revision)
			continue
		}
		for _, ev := range wresp.Events {
			c.apply(ctx, ev)
		}
	}
	c.setUnready()
	return errors.New("watch channel closed")
}

// listAll reads and decodes every object of the resource, page after
// page at the revision of the first, and returns them by key with that
// revision. An object that cannot be decoded is logged and skipped.
func (c *Cacher) listAll(ctx context.Context) (map[string]runtime.Object, int64, error) {
	var objects map[string]runtime.Object
	var rev int64
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(c.prefix)), clientv3.WithLimit(c.pageSize)}
	for start := c.prefix; ; {
		listCtx, cancel := c.store.withTimeout(ctx)
		resp, err := c.store.client.Get(listCtx, start, opts...)
		cancel()
		if err != nil {
			return nil, 0, fmt.Errorf("list %s from %s at revision %d: %w", c.prefix, start, rev, err)
		}
		if objects == nil {
			// The first page counts them all.
			objects = make(map[string]runtime.Object, resp.Count)
			rev = resp.Header.Revision
			opts = append(opts, clientv3.WithRev(rev))
		}
		for _, kv := range resp.Kvs {
			key := string(kv.Key)
			obj := c.newObject()
			if err := c.store.decode(ctx, c.gr, key, kv.Value, kv.ModRevision, obj); err != nil {
				c.logger.Error("watch cache: undecodable object skipped", "key", key, "err", err)
				continue
			}
			objects[key] = obj
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return objects, rev, nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

func (c *Cacher) setUnready() {
	c.mu.Lock()
	c.ready = false
	c.changed.Broadcast()
	c.mu.Unlock()
}

// advance records that nothing changed up to rev.
func (c *Cacher) advance(rev int64) {
	c.mu.Lock()
	if rev > c.rev {
		c.rev = rev
		c.revision.Store(rev)
		c.changed.Broadcast()
	}
	c.mu.Unlock()
}

func (c *Cacher) apply(ctx context.Context, ev *clientv3.Event) {
	key := string(ev.Kv.Key)
	out := Event{Key: key, Rev: ev.Kv.ModRevision}
	if ev.PrevKv != nil {
		prev := c.newObject()
		if err := c.store.decode(ctx, c.gr, key, ev.PrevKv.Value, ev.PrevKv.ModRevision, prev); err == nil {
			out.PrevObject = prev
		}
	}
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		out.Type = watch.Deleted
		if out.PrevObject == nil {
			out.Rev = ev.Kv.ModRevision
			c.advance(out.Rev)
			return
		}
		obj := out.PrevObject.DeepCopyObject()
		setResourceVersion(obj, ev.Kv.ModRevision)
		out.Object = obj
	default:
		obj := c.newObject()
		if err := c.store.decode(ctx, c.gr, key, ev.Kv.Value, ev.Kv.ModRevision, obj); err != nil {
			c.logger.Error("watch cache: undecodable object skipped", "key", key, "err", err)
			c.advance(ev.Kv.ModRevision)
			return
		}
		out.Object = obj
		out.Type = watch.Modified
		if ev.IsCreate() {
			out.Type = watch.Added
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.objects[key]; ok {
		c.unindex(key, old)
	}
	if out.Type == watch.Deleted {
		delete(c.objects, key)
	} else {
		c.objects[key] = out.Object
		c.index(key, out.Object)
	}
	c.events = append(c.events, out)
	c.snapshots = nil
	if len(c.events) > c.history {
		c.oldest = c.events[0].Rev
		c.events = c.events[1:]
	}
	if out.Rev > c.rev {
		c.rev = out.Rev
		c.revision.Store(out.Rev)
	}
	for w := range c.watchers {
		w.send(out)
	}
	c.changed.Broadcast()
}

// waitLocked blocks until the cache is ready and reflects at least
// revision rev, or ctx is done. With rev < 0 it does not wait: the cache
// answers as it is, or ErrNotReady. Called with c.mu held.
func (c *Cacher) waitLocked(ctx context.Context, rev int64) error {
	if rev < 0 {
		if !c.ready {
			return fmt.Errorf("%s: %w", c.gr, ErrNotReady)
		}
		return nil
	}
	if !c.ready || c.rev < rev {
		stop := context.AfterFunc(ctx, func() {
			c.mu.Lock()
			c.changed.Broadcast()
			c.mu.Unlock()
		})
		defer stop()
		// A resource that does not change would never catch up with a
		// newer revision: ask etcd to tell the watch how far it is.
		progressCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		go c.requestProgress(progressCtx)
	}
	for !c.ready || c.rev < rev {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("watch cache of %s not ready: %w", c.gr, err)
		}
		c.changed.Wait()
	}
	return nil
}

// requestProgress asks etcd, every 50ms until ctx is done, for a progress
// notification on the watch stream, which advances the cache's revision.
func (c *Cacher) requestProgress(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		// To the cache's own watch stream.
		c.store.client.RequestProgress(c.streamContext(ctx))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// streamContext is ctx with the metadata of the cache's etcd watch stream:
// its own, since etcd's client keys streams by the metadata of their
// contexts. etcd answers a progress request for a whole stream, and only
// once every watch on it has reached its start: on one stream for all
// caches, a cache that started after the last write held back every
// other's progress until the next one, and a consistent read from them
// waited for it.
func (c *Cacher) streamContext(ctx context.Context) context.Context {
	return clientv3.WithRequireLeader(metadata.AppendToOutgoingContext(ctx, "trustplane-watch-cache", c.prefix))
}

// Wait blocks until the cache reflects at least revision rev (see
// waitLocked for rev < 0).
func (c *Cacher) Wait(ctx context.Context, rev int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waitLocked(ctx, rev)
}

// List calls visit for every object in the cache whose key starts with
// prefix, in key order, once the cache reflects at least revision rev (see
// waitLocked for rev < 0), and returns the revision it listed at.
func (c *Cacher) List(ctx context.Context, prefix string, rev int64, visit func(runtime.Object) error) (int64, error) {
	return c.list(ctx, prefix, rev, true, visit)
}

// Visit is List without the ordering, for callers that only need every
// object once, such as the authorizer.
func (c *Cacher) Visit(ctx context.Context, prefix string, rev int64, visit func(runtime.Object) error) (int64, error) {
	return c.list(ctx, prefix, rev, false, visit)
}

func (c *Cacher) list(ctx context.Context, prefix string, rev int64, sorted bool, visit func(runtime.Object) error) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.waitLocked(ctx, rev); err != nil {
		return 0, err
	}
	var keys []string
	if dir, ok := c.dirs[prefix]; ok {
		keys = make([]string, 0, len(dir))
		for key := range dir {
			keys = append(keys, key)
		}
	} else {
		for key := range c.objects {
			if strings.HasPrefix(key, prefix) {
				keys = append(keys, key)
			}
		}
	}
	if sorted {
		// In key order, as etcd lists them.
		slices.Sort(keys)
	}
	for _, key := range keys {
		if err := visit(c.objects[key]); err != nil {
			return 0, err
		}
	}
	return c.rev, nil
}

// AddIndex adds an index of the objects by the values f gives them. It
// must be called before Run.
func (c *Cacher) AddIndex(name string, f IndexFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.indexers[name] = f
}

// ByIndex calls visit for every object with value in the index name, once
// the cache reflects at least revision rev (see waitLocked for rev < 0).
func (c *Cacher) ByIndex(ctx context.Context, name, value string, rev int64, visit func(runtime.Object) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.waitLocked(ctx, rev); err != nil {
		return err
	}
	if _, ok := c.indexers[name]; !ok {
		return fmt.Errorf("watch cache of %s has no index %q", c.gr, name)
	}
	for key := range c.indexes[name][value] {
		if err := visit(c.objects[key]); err != nil {
			return err
		}
	}
	return nil
}

// index adds key to the index of its parent and to every index. Called
// with c.mu held.
func (c *Cacher) index(key string, obj runtime.Object) {
	dir := key[:strings.LastIndex(key, "/")+1]
	if c.dirs[dir] == nil {
		c.dirs[dir] = map[string]struct{}{}
	}
	c.dirs[dir][key] = struct{}{}
	for name, f := range c.indexers {
		if c.indexes[name] == nil {
			c.indexes[name] = map[string]map[string]struct{}{}
		}
		for _, v := range f(obj) {
			if c.indexes[name][v] == nil {
				c.indexes[name][v] = map[string]struct{}{}
			}
			c.indexes[name][v][key] = struct{}{}
		}
	}
}

// unindex removes key, as obj, from the indexes. Called with c.mu held.
func (c *Cacher) unindex(key string, obj runtime.Object) {
	dir := key[:strings.LastIndex(key, "/")+1]
	delete(c.dirs[dir], key)
	if len(c.dirs[dir]) == 0 {
		delete(c.dirs, dir)
	}
	for name, f := range c.indexers {
		for _, v := range f(obj) {
			delete(c.indexes[name][v], key)
			if len(c.indexes[name][v]) == 0 {
				delete(c.indexes[name], v)
			}
		}
	}
}

// Get returns the object at key once the cache reflects at least revision
// rev (see waitLocked for rev < 0), or nil if there is none.
func (c *Cacher) Get(ctx context.Context, key string, rev int64) (runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.waitLocked(ctx, rev); err != nil {
		return nil, err
	}
	return c.objects[key], nil
}

// CurrentRevision asks etcd for its revision, so that a read from the
// cache at it is as fresh as a read from etcd.
func (c *Cacher) CurrentRevision(ctx context.Context) (int64, error) {
	ctx, cancel := c.store.withTimeout(ctx)
	defer cancel()
	// A linearizable read of one key, the prefix itself, which no object
	// has: its header carries the revision, at the cost of a single key
	// (a count over the prefix would cost every key in it).
	resp, err := c.store.client.Get(ctx, c.prefix, clientv3.WithKeysOnly())
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// Watcher receives the events of a cache.
//
// Its initial events are not queued: it keeps the objects they are of, a
// snapshot taken when the watch starts, and hands them out before any
// change, as it goes. A watch of every object of a large resource so costs
// one pointer per object until it has sent them, not a queued event for
// each for as long as it lives. Changes wait in a queue of their own
// meanwhile.
//
// A client takes the events either in batches, with Pending, Take and
// Done, from its own goroutine; or one at a time from Events, which starts
// a goroutine to feed it. The first serves a watch to many watchers: the
// cache's fan-out wakes each watcher's goroutine once for all it queued,
// and a server writes a batch and flushes once.
type Watcher struct {
	// Initial is how many of the first events were there when the watch
	// started: the current objects (rev 0) or the replayed history.
	Initial int
	c       *Cacher
	prefix  string
	// buffer is how many changes may wait to be taken; one more ends
	// the watch.
	buffer int
	// pending has a value when events may be waiting to be taken; the
	// cache sends to it without blocking.
	pending chan struct{}
	// done is closed when the watch ends.
	done chan struct{}
	once sync.Once

	mu sync.Mutex // guards the fields below
	// queue is the changes not yet taken, oldest first.
	queue []Event
	// snapshot and replay hold the initial events not yet taken: the
	// objects of a watch from revision 0 from snapshot.objects[sent:],
	// at snapshotRev, or the history replayed to a resumed one. The
	// watcher keeps snapshot itself, which it may share with other
	// watches, until it has taken them all.
	snapshot    *snapshot
	sent        int
	snapshotRev int64
	replay      []Event

	// out is what Events returns, fed by forward once Events is first
	// called.
	outOnce sync.Once
	out     chan Event
}

// takeMax bounds a batch of initial events, so that a watch of many
// objects is written and flushed as it goes.
const takeMax = 100

// Pending has a value when events may be waiting to be taken: call Take.
func (w *Watcher) Pending() <-chan struct{} { return w.pending }

// Done is closed when the watch ends: Stop, a relist of the cache, or a
// watcher too slow to keep up. Events still queued are dropped: its client
// must watch again.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Take returns the events waiting, oldest first, appended to buf[:0]:
// initial events first (at most takeMax of them at a time), then the
// changes queued. ok is false once the watch has ended. The events taken
// are the caller's; buf should be the slice the last Take returned, whose
// array Take then reuses.
func (w *Watcher) Take(buf []Event) (events []Event, ok bool) {
	clear(buf)
	buf = buf[:0]
	select {
	case <-w.done:
		return buf, false
	default:
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.snapshot != nil:
		objects := w.snapshot.objects[w.sent:]
		n := min(len(objects), takeMax)
		for _, o := range objects[:n] {
			buf = append(buf, Event{Type: watch.Added, Key: o.key, Object: o.obj, Rev: w.snapshotRev})
		}
		if w.sent += n; w.sent == len(w.snapshot.objects) {
			w.snapshot = nil
		}
	case len(w.replay) > 0:
		n := min(len(w.replay), takeMax)
		buf = append(buf, w.replay[:n]...)
		w.replay = w.replay[n:]
	default:
		// The queue is handed out whole, and buf's array queues the
		// next changes.
		buf, w.queue = w.queue, buf
		return buf, true
	}
	if len(w.replay) == 0 {
		w.replay = nil
	}
	// More is waiting: initial events left, or changes queued meanwhile.
	w.signal()
	return buf, true
}

// signal makes Pending ready, without blocking.
func (w *Watcher) signal() {
	select {
	case w.pending <- struct{}{}:
	default:
	}
}

// Events delivers the events one at a time; it is closed when the watch
// ends (see Done). The first call starts the goroutine that feeds it; a
// client that calls Events must not call Take.
func (w *Watcher) Events() <-chan Event {
	w.outOnce.Do(func() {
		w.out = make(chan Event)
		go w.forward()
	})
	return w.out
}

// send queues ev without blocking the cache; a watcher with buffer changes
// already waiting is stopped, and its client must watch again. Called with
// c.mu held.
func (w *Watcher) send(ev Event) {
	if !keyMatches(ev.Key, w.prefix) {
		return
	}
	w.mu.Lock()
	full := len(w.queue) >= w.buffer
	if !full {
		w.queue = append(w.queue, ev)
	}
	w.mu.Unlock()
	if full {
		w.stopLocked()
		return
	}
	w.signal()
}

// forward feeds Events until the watch ends, and then closes it.
func (w *Watcher) forward() {
	defer close(w.out)
	var batch []Event
	for {
		select {
		case <-w.pending:
		case <-w.done:
			return
		}
		var ok bool
		if batch, ok = w.Take(batch); !ok {
			return
		}
		for _, ev := range batch {
			select {
			case w.out <- ev:
			case <-w.done:
				return
			}
		}
	}
}

func (w *Watcher) stopLocked() {
	w.once.Do(func() {
		delete(w.c.watchers, w)
		close(w.done)
	})
}

// Stop ends the watch.
func (w *Watcher) Stop() {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	w.stopLocked()
}

func (c *Cacher) stopWatchersLocked() {
	for w := range c.watchers {
		w.stopLocked()
	}
}

// keyedObject is an object of the cache and its key.
type keyedObject struct {
	key string
	obj runtime.Object
}

// snapshot is the objects under a prefix at one time, in no order.
type snapshot struct {
	objects []keyedObject
}

// snapshotLocked returns the objects under prefix (see keyMatches): the
// snapshot of the last watch of prefix if nothing changed since and a watch
// still uses it, else a new one. Many watches that start together, such as
// the informers of every client after a restart, so hold one pointer per
// object between them, not one each. Called with c.mu held.
func (c *Cacher) snapshotLocked(prefix string) *snapshot {
	if s := c.snapshots[prefix].Value(); s != nil {
		return s
	}
	s := &snapshot{}
	dir, isDir := c.dirs[prefix]
	switch {
	case isDir:
		// A namespace, or a cluster-scoped resource: its index has
		// every key.
		s.objects = make([]keyedObject, 0, len(dir))
		for key := range dir {
			s.objects = append(s.objects, keyedObject{key, c.objects[key]})
		}
	case !strings.HasSuffix(prefix, "/"):
		// One object.
		if obj, ok := c.objects[prefix]; ok {
			s.objects = []keyedObject{{prefix, obj}}
		}
	default:
		// Every namespace, sized once; or an empty one.
		size := 0
		if prefix == c.prefix {
			size = len(c.objects)
		}
		s.objects = make([]keyedObject, 0, size)
		for key, obj := range c.objects {
			if keyMatches(key, prefix) {
				s.objects = append(s.objects, keyedObject{key, obj})
			}
		}
	}
	if c.snapshots == nil {
		c.snapshots = map[string]weak.Pointer[snapshot]{}
	}
	c.snapshots[prefix] = weak.Make(s)
	return s
}

// Watch starts a watch of the objects under prefix. With rev 0 it first
// delivers an Added event for each current object, then every change; with
// rev > 0 it delivers every change after rev, or fails with ErrExpired if
// the cache no longer remembers them. It returns the revision the initial
// events reflect (rev 0) or rev. Up to buffer changes wait for the client
// to take them, also while it takes the initial events; one more, and the
// watch ends.
func (c *Cacher) Watch(ctx context.Context, prefix string, rev int64, buffer int) (*Watcher, int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.waitLocked(ctx, 0); err != nil {
		return nil, 0, err
	}
	w := &Watcher{
		c:       c,
		prefix:  prefix,
		buffer:  buffer,
		pending: make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	start := rev
	if rev == 0 {
		start = c.rev
		if snap := c.snapshotLocked(prefix); len(snap.objects) > 0 {
			w.snapshot = snap
			w.Initial = len(snap.objects)
		}
		w.snapshotRev = start
	} else {
		if rev < c.oldest {
			return nil, 0, fmt.Errorf("%w: %d (oldest kept %d)", ErrExpired, rev, c.oldest)
		}
		for _, ev := range c.events {
			if ev.Rev > rev && keyMatches(ev.Key, prefix) {
				w.replay = append(w.replay, ev)
			}
		}
		w.Initial = len(w.replay)
	}
	if w.Initial > 0 {
		w.signal()
	}
	c.watchers[w] = struct{}{}
	return w, start, nil
}

// Ready reports whether the cache follows etcd.
func (c *Cacher) Ready() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ready
}

// catchUpWait bounds CatchUp's wait.
const catchUpWait = time.Second

// CatchUp makes the next read of the cache see every write its store has
// answered: once a delete is answered, the next request must not find the
// object, nor be allowed by the binding it removed. The cache has usually
// heard of the write already; if not, CatchUp waits for it, at most
// catchUpWait, and then fails, and the read must not go on from the cache.
// A cache that is not ready is left to the read, which refuses at once.
func (c *Cacher) CatchUp(ctx context.Context) error {
	rev := c.store.Written(c.gr)
	if rev == 0 || c.Revision() >= rev || !c.Ready() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, catchUpWait)
	defer cancel()
	return c.Wait(ctx, rev)
}

// Revision is the revision the cache reflects.
func (c *Cacher) Revision() int64 {
	return c.revision.Load()
}

// keyMatches reports whether key is selected by a watch of prefix: a
// prefix ending in "/" selects the keys below it, any other is one key
// exactly, so a watch of one object never sees another whose name it
// begins.
func keyMatches(key, prefix string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(key, prefix)
	}
	return key == prefix
}
