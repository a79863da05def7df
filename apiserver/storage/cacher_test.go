package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/trustplane/trustplane/apiserver/storage"
)

func startCacher(t testing.TB, s *storage.Store, history int) *storage.Cacher {
	t.Helper()
	return runCacher(t, storage.NewCacher(s, configmaps, func() runtime.Object { return &corev1.ConfigMap{} }, history, slog.New(slog.NewTextHandler(io.Discard, nil))))
}

// runCacher runs c until the test ends.
func runCacher(t testing.TB, c *storage.Cacher) *storage.Cacher {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

func createCM(t *testing.T, s *storage.Store, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := s.Create(context.Background(), configmaps, storage.Key(configmaps, ns, name), cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

func next(t *testing.T, w *storage.Watcher) storage.Event {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return storage.Event{}
}

func name(ev storage.Event) string {
	return ev.Object.(*corev1.ConfigMap).Name
}

func TestCacherWatchAndList(t *testing.T) {
	s, _ := newStore(t)
	ctx := testCtx(t)
	createCM(t, s, "a", "one")
	c := startCacher(t, s, 100)

	w, startRev, err := c.Watch(ctx, storage.ListPrefix(configmaps, "a"), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := next(t, w); ev.Type != watch.Added || name(ev) != "one" {
		t.Fatalf("initial event %v %s, want ADDED one", ev.Type, name(ev))
	}
	createCM(t, s, "b", "other-namespace")
	two := createCM(t, s, "a", "two")
	if ev := next(t, w); ev.Type != watch.Added || name(ev) != "two" || ev.Object.(*corev1.ConfigMap).ResourceVersion != two.ResourceVersion {
		t.Fatalf("event %v %s, want ADDED two at %s", ev.Type, name(ev), two.ResourceVersion)
	}
	rev, _ := storage.ParseResourceVersion(two.ResourceVersion)
	if _, err := s.Delete(ctx, storage.Key(configmaps, "a", "two"), rev); err != nil {
		t.Fatal(err)
	}
	ev := next(t, w)
	if ev.Type != watch.Deleted || name(ev) != "two" || ev.Rev <= rev {
		t.Fatalf("event %v %s at %d, want DELETED two after %d", ev.Type, name(ev), ev.Rev, rev)
	}

	// A watch resuming at startRev replays what happened since.
	w2, _, err := c.Watch(ctx, storage.ListPrefix(configmaps, ""), startRev, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	var got []string
	for range 3 {
		ev := next(t, w2)
		got = append(got, string(ev.Type)+" "+name(ev))
	}
	want := []string{"ADDED other-namespace", "ADDED two", "DELETED two"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("replayed %v, want %v", got, want)
			break
		}
	}

	// A list at etcd's current revision sees every write before it.
	createCM(t, s, "a", "three")
	cur, err := c.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	listRev, err := c.List(ctx, storage.ListPrefix(configmaps, "a"), cur, func(o runtime.Object) error {
		names = append(names, o.(*corev1.ConfigMap).Name)
		return nil
	})
	if err != nil || listRev < cur || len(names) != 2 {
		t.Errorf("list at %d: %v at %d, err %v; want one and three", cur, names, listRev, err)
	}
}

func TestCacherExpiredAndSlowWatchers(t *testing.T) {
	s, _ := newStore(t)
	ctx := testCtx(t)
	first := createCM(t, s, "a", "first")
	c := startCacher(t, s, 3)
	slow, _, err := c.Watch(ctx, storage.ListPrefix(configmaps, ""), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"b", "c", "d", "e", "f"} {
		createCM(t, s, "a", n)
	}
	cur, _ := c.CurrentRevision(ctx)
	if _, err := c.Get(ctx, storage.Key(configmaps, "a", "f"), cur); err != nil {
		t.Fatal(err)
	}
	rev, _ := storage.ParseResourceVersion(first.ResourceVersion)
	if _, _, err := c.Watch(ctx, storage.ListPrefix(configmaps, ""), rev, 10); !errors.Is(err, storage.ErrExpired) {
		t.Errorf("watch from a revision past the history: %v, want ErrExpired", err)
	}
	// The slow watcher's buffer overflowed: it was closed, not waited for.
	n := 0
	for range slow.Events() {
		n++
	}
	if n >= 6 {
		t.Errorf("slow watcher got all %d events; want it cut off", n)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A watch of one object never sees another whose name starts with it.
func TestCacherWatchOfOneKeyIsExact(t *testing.T) {
	s, _ := newStore(t)
	ctx := testCtx(t)
	createCM(t, s, "a", "db")
	createCM(t, s, "a", "db-admin")
	c := startCacher(t, s, 100)
	w, _, err := c.Watch(ctx, storage.Key(configmaps, "a", "db"), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := next(t, w); name(ev) != "db" {
		t.Fatalf("initial event for %s", name(ev))
	}
	createCM(t, s, "a", "db-two")
	createCM(t, s, "a", "dc")
	cm := createCM(t, s, "b", "x")
	rev, _ := storage.ParseResourceVersion(cm.ResourceVersion)
	if _, err := c.Get(ctx, storage.Key(configmaps, "b", "x"), rev); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.Events():
		t.Errorf("the watch of db saw %s", name(ev))
	default:
	}
}

// The initial events of a watch wait in no buffer: however many objects
// there are, a watch with room for two changes gets them all first, then
// the changes made before it took any; a third change is one too many.
func TestCacherInitialEventsBeforeChanges(t *testing.T) {
	s, _ := newStore(t)
	ctx := testCtx(t)
	want := map[string]bool{}
	for i := range 50 {
		cm := createCM(t, s, "a", fmt.Sprintf("cm-%02d", i))
		want[cm.Name] = true
	}
	createCM(t, s, "b", "elsewhere")
	c := startCacher(t, s, 100)
	w, _, err := c.Watch(ctx, storage.ListPrefix(configmaps, "a"), 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if w.Initial != 50 {
		t.Errorf("Initial = %d, want the 50 objects in a", w.Initial)
	}
	// Two changes, in the cache before the client reads anything.
	var last *corev1.ConfigMap
	for _, n := range []string{"new-1", "new-2"} {
		last = createCM(t, s, "a", n)
	}
	rev, _ := storage.ParseResourceVersion(last.ResourceVersion)
	if _, err := c.Get(ctx, storage.Key(configmaps, "a", "new-2"), rev); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		ev := next(t, w)
		if ev.Type != watch.Added || !want[name(ev)] {
			t.Fatalf("initial event %s %s, want ADDED of one of the 50 not seen yet", ev.Type, name(ev))
		}
		delete(want, name(ev))
	}
	for _, n := range []string{"new-1", "new-2"} {
		if ev := next(t, w); ev.Type != watch.Added || name(ev) != n {
			t.Fatalf("event %s %s after the initial ones, want ADDED %s", ev.Type, name(ev), n)
		}
	}

	// Unread again: three changes overflow a buffer of two.
	slow, _, err := c.Watch(ctx, storage.ListPrefix(configmaps, "a"), 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"new-3", "new-4", "new-5"} {
		last = createCM(t, s, "a", n)
	}
	rev, _ = storage.ParseResourceVersion(last.ResourceVersion)
	if _, err := c.Get(ctx, storage.Key(configmaps, "a", "new-5"), rev); err != nil {
		t.Fatal(err)
	}
	n := 0
	for range slow.Events() {
		n++
	}
	if n >= 52+3 {
		t.Errorf("the watch with room for 2 changes got all %d events after 3; want it cut off", n)
	}
}

// A resumed watch counts as initial only the replayed events it delivers.
func TestCacherReplayCountsOnlyItsPrefix(t *testing.T) {
	s, _ := newStore(t)
	ctx := testCtx(t)
	first := createCM(t, s, "a", "first")
	c := startCacher(t, s, 100)
	// The history starts when the cache has listed.
	rev, _ := storage.ParseResourceVersion(first.ResourceVersion)
	if _, err := c.Get(ctx, storage.Key(configmaps, "a", "first"), rev); err != nil {
		t.Fatal(err)
	}
	from := c.Revision()
	createCM(t, s, "b", "other")
	last := createCM(t, s, "a", "second")
	rev, _ = storage.ParseResourceVersion(last.ResourceVersion)
	if _, err := c.Get(ctx, storage.Key(configmaps, "a", "second"), rev); err != nil {
		t.Fatal(err)
	}
	w, _, err := c.Watch(ctx, storage.ListPrefix(configmaps, "a"), from, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if w.Initial != 1 {
		t.Errorf("Initial = %d, want 1: the change in b is not the watch's", w.Initial)
	}
	if ev := next(t, w); name(ev) != "second" {
		t.Errorf("replayed %s, want second", name(ev))
	}
}

// Watches that start together may share what they start with, but a watch
// that starts after a change starts with it.
func TestCacherWatchStartsAfterTheLastChange(t *testing.T) {
	s, _ := newStore(t)
	ctx := testCtx(t)
	createCM(t, s, "a", "one")
	two := createCM(t, s, "a", "two")
	c := startCacher(t, s, 100)
	prefix := storage.ListPrefix(configmaps, "a")

	// initial returns the names of the initial events of a watch from
	// revision 0, once the cache has reached the write at rv.
	initial := func(rv string) []string {
		t.Helper()
		rev, _ := storage.ParseResourceVersion(rv)
		if _, err := c.Get(ctx, storage.Key(configmaps, "a", "one"), rev); err != nil {
			t.Fatal(err)
		}
		w, _, err := c.Watch(ctx, prefix, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		var names []string
		for range w.Initial {
			names = append(names, name(next(t, w)))
		}
		slices.Sort(names)
		return names
	}
	for _, tc := range []struct {
		change func() string // returns the resourceVersion of the change
		want   []string
	}{
		{func() string { return two.ResourceVersion }, []string{"one", "two"}},
		{func() string { return two.ResourceVersion }, []string{"one", "two"}},
		{func() string { return createCM(t, s, "a", "three").ResourceVersion }, []string{"one", "three", "two"}},
		{func() string { return createCM(t, s, "b", "elsewhere").ResourceVersion }, []string{"one", "three", "two"}},
		{func() string {
			rev, _ := storage.ParseResourceVersion(two.ResourceVersion)
			deleted, err := s.Delete(ctx, storage.Key(configmaps, "a", "two"), rev)
			if err != nil {
				t.Fatal(err)
			}
			return strconv.FormatInt(deleted, 10)
		}, []string{"one", "three"}},
	} {
		if got := initial(tc.change()); !slices.Equal(got, tc.want) {
			t.Errorf("watch started with %q, want %q", got, tc.want)
		}
	}
}

// Wait returns once the cache has reached a revision, or when its context
// ends first.
func TestCacherWait(t *testing.T) {
	s, _ := newStore(t)
	ctx := testCtx(t)
	c := startCacher(t, s, 100)
	cur, err := c.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, cur); err != nil {
		t.Fatalf("Wait(%d), the current revision: %v", cur, err)
	}

	done := make(chan error, 1)
	go func() { done <- c.Wait(ctx, cur+1) }()
	select {
	case err := <-done:
		t.Fatalf("Wait(%d) returned %v before anything was written", cur+1, err)
	default:
	}
	createCM(t, s, "a", "one")
	if err := <-done; err != nil {
		t.Errorf("Wait(%d) after a write: %v", cur+1, err)
	}

	short, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Wait(short, cur+100); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait for a revision never written, context canceled: %v, want context.Canceled", err)
	}
}

// A cache catches up with a write to another resource, whose cache
// started after it: etcd answers no progress request on a watch stream
// where some watch starts past its revision, and the newer cache's does
// until the next write. Each cache's watch has a stream of its own.
func TestCacherCatchesUpBesideANewerCache(t *testing.T) {
	s, _ := newStore(t)
	ctx := testCtx(t)
	older := startCacher(t, s, 100)
	cur, err := older.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := older.Wait(ctx, cur); err != nil {
		t.Fatal(err)
	}
	services := schema.GroupResource{Resource: "services"}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "a"}}
	if err := s.Create(ctx, services, storage.Key(services, "a", "s"), svc); err != nil {
		t.Fatal(err)
	}
	// Lists at the write's revision, and watches from the next.
	newer := runCacher(t, storage.NewCacher(s, services, func() runtime.Object { return &corev1.Service{} }, 100, slog.New(slog.NewTextHandler(io.Discard, nil))))
	written, err := older.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := newer.Wait(ctx, written); err != nil {
		t.Fatal(err)
	}
	// Nothing is written from here on.
	short, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	if err := older.Wait(short, written); err != nil {
		t.Fatalf("the older cache did not reach revision %d, with nothing written since: %v", written, err)
	}
}

// The cache lists its resource page after page, all at one revision, and
// follows it from there.
func TestCacherListsInPages(t *testing.T) {
	s, _ := newStore(t)
	ctx := testCtx(t)
	var want []string
	for i := range 7 {
		cm := createCM(t, s, fmt.Sprintf("ns-%d", i%2), fmt.Sprintf("cm-%d", i))
		want = append(want, cm.Namespace+"/"+cm.Name+"@"+cm.ResourceVersion)
	}
	c := storage.NewCacher(s, configmaps, func() runtime.Object { return &corev1.ConfigMap{} }, 100, slog.New(slog.NewTextHandler(io.Discard, nil)))
	storage.SetListPageSize(c, 2)
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	after := createCM(t, s, "ns-0", "after")
	rev, _ := storage.ParseResourceVersion(after.ResourceVersion)
	want = append(want, "ns-0/after@"+after.ResourceVersion)
	var got []string
	if _, err := c.List(ctx, storage.ListPrefix(configmaps, ""), rev, func(o runtime.Object) error {
		cm := o.(*corev1.ConfigMap)
		got = append(got, cm.Namespace+"/"+cm.Name+"@"+cm.ResourceVersion)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("cache holds %q, want %q", got, want)
	}
}

// Take hands out the initial events in batches, then every change queued
// since the last Take at once, oldest first, and nothing more once a
// change too many has ended the watch.
func TestCacherTakeBatches(t *testing.T) {
	s, _ := newStore(t)
	ctx := testCtx(t)
	for i := range 120 {
		createCM(t, s, "a", fmt.Sprintf("cm-%03d", i))
	}
	c := startCacher(t, s, 100)
	w, _, err := c.Watch(ctx, storage.ListPrefix(configmaps, "a"), 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// waitFor waits until the cache has the change that made cm.
	waitFor := func(cm *corev1.ConfigMap) {
		t.Helper()
		rev, _ := storage.ParseResourceVersion(cm.ResourceVersion)
		if err := c.Wait(ctx, rev); err != nil {
			t.Fatal(err)
		}
	}
	take := func(buf []storage.Event) []storage.Event {
		t.Helper()
		select {
		case <-w.Pending():
		case <-ctx.Done():
			t.Fatal("nothing pending")
		}
		batch, ok := w.Take(buf)
		if !ok {
			t.Fatal("watch ended")
		}
		return batch
	}

	var batch []storage.Event
	seen := map[string]bool{}
	var sizes []int
	for len(seen) < 120 {
		batch = take(batch)
		sizes = append(sizes, len(batch))
		for _, ev := range batch {
			if ev.Type != watch.Added || seen[name(ev)] {
				t.Fatalf("initial event %s %s, want ADDED of one not seen yet", ev.Type, name(ev))
			}
			seen[name(ev)] = true
		}
	}
	if !slices.Equal(sizes, []int{100, 20}) {
		t.Errorf("initial events taken in batches of %v, want [100 20]", sizes)
	}

	var last *corev1.ConfigMap
	for _, n := range []string{"new-1", "new-2", "new-3"} {
		last = createCM(t, s, "a", n)
	}
	waitFor(last)
	batch = take(batch)
	var got []string
	for _, ev := range batch {
		got = append(got, name(ev))
	}
	if want := []string{"new-1", "new-2", "new-3"}; !slices.Equal(got, want) {
		t.Errorf("changes taken at once %v, want %v", got, want)
	}
	if batch, ok := w.Take(batch); !ok || len(batch) != 0 {
		t.Errorf("Take with nothing queued = %d events, %t; want none, true", len(batch), ok)
	}

	// Four changes untaken overflow the queue of three: the watch ends.
	for _, n := range []string{"new-4", "new-5", "new-6", "new-7"} {
		last = createCM(t, s, "a", n)
	}
	waitFor(last)
	select {
	case <-w.Done():
	default:
		t.Fatal("a watch four changes behind with room for three is not done")
	}
	if batch, ok := w.Take(batch); ok {
		t.Errorf("Take after the watch ended = %d events, true; want false", len(batch))
	}
}
