package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// initialEventsEnd is the annotation of the bookmark that ends the initial
// events of a watch-list watch.
const initialEventsEnd = "k8s.io/initial-events-end"

// hold creates Hold ConfigMaps of ObjectBytes each, opens Watchers watches
// of them and, once every watch has caught up, reads the API server's
// memory: what it costs to hold and watch that many objects.
func (r *run) hold(ctx context.Context) (Result, error) {
	var before Memory
	if r.Memory != nil {
		var err error
		if before, err = r.Memory(ctx); err != nil {
			return Result{}, err
		}
	}
	cms := r.Client.CoreV1().ConfigMaps(r.Namespace)
	samples, elapsed, err := runOps(ctx, r.Hold, r.Concurrency, r.Timeout, func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: holdName(i)},
			BinaryData: map[string][]byte{"payload": r.payload},
		}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create config map %s/%s: %w", r.Namespace, cm.Name, err)
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	r.Logger.Info("bench hold: config maps created", "count", r.Hold, "seconds", elapsed.Seconds())

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts, err := r.holdWatchOptions(ctx)
	if err != nil {
		return Result{}, err
	}
	watchers, err := r.openWatches(ctx, opts)
	defer stopAll(watchers)
	if err != nil {
		return Result{}, err
	}
	delivered := 0
	if r.WatchList {
		if delivered, err = r.receiveInitial(ctx, watchers); err != nil {
			return Result{}, err
		}
	}
	r.Logger.Info("bench hold: watches open", "watchers", len(watchers), "initialEvents", delivered)

	res := summarize(PhaseHold, r.Hold, elapsed, samples)
	res.Bytes = r.ObjectBytes
	res.Watchers = len(watchers)
	if r.WatchList {
		res.Delivered = delivered
		res.Expected = len(watchers) * r.Hold
	}
	if r.Memory != nil {
		m, err := r.Memory(ctx)
		if err != nil {
			return Result{}, err
		}
		res.BaseRSSBytes, res.RSSBytes, res.PeakRSSBytes = before.RSS, m.RSS, m.Peak
	}
	return res, nil
}

// holdWatchOptions are the options of the hold phase's watches: the
// watch-list protocol, or a start after the revision the creates reached,
// read with a list of one item, which etcd answers without the cache
// building a list of them all.
func (r *run) holdWatchOptions(ctx context.Context) (metav1.ListOptions, error) {
	if r.WatchList {
		return metav1.ListOptions{
			SendInitialEvents:    func(b bool) *bool { return &b }(true),
			AllowWatchBookmarks:  true,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	l, err := r.Client.CoreV1().ConfigMaps(r.Namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return metav1.ListOptions{}, fmt.Errorf("list config maps in %s: %w", r.Namespace, err)
	}
	return metav1.ListOptions{ResourceVersion: l.ResourceVersion}, nil
}

// receiveInitial waits for every watcher to receive its initial events and
// the bookmark that ends them, and returns how many of the held ConfigMaps
// they received in all. A watch that misses one, or receives nothing for
// Timeout, is an error.
func (r *run) receiveInitial(ctx context.Context, watchers []*watcher) (int, error) {
	var wg sync.WaitGroup
	counts := make([]int, len(watchers))
	errs := make([]error, len(watchers))
	for i, w := range watchers {
		wg.Go(func() { counts[i], errs[i] = w.receiveInitial(ctx, r.Hold, r.Timeout) })
	}
	wg.Wait()
	total := 0
	for _, n := range counts {
		total += n
	}
	return total, errors.Join(errs...)
}

// receiveInitial counts the held ConfigMaps among the initial events of a
// watch-list watch, up to the bookmark that ends them.
func (w *watcher) receiveInitial(ctx context.Context, held int, idle time.Duration) (int, error) {
	seen := make([]bool, held)
	n := 0
	timer := time.NewTimer(idle)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-timer.C:
			return n, fmt.Errorf("watch %d: no event for %s after %d of %d initial events", w.id, idle, n, held)
		case ev, ok := <-w.w.ResultChan():
			if !ok {
				return n, fmt.Errorf("watch %d closed after %d of %d initial events", w.id, n, held)
			}
			timer.Reset(idle)
			switch ev.Type {
			case watch.Error:
				return n, fmt.Errorf("watch %d: %w", w.id, apierrors.FromObject(ev.Object))
			case watch.Added:
				accessor, err := meta.Accessor(ev.Object)
				if err != nil {
					return n, fmt.Errorf("watch %d: unexpected %T in an ADDED event", w.id, ev.Object)
				}
				if i, ok := nameIndex(accessor.GetName(), holdPrefix, held); ok && !seen[i] {
					seen[i] = true
					n++
				}
			case watch.Bookmark:
				accessor, err := meta.Accessor(ev.Object)
				if err != nil || accessor.GetAnnotations()[initialEventsEnd] != "true" {
					continue
				}
				if n < held {
					return n, fmt.Errorf("watch %d: initial events ended after %d of %d config maps", w.id, n, held)
				}
				return n, nil
			}
		}
	}
}
