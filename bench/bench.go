package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Defaults for the zero values of Config.
const (
	DefaultConcurrency = 32
	DefaultRequests    = 2000
	DefaultObjectBytes = 1024
	DefaultWatchers    = 1000
	DefaultWatchEvents = 100
	DefaultWatchRate   = 100
	DefaultTimeout     = 30 * time.Second
	// DefaultListObjects and DefaultListRequests make the large-list
	// phase: lists of 10,000 ConfigMaps, 20 of each variant.
	DefaultListObjects  = 10000
	DefaultListRequests = 20
	// The wide watch phase: 10,000 watches over 10 clients, each with
	// its own connections, 20 creates paced at one per second. Each
	// create makes 10,000 deliveries; at 10 creates per second, as many
	// deliveries as the paced phase's, and even at 2, the API server of
	// `trustplane up` on two shared cores (load average 7 to 11, as
	// many runnable threads as a watch's delivery goroutines) refused
	// some creates whose admission policies it could not evaluate in
	// time: it fails closed.
	DefaultWideWatchers    = 10000
	DefaultWideConnections = 10
	DefaultWideWatchEvents = 20
	DefaultWideWatchRate   = 1
)

// maxWatchRate is the fastest pace of the watch phase: one create per
// microsecond, far beyond what any cluster answers.
const maxWatchRate = 1e6

// cleanupTimeout bounds the removal of what a run created. It has its own
// deadline so that a run cut short by its context still cleans up.
const cleanupTimeout = time.Minute

// Phase names, in the order Run measures them.
const (
	PhaseCreate = "create"
	PhaseGet    = "get"
	PhaseList   = "list"
	// PhaseListLarge has one Result per variant of the large lists.
	PhaseListLarge = "list-large"
	PhaseWatch     = "watch"
	// PhaseWatchBurst is the watch fan-out with the creates made as fast
	// as Concurrency allows; PhaseWatchWide with WideWatchers watchers
	// over WideConnections clients.
	PhaseWatchBurst = "watch-burst"
	PhaseWatchWide  = "watch-wide"
	PhaseEtcdPut    = "etcd-put"
	// PhaseHold is the only phase of a run with Config.Hold.
	PhaseHold = "hold"
)

// Config says what to measure. A zero number means its default.
type Config struct {
	// Client reaches the cluster; give it a protobuf content type and no
	// client-side rate limit, or the limiter is what gets measured.
	Client kubernetes.Interface
	// REST is the configuration Client was made from. The large-list
	// phase makes a client of each format from it, and the watch phases
	// watch through clients of their own made from it, each with its own
	// connections, which they count; without it they watch through
	// Client, and the wide phase is skipped.
	REST *rest.Config
	// Namespace is where the run works. It must not exist: Run creates it
	// and deletes it, with all it holds, at the end. Empty means
	// "trustplane-bench-" and a random suffix.
	Namespace string
	// Concurrency is the number of operations in flight.
	Concurrency int
	// Requests is the number of operations of each of the create, get,
	// list and etcd-put phases.
	Requests int
	// ListObjects is the number of ConfigMaps the large-list phase
	// creates and lists, and ListRequests the number of lists of each
	// variant: protobuf or JSON, resourceVersion "" (a consistent read)
	// or "0" (any revision the server has), gzip accepted or not.
	ListObjects  int
	ListRequests int
	// ObjectBytes is the size of the payload of each Secret and ConfigMap.
	ObjectBytes int
	// Watchers is the number of watches the watch and watch-burst
	// phases open.
	Watchers int
	// WatchEvents is the number of ConfigMaps each watch phase creates
	// while its watches are open.
	WatchEvents int
	// WatchRate paces the creates of the watch phase at up to WatchRate
	// per second (at most one million), so that delivery latency is
	// measured under a load the cluster sustains; the watch-burst phase
	// then creates as many as fast as Concurrency allows, and its
	// latency includes the queue of the burst. It is a ceiling: with
	// every worker waiting on an answer, a tick is skipped.
	WatchRate float64
	// WideWatchers is the number of watches of the watch-wide phase,
	// spread over WideConnections clients, its WideWatchEvents creates
	// paced at WideWatchRate per second. A negative WideWatchers skips
	// the phase.
	WideWatchers    int
	WideConnections int
	WideWatchEvents int
	WideWatchRate   float64
	// Timeout bounds each operation, and the wait for watch deliveries
	// after the last ConfigMap is created.
	Timeout time.Duration
	// Etcd, when not nil, is a client of the cluster's etcd allowed to
	// write under /registry/; Run then measures raw puts as a baseline.
	Etcd *clientv3.Client
	// Logger receives progress; nil discards it.
	Logger *slog.Logger

	// Hold, when positive, makes the run a measure of memory instead of
	// the phases above, etcd-put included: it creates Hold ConfigMaps of
	// ObjectBytes each, opens Watchers watches of them, and reads Memory
	// once the watches have caught up.
	Hold int
	// WatchList makes the hold phase's watches use the watch-list
	// protocol, as informers of client-go 1.35 and later do: each watch
	// receives every ConfigMap held as an initial event, then a bookmark.
	// Otherwise they start at the revision the creates reached, as after
	// an informer's list. It needs Hold.
	WatchList bool
	// ServerCPU, when not nil, reads the CPU time the API server has
	// used, for the watch phases to report it per delivery; see
	// ProcessCPU.
	ServerCPU func() (time.Duration, error)
	// Memory, when not nil, reads the API server's memory for the hold
	// phase; see ProcessMemory.
	Memory func(context.Context) (Memory, error)
}

