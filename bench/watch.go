package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// watcher is one watch of the fan-out and what it received.
type watcher struct {
	id     int
	w      watch.Interface
	cancel context.CancelFunc
	// received is, for each event received, the index of its ConfigMap
	// and the time it arrived; each ConfigMap once. Only the watcher's
	// goroutine writes it, before the phase reads it.
	received []delivery
}

type delivery struct {
	index int
	at    time.Time
}

// watch opens Watchers watches of the namespace's ConfigMaps, all from the
// resourceVersion of one list, then creates WatchEvents ConfigMaps and
// waits, at most Timeout after the last create, for every watcher to
// receive every event.
func (r *run) watch(ctx context.Context) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cms := r.Client.CoreV1().ConfigMaps(r.Namespace)

	listCtx, listCancel := context.WithTimeout(ctx, r.Timeout)
	l, err := cms.List(listCtx, metav1.ListOptions{})
	listCancel()
	if err != nil {
		return Result{}, fmt.Errorf("list config maps in %s: %w", r.Namespace, err)
	}
	watchers, err := r.openWatches(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	defer stopAll(watchers)
	if err != nil {
		return Result{}, err
	}

	// deliverCtx ends the wait for deliveries: Timeout after the last
	// create, or at once when the phase fails.
	deliverCtx, stopDelivery := context.WithCancel(ctx)
	defer stopDelivery()
	var wg sync.WaitGroup
	errs := make([]error, len(watchers))
	for i, w := range watchers {
		wg.Go(func() { errs[i] = w.receive(deliverCtx, r.WatchEvents) })
	}

	// created[i] is when the create of ConfigMap i was answered; written
	// by the create of i only, read after wg.Wait.
	created := make([]time.Time, r.WatchEvents)
	start := time.Now()
	var pace *time.Ticker
	if r.WatchRate > 0 {
		// Each create waits for a tick of its own; up to Concurrency of
		// them are in flight, so a slow answer does not slow the pace.
		pace = time.NewTicker(time.Duration(float64(time.Second) / r.WatchRate))
		defer pace.Stop()
	}
	_, _, err = runOps(ctx, r.WatchEvents, r.Concurrency, r.Timeout, func(ctx context.Context, i int) error {
		if pace != nil {
			select {
			case <-pace.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: configMapName(i)},
			BinaryData: map[string][]byte{"payload": r.payload},
		}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create config map %s/%s: %w", r.Namespace, cm.Name, err)
		}
		created[i] = time.Now()
		return nil
	})
	if err != nil {
		stopDelivery()
		wg.Wait()
		return Result{}, err
	}
	deadline := time.AfterFunc(r.Timeout, stopDelivery)
	wg.Wait()
	deadline.Stop()
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}

	end := start
	var latencies []time.Duration
	for _, w := range watchers {
		for _, d := range w.received {
			latencies = append(latencies, max(d.at.Sub(created[d.index]), 0))
			if d.at.After(end) {
				end = d.at
			}
		}
	}
	if len(latencies) < len(watchers)*r.WatchEvents {
		// Some did not arrive: the phase lasted until the wait ended.
		end = time.Now()
	}
	res := summarize(PhaseWatch, len(latencies), end.Sub(start), latencies)
	res.Watchers = len(watchers)
	res.Rate = r.WatchRate
	res.Delivered = len(latencies)
	res.Expected = len(watchers) * r.WatchEvents
	return res, nil
}

// openWatches opens Watchers watches of the namespace's ConfigMaps with
// opts, Concurrency at a time. It returns the watches opened so far also on
// error, for the caller to stop.
func (r *run) openWatches(ctx context.Context, opts metav1.ListOptions) ([]*watcher, error) {
	cms := r.Client.CoreV1().ConfigMaps(r.Namespace)
	watchers := make([]*watcher, r.Watchers)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.Concurrency)
	for i := range r.Watchers {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			// The stream lives on after Watch returns, so its context
			// cannot carry the deadline of the open: a timer cancels it
			// instead if the server does not answer in time.
			wctx, cancel := context.WithCancel(ctx)
			timer := time.AfterFunc(r.Timeout, cancel)
			w, err := cms.Watch(wctx, opts)
			if !timer.Stop() && err == nil {
				w.Stop()
				err = fmt.Errorf("no answer within %s", r.Timeout)
			}
			if err != nil {
				cancel()
				return fmt.Errorf("open watch %d of config maps in %s: %w", i, r.Namespace, err)
			}
			watchers[i] = &watcher{id: i, w: w, cancel: cancel}
			return nil
		})
	}
	return watchers, g.Wait()
}

// receive records the ConfigMaps the watch delivers until it has seen all
// events of them, or ctx ends. A watch that fails or closes early is an
// error; one that is only slow is not, its shortfall is the measure.
func (w *watcher) receive(ctx context.Context, events int) error {
	w.received = make([]delivery, 0, events)
	seen := make([]bool, events)
	for len(w.received) < events {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.w.ResultChan():
			at := time.Now()
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("watch %d closed after %d of %d events", w.id, len(w.received), events)
			}
			switch ev.Type {
			case watch.Error:
				return fmt.Errorf("watch %d: %w", w.id, apierrors.FromObject(ev.Object))
			case watch.Added:
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok {
					return fmt.Errorf("watch %d: unexpected %T in an ADDED event", w.id, ev.Object)
				}
				if i, ok := nameIndex(cm.Name, configMapPrefix, events); ok && !seen[i] {
					seen[i] = true
					w.received = append(w.received, delivery{index: i, at: at})
				}
			}
		}
	}
	return nil
}

// nameIndex is the inverse of configMapName and holdName, for i < n:
// the index in a name made of prefix and i.
func nameIndex(name, prefix string, n int) (int, bool) {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i >= n {
		return 0, false
	}
	return i, true
}

// stopAll stops the watches of openWatches, skipping those a failed open
// left nil.
func stopAll(watchers []*watcher) {
	for _, w := range watchers {
		if w != nil {
			w.w.Stop()
			w.cancel()
		}
	}
}
