package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/trustplane/trustplane/apiserver/responses"
	"github.com/trustplane/trustplane/apiserver/storage"
)

const (
	// watchBuffer is how many events a watcher may fall behind before it
	// is cut off and its client must watch again.
	watchBuffer = 1000
	// bookmarkInterval is how often a watch that allows bookmarks gets one.
	bookmarkInterval = 30 * time.Second
	// initialEventsEnd marks the bookmark that ends the initial events of
	// a watch with sendInitialEvents.
	initialEventsEnd = "k8s.io/initial-events-end"
)

// watchOptions are the query parameters of a watch.
type watchOptions struct {
	resourceVersion   int64
	rvSet             bool
	bookmarks         bool
	sendInitialEvents bool
	timeout           time.Duration
}

func parseWatchOptions(r *http.Request) (*watchOptions, error) {
	q := r.URL.Query()
	o := &watchOptions{bookmarks: q.Get("allowWatchBookmarks") == "true"}
	if rv := q.Get("resourceVersion"); rv != "" && rv != "0" {
		n, err := storage.ParseResourceVersion(rv)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		o.resourceVersion = n
	}
	o.rvSet = q.Get("resourceVersion") != ""
	if v := q.Get("sendInitialEvents"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("sendInitialEvents must be true or false, got %q", v))
		}
		o.sendInitialEvents = b
	}
	if o.sendInitialEvents {
		// The watch-list protocol, validated as kube-apiserver does.
		if m := q.Get("resourceVersionMatch"); m != string(metav1.ResourceVersionMatchNotOlderThan) {
			return nil, invalidListOptions(field.NotSupported(field.NewPath("resourceVersionMatch"), m, []string{string(metav1.ResourceVersionMatchNotOlderThan)}))
		}
		if !o.bookmarks {
			return nil, invalidListOptions(field.Forbidden(field.NewPath("allowWatchBookmarks"), "allowWatchBookmarks must be true when sendInitialEvents is true"))
		}
	} else if m := q.Get("resourceVersionMatch"); m != "" {
		return nil, invalidListOptions(field.Forbidden(field.NewPath("resourceVersionMatch"), "resourceVersionMatch is forbidden for watch unless sendInitialEvents is true"))
	}
	// A watch lasts timeoutSeconds, or by default 30 to 60 minutes, as
	// kube-apiserver spreads reconnections.
	o.timeout = time.Duration(30+rand.IntN(30)) * time.Minute
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("timeoutSeconds must be a non-negative integer, got %q", v))
		}
		if n > 0 {
			o.timeout = time.Duration(n) * time.Second
		}
	}
	return o, nil
}

func invalidListOptions(err *field.Error) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", field.ErrorList{err})
}