// Result is the measure of one phase.
type Result struct {
	// Phase is one of the Phase constants.
	Phase string `json:"phase"`
	// Ops is the number of operations; for the watch phase, the events
	// delivered.
	Ops int `json:"ops"`
	// Seconds is the wall time of the phase; for the watch phase, from
	// the first ConfigMap create to the last delivery.
	Seconds float64 `json:"seconds"`
	// PerSecond is Ops / Seconds.
	PerSecond float64 `json:"perSecond"`
	// P50 and P99 are latency percentiles of the operations; for the
	// watch phases, of event delivery: the time a watcher received an
	// event minus the time just before the create of that object was
	// sent.
	P50 time.Duration `json:"p50Nanoseconds"`
	P99 time.Duration `json:"p99Nanoseconds"`
	// Bytes is the payload of each object (create), or the size of each
	// value (etcd-put).
	Bytes int `json:"bytes,omitempty"`
	// Items is the number of objects each list returned (list), or the
	// number of ConfigMaps listed (list-large).
	Items int `json:"items,omitempty"`
	// Format, ResourceVersion and AcceptGzip are the variant of a
	// list-large Result: the media type, the resourceVersion asked, and
	// whether the client accepted gzip. Gzipped is how many of its
	// responses the server compressed; WireBytes the bytes read from the
	// connection per list (TLS and HTTP/2 framing included), BodyBytes
	// those of the body per list once decompressed.
	Format          string  `json:"format,omitempty"`
	ResourceVersion *string `json:"resourceVersion,omitempty"`
	AcceptGzip      bool    `json:"acceptGzip,omitempty"`
	Gzipped         int     `json:"gzipped,omitempty"`
	WireBytes       int64   `json:"wireBytes,omitempty"`
	BodyBytes       int64   `json:"bodyBytes,omitempty"`
	// Watchers, Delivered and Expected describe the watch fan-out:
	// Delivered events were received of Expected = Watchers × the events
	// sent. Connections is how many connections the watches' clients
	// held open once they were open (with Config.REST).
	// Rate is the pace asked of the watch phase's creates, per second;
	// zero when they were not paced.
	Rate        float64 `json:"rate,omitempty"`
	Watchers    int     `json:"watchers,omitempty"`
	Connections int     `json:"connections,omitempty"`
	Delivered   int     `json:"delivered,omitempty"`
	Expected    int     `json:"expected,omitempty"`
	// Ratio is, for the create phase when etcd was measured, creates per
	// second ÷ raw etcd puts per second.
	Ratio float64 `json:"ratio,omitempty"`
	// ClientCPU and ServerCPU are, for the watch phases, the CPU time
	// per delivery of this process (its watchers, decoding every event,
	// and its creates) and of the API server (with Config.ServerCPU),
	// from the first create to the last delivery: figures that other
	// load on the machine changes less than latency.
	ClientCPU time.Duration `json:"clientCPUNanosecondsPerOp,omitempty"`
	ServerCPU time.Duration `json:"serverCPUNanosecondsPerOp,omitempty"`
	// RSSBytes is, for the hold phase, the API server's resident memory
	// with every ConfigMap held and every watch open; PeakRSSBytes its
	// highest since it started; BaseRSSBytes its resident memory before
	// the phase, the baseline in the same run.
	RSSBytes     int64 `json:"rssBytes,omitempty"`
	PeakRSSBytes int64 `json:"peakRSSBytes,omitempty"`
	BaseRSSBytes int64 `json:"baseRSSBytes,omitempty"`
}

