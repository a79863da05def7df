package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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

// watchSpec is one watch fan-out phase.
type watchSpec struct {
	phase string
	// prefix names the ConfigMaps the phase creates, each phase its
	// own.
	prefix   string
	watchers int
	// connections, when positive, is how many clients of their own,
	// each with its own connections, the watches are spread over;
	// otherwise they share one client of their own.
	connections int
	// events is how many ConfigMaps the phase creates; rate paces the
	// creates at up to rate per second, and zero creates them as fast
	// as Concurrency allows.
	events int
	rate   float64
}

// watchPhases are the watch fan-out phases of the configuration.
func (r *run) watchPhases() []phase {
	specs := []watchSpec{
		{phase: PhaseWatch, prefix: configMapPrefix, watchers: r.Watchers, events: r.WatchEvents, rate: r.WatchRate},
		{phase: PhaseWatchBurst, prefix: burstPrefix, watchers: r.Watchers, events: r.WatchEvents},
	}
	if r.WideWatchers > 0 {
		specs = append(specs, watchSpec{phase: PhaseWatchWide, prefix: widePrefix, watchers: r.WideWatchers, connections: r.WideConnections, events: r.WideWatchEvents, rate: r.WideWatchRate})
	}
	phases := make([]phase, len(specs))
	for i, spec := range specs {
		phases[i] = phase{spec.phase, one(func(ctx context.Context) (Result, error) { return r.watch(ctx, spec) })}
	}
	return phases
}

// watch opens the spec's watches of the namespace's ConfigMaps, all from
// the resourceVersion of one list, then creates the spec's ConfigMaps and
// waits, at most Timeout after the last create, for every watcher to
// receive every event. Latency is from just before each create to the
// delivery of its event.
func (r *run) watch(ctx context.Context, spec watchSpec) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cms := r.Client.CoreV1().ConfigMaps(r.Namespace)

	listCtx, listCancel := context.WithTimeout(ctx, r.Timeout)
	l, err := cms.List(listCtx, metav1.ListOptions{})
	listCancel()
	if err != nil {
		return Result{}, fmt.Errorf("list config maps in %s: %w", r.Namespace, err)
	}
	clients, conns, err := r.watchClients(spec.connections)
	if err != nil {
		return Result{}, err
	}
	watchers, err := r.openWatchesOn(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion}, spec.watchers, clients)
	defer stopAll(watchers)
	if err != nil {
		return Result{}, err
	}
	connections := int(conns.Load())
	r.Logger.Info("bench watch: watches open", "phase", spec.phase, "watchers", len(watchers), "connections", connections)

	// deliverCtx ends the wait for deliveries: Timeout after the last
	// create, or at once when the phase fails.
	deliverCtx, stopDelivery := context.WithCancel(ctx)
	defer stopDelivery()
	var wg sync.WaitGroup
	errs := make([]error, len(watchers))
	for i, w := range watchers {
		wg.Go(func() { errs[i] = w.receive(deliverCtx, spec.prefix, spec.events) })
	}

	// sent[i] is when the create of ConfigMap i was sent; written by the
	// create of i only, read after wg.Wait.
	sent := make([]time.Time, spec.events)
	cpu, err := startCPU(r.ServerCPU)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	var pace *time.Ticker
	if spec.rate > 0 {
		// Each create waits for a tick of its own; up to Concurrency of
		// them are in flight, so a slow answer does not slow the pace.
		pace = time.NewTicker(time.Duration(float64(time.Second) / spec.rate))
		defer pace.Stop()
	}
	_, _, err = runOps(ctx, spec.events, r.Concurrency, r.Timeout, func(ctx context.Context, i int) error {
		if pace != nil {
			select {
			case <-pace.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: objectName(spec.prefix, i)},
			BinaryData: map[string][]byte{"payload": r.payload},
		}
		sent[i] = time.Now()
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create config map %s/%s: %w", r.Namespace, cm.Name, err)
		}
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
			latencies = append(latencies, d.at.Sub(sent[d.index]))
			if d.at.After(end) {
				end = d.at
			}
		}
	}
	if len(latencies) < len(watchers)*spec.events {
		// Some did not arrive: the phase lasted until the wait ended.
		end = time.Now()
	}
	clientCPU, serverCPU, err := cpu.perOp(len(latencies))
	if err != nil {
		return Result{}, err
	}
	res := summarize(spec.phase, len(latencies), end.Sub(start), latencies)
	res.ClientCPU, res.ServerCPU = clientCPU, serverCPU
	res.Watchers = len(watchers)
	res.Connections = connections
	res.Rate = spec.rate
	res.Delivered = len(latencies)
	res.Expected = len(watchers) * spec.events
	return res, nil
}

// watchClients returns the clients a watch phase spreads its watches
// over, n of them (at least one), each with connections of its own, and
// the count of their connections open. Without REST, it is the run's
// client, whose connections are not counted.
func (r *run) watchClients(n int) ([]kubernetes.Interface, *atomic.Int64, error) {
	open := new(atomic.Int64)
	if r.REST == nil {
		return []kubernetes.Interface{r.Client}, open, nil
	}
	clients := make([]kubernetes.Interface, max(n, 1))
	for i := range clients {
		config := rest.CopyConfig(r.REST)
		// A dialer of its own gives the client a transport of its own:
		// client-go shares one among clients of equal configuration.
		dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		config.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			open.Add(1)
			return &countedConn{Conn: conn, open: open}, nil
		}
		client, err := kubernetes.NewForConfig(config)
		if err != nil {
			return nil, nil, fmt.Errorf("watch client for %s: %w", config.Host, err)
		}
		clients[i] = client
	}
	return clients, open, nil
}

// countedConn is a connection counted in open until it is closed. The
// HTTP/2 transport closes those it dialed for requests made at once but
// does not need, once one connection can carry them all.
type countedConn struct {
	net.Conn
	open *atomic.Int64
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}

// openWatches opens Watchers watches of the namespace's ConfigMaps with
// opts through the run's client; see openWatchesOn.
func (r *run) openWatches(ctx context.Context, opts metav1.ListOptions) ([]*watcher, error) {
	return r.openWatchesOn(ctx, opts, r.Watchers, []kubernetes.Interface{r.Client})
}

// openWatchesOn opens n watches of the namespace's ConfigMaps with opts,
// spread over clients in turn: the first of each client alone, so that the
// client has its connection before the others ask for one (requests made
// at once before a client has a connection each dial one, and the
// transport closes all but one in the background), then the rest
// Concurrency at a time. It returns the watches opened so far also on
// error, for the caller to stop.
func (r *run) openWatchesOn(ctx context.Context, opts metav1.ListOptions, n int, clients []kubernetes.Interface) ([]*watcher, error) {
	watchers := make([]*watcher, n)
	open := func(ctx context.Context, i int) error {
		cms := clients[i%len(clients)].CoreV1().ConfigMaps(r.Namespace)
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
	}
	first := min(n, len(clients))
	for i := range first {
		if err := open(ctx, i); err != nil {
			return watchers, err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.Concurrency)
	for i := first; i < n; i++ {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			return open(ctx, i)
		})
	}
	return watchers, g.Wait()
}

// receive records the ConfigMaps named with prefix that the watch delivers
// until it has seen all events of them, or ctx ends. A watch that fails or closes early is an
// error; one that is only slow is not, its shortfall is the measure.
func (w *watcher) receive(ctx context.Context, prefix string, events int) error {
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
				if i, ok := nameIndex(cm.Name, prefix, events); ok && !seen[i] {
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