// watch streams the changes of a resource, from the watch cache, as
// metav1.WatchEvents in the format the client asked for, flushing after
// each batch of the events waiting.
func (h *Handler) watch(w http.ResponseWriter, r *http.Request, q *scope) {
	ctx := r.Context()
	sel, err := parseSelector(q, r)
	if err != nil {
		h.respond.Error(w, r, err)
		return
	}
	opts, err := parseWatchOptions(r)
	if err != nil {
		h.respond.Error(w, r, err)
		return
	}
	mediaOpts, info, err := h.respond.Negotiate(r)
	if err != nil {
		h.respond.Error(w, r, err)
		return
	}
	if info.StreamSerializer == nil {
		h.respond.Error(w, r, responses.NotAcceptable("the requested format cannot be streamed"))
		return
	}
	user := userFrom(ctx).GetName()
	if !h.watches.acquire(user) {
		h.respond.Error(w, r, apierrors.NewTooManyRequests("too many watches open for this user", 1))
		return
	}
	defer h.watches.release(user)
	cache := h.cache(q)
	prefix := storage.ListPrefix(q.res.GroupResource(), q.namespace)
	if q.name != "" {
		prefix = q.key(q.name)
	}
	from := opts.resourceVersion
	if opts.sendInitialEvents && !opts.rvSet {
		// A consistent start: the initial events reflect every write
		// made before the watch.
		cur, err := cache.CurrentRevision(ctx)
		if err != nil {
			h.respond.Error(w, r, err)
			return
		}
		if err := cache.Wait(ctx, cur); err != nil {
			h.respond.Error(w, r, err)
			return
		}
	}
	if opts.sendInitialEvents {
		if from > 0 {
			// The initial state must be no older than the
			// resourceVersion asked for.
			waitCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
			err := cache.Wait(waitCtx, from)
			cancel()
			if err != nil {
				h.respond.Error(w, r, tooLargeResourceVersion(from, cache.Revision()))
				return
			}
		}
		from = 0
	}
	// A cache that is not following etcd may become ready; wait for it
	// briefly, not for as long as the client stays.
	readyCtx, cancelReady := context.WithTimeout(ctx, 5*time.Second)
	watcher, startRev, err := cache.Watch(readyCtx, prefix, from, watchBuffer)
	cancelReady()
	if errors.Is(err, storage.ErrExpired) {
		h.respond.Error(w, r, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%v)", from, err)))
		return
	}
	if err != nil {
		h.respond.Error(w, r, err)
		return
	}
	defer watcher.Stop()

	// The request timeout does not apply to a watch; its own does.
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{})
	ctx, cancel := context.WithTimeout(ctx, opts.timeout)
	defer cancel()

	outer := info.StreamSerializer.Serializer
	headersSent := false
	// encodeEvent writes one framed WatchEvent into a buffer.
	encodeEvent := func(typ watch.EventType, obj runtime.Object) ([]byte, error) {
		gvks, _, err := h.scheme.ObjectKinds(obj)
		if err != nil {
			return nil, err
		}
		var embedded bytes.Buffer
		if err := h.codecs.EncoderForVersion(info.Serializer, gvks[0].GroupVersion()).Encode(obj, &embedded); err != nil {
			return nil, err
		}
		var frame bytes.Buffer
		ev := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: embedded.Bytes()}}
		if err := outer.Encode(ev, info.StreamSerializer.Framer.NewFrameWriter(&frame)); err != nil {
			return nil, err
		}
		return frame.Bytes(), nil
	}
	// send writes one event; the caller flushes.
	send := func(typ watch.EventType, obj runtime.Object) error {
		var frame []byte
		var err error
		switch {
		case mediaOpts.Convert == nil && typ != watch.Bookmark:
			// Every watcher of an event in this format sends the same
			// bytes: encode them once.
			frame, err = h.encodings.get(obj, string(typ), info.MediaType, func() ([]byte, error) { return encodeEvent(typ, obj) })
		case mediaOpts.Convert == nil:
			frame, err = encodeEvent(typ, obj)
		default:
			isTable := mediaOpts.Convert.Kind == "Table"
			if typ != watch.Bookmark || !isTable {
				// A Table watch gets one Table of one row per event,
				// with the column definitions in the first only.
				if obj, err = responses.Transform(r, mediaOpts, obj, isTable && headersSent); err != nil {
					return err
				}
				headersSent = true
			}
			frame, err = encodeEvent(typ, obj)
		}
		if err != nil {
			return err
		}
		_, err = w.Write(frame)
		return err
	}
	// bookmark writes a bookmark at rev; the caller flushes.
	bookmark := func(rev int64, initialEnd bool) error {
		obj := q.res.NewObject()
		accessor, _ := meta.Accessor(obj)
		accessor.SetResourceVersion(strconv.FormatInt(rev, 10))
		if initialEnd {
			accessor.SetAnnotations(map[string]string{initialEventsEnd: "true"})
		}
		return send(watch.Bookmark, obj)
	}

	w.Header().Set("Content-Type", info.MediaType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}

	// Once the initial events are sent, a watch-list client gets its
	// bookmark.
	initialLeft := watcher.Initial
	initialPending := opts.sendInitialEvents
	lastRev := startRev
	if initialPending && initialLeft == 0 {
		if bookmark(startRev, true) != nil || rc.Flush() != nil {
			return
		}
		initialPending = false
	}
	ticker := time.NewTicker(bookmarkInterval)
	defer ticker.Stop()
	var batch []storage.Event
	for {
		select {
		case <-ctx.Done():
			return
		case <-watcher.Done():
			return
		case <-ticker.C:
			if opts.bookmarks && !initialPending {
				if bookmark(max(lastRev, cache.Revision()), false) != nil || rc.Flush() != nil {
					return
				}
			}
		case <-watcher.Pending():
			// Write every event waiting, then flush once: a burst
			// goes out in as few frames and TLS records as the
			// connection allows, as kube-apiserver's watch does by
			// flushing only when its watcher's channel is empty.
			var ok bool
			if batch, ok = watcher.Take(batch); !ok {
				return
			}
			for _, ev := range batch {
				ev.Object, ev.PrevObject = q.served(ev.Object), q.served(ev.PrevObject)
				typ, obj := filterEvent(sel, ev)
				if obj != nil {
					if send(typ, obj) != nil {
						return
					}
				}
				if ev.Rev > lastRev {
					lastRev = ev.Rev
				}
				initialLeft--
				if initialPending && initialLeft == 0 {
					if bookmark(startRev, true) != nil {
						return
					}
					initialPending = false
				}
			}
			if rc.Flush() != nil {
				return
			}
		}
	}
}