// withDefaults returns c with defaults for zero values, or every problem
// with it.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("no client"))
	}
	if c.REST == nil && c.Hold <= 0 {
		errs = append(errs, errors.New("no client configuration for the large lists"))
	}
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{
		{"concurrency", &c.Concurrency, DefaultConcurrency},
		{"requests", &c.Requests, DefaultRequests},
		{"object bytes", &c.ObjectBytes, DefaultObjectBytes},
		{"watchers", &c.Watchers, DefaultWatchers},
		{"watch events", &c.WatchEvents, DefaultWatchEvents},
		{"list objects", &c.ListObjects, DefaultListObjects},
		{"list requests", &c.ListRequests, DefaultListRequests},
		{"wide connections", &c.WideConnections, DefaultWideConnections},
		{"wide watch events", &c.WideWatchEvents, DefaultWideWatchEvents},
	} {
		switch {
		case *f.v < 0:
			errs = append(errs, fmt.Errorf("%s must be positive, got %d", f.name, *f.v))
		case *f.v == 0:
			*f.v = f.def
		}
	}
	for _, f := range []struct {
		name string
		v    *float64
		def  float64
	}{
		{"watch rate", &c.WatchRate, DefaultWatchRate},
		{"wide watch rate", &c.WideWatchRate, DefaultWideWatchRate},
	} {
		switch {
		case !(*f.v >= 0 && *f.v <= maxWatchRate):
			errs = append(errs, fmt.Errorf("%s must be between 0 and %g, got %g", f.name, float64(maxWatchRate), *f.v))
		case *f.v == 0:
			*f.v = f.def
		}
	}
	if c.WideWatchers == 0 {
		c.WideWatchers = DefaultWideWatchers
	}
	if c.REST == nil {
		c.WideWatchers = -1
	}
	if c.Hold < 0 {
		errs = append(errs, fmt.Errorf("hold must not be negative, got %d", c.Hold))
	}
	if c.WatchList && c.Hold <= 0 {
		errs = append(errs, errors.New("watch list is for the hold phase, and no hold was asked"))
	}
	switch {
	case c.Timeout < 0:
		errs = append(errs, fmt.Errorf("timeout must be positive, got %s", c.Timeout))
	case c.Timeout == 0:
		c.Timeout = DefaultTimeout
	}
	if c.Namespace == "" {
		suffix, err := randomSuffix()
		if err != nil {
			errs = append(errs, err)
		}
		c.Namespace = "trustplane-bench-" + suffix
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c, errors.Join(errs...)
}

func randomSuffix() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random namespace name: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Run measures the cluster, phase after phase, and returns one Result per
// phase in order. The first failed operation stops the run and is its
// error. What the run created is removed before Run returns, on success and
// on failure; a failed removal is returned too, with the results measured.
func Run(ctx context.Context, c Config) (results []Result, err error) {
	c, err = c.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("bench config: %w", err)
	}
	r := &run{Config: c, payload: make([]byte, c.ObjectBytes)}
	// Random bytes, so that nothing on the way can shrink them.
	if _, err := rand.Read(r.payload); err != nil {
		return nil, fmt.Errorf("bench payload: %w", err)
	}
	owned, err := r.createNamespace(ctx)
	if owned {
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			if cerr := r.cleanup(cctx); cerr != nil {
				err = errors.Join(err, fmt.Errorf("clean up after bench: %w", cerr))
			}
		}()
	}
	if err != nil {
		return nil, err
	}
	c.Logger.Info("bench started", "namespace", c.Namespace, "concurrency", c.Concurrency, "requests", c.Requests)

	phases := append([]phase{
		{PhaseCreate, one(r.create)},
		{PhaseGet, one(r.get)},
		{PhaseList, one(r.list)},
		{PhaseListLarge, r.listLarge},
	}, r.watchPhases()...)
	switch {
	case c.Hold > 0:
		phases = []phase{{PhaseHold, one(r.hold)}}
	case c.Etcd != nil:
		phases = append(phases, phase{PhaseEtcdPut, one(r.etcdPut)})
	}
	for _, p := range phases {
		rs, err := p.run(ctx)
		if err != nil {
			return results, fmt.Errorf("bench %s: %w", p.name, err)
		}
		for _, res := range rs {
			attrs := []any{"phase", p.name, "ops", res.Ops, "perSecond", math.Round(res.PerSecond), "p99", res.P99}
			if res.ResourceVersion != nil {
				attrs = append(attrs, "format", res.Format, "resourceVersion", *res.ResourceVersion, "acceptGzip", res.AcceptGzip)
			}
			c.Logger.Info("bench phase done", attrs...)
		}
		results = append(results, rs...)
	}
	if c.Etcd != nil && c.Hold == 0 {
		results[0].Ratio = ratio(results[0].PerSecond, results[len(results)-1].PerSecond)
	}
	return results, nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// phase is one measure of a run, with one Result or several.
type phase struct {
	name string
	run  func(context.Context) ([]Result, error)
}

// one is a phase of one Result.
func one(run func(context.Context) (Result, error)) func(context.Context) ([]Result, error) {
	return func(ctx context.Context) ([]Result, error) {
		res, err := run(ctx)
		if err != nil {
			return nil, err
		}
		return []Result{res}, nil
	}
}

// run is the state of one Run, shared by its phases.
type run struct {
	Config
	// payload is the data of every Secret and ConfigMap; it is only read.
	payload []byte
	// secrets is the number of Secrets the create phase made, named
	// secretName(0) to secretName(secrets-1).
	secrets int
	// etcdPrefix, once set, holds the raw keys to delete at the end.
	etcdPrefix string
}