// filterEvent is the event a watcher with sel sees for ev: an object that
// starts to match is ADDED, one that stops matching is DELETED, and one
// that never matched is not seen (nil object).
func filterEvent(sel *selector, ev storage.Event) (watch.EventType, runtime.Object) {
	if sel.everything() {
		return ev.Type, ev.Object
	}
	now := ev.Type != watch.Deleted && sel.matches(ev.Object)
	before := ev.PrevObject != nil && sel.matches(ev.PrevObject)
	switch {
	case ev.Type == watch.Deleted && before:
		return watch.Deleted, ev.Object
	case now && before:
		return ev.Type, ev.Object
	case now:
		return watch.Added, ev.Object
	case before:
		gone := ev.PrevObject.DeepCopyObject()
		if accessor, err := meta.Accessor(gone); err == nil {
			accessor.SetResourceVersion(strconv.FormatInt(ev.Rev, 10))
		}
		return watch.Deleted, gone
	}
	return "", nil
}

func fieldForbidden(path, msg string) *field.Error { return field.Forbidden(field.NewPath(path), msg) }

func fieldNotSupported(path, value string, valid []string) *field.Error {
	return field.NotSupported(field.NewPath(path), value, valid)
}

// watchCounter bounds the watches each user holds open.
type watchCounter struct {
	max    int
	mu     sync.Mutex // guards byUser
	byUser map[string]int
}

func (c *watchCounter) acquire(user string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byUser[user] >= c.max {
		return false
	}
	c.byUser[user]++
	return true
}

func (c *watchCounter) release(user string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byUser[user]--; c.byUser[user] <= 0 {
		delete(c.byUser, user)
	}
}

// encodingCache remembers the framed watch events last encoded, by object,
// event type and format, so that the watchers of one event share one
// encoding. Objects from the watch caches are never modified, so an entry
// stays right while it lives. It holds at most size entries, dropping the
// oldest.
type encodingCache struct {
	entries *lru.Cache[encodingKey, []byte]
}

type encodingKey struct {
	obj       runtime.Object
	typ       string
	mediaType string
}

// newEncodingCache returns a cache of size entries, at least one.
func newEncodingCache(size int) *encodingCache {
	// lru.New refuses only a size below one, which max rules out.
	entries, _ := lru.New[encodingKey, []byte](max(size, 1))
	return &encodingCache{entries: entries}
}

func (c *encodingCache) get(obj runtime.Object, typ, mediaType string, encode func() ([]byte, error)) ([]byte, error) {
	key := encodingKey{obj: obj, typ: typ, mediaType: mediaType}
	// Peek, not Get: the watchers of an event ask for it within moments
	// of each other, so the oldest entry is the one to drop, and lookups
	// share a read lock.
	if b, ok := c.entries.Peek(key); ok {
		return b, nil
	}
	b, err := encode()
	if err != nil {
		return nil, err
	}
	// Another watcher may have encoded it meanwhile: share its bytes.
	if prev, ok, _ := c.entries.PeekOrAdd(key, b); ok {
		return prev, nil
	}
	return b, nil
}
