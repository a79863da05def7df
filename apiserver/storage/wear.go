package storage

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/storage/value"
)

// DefaultWearThreshold is how many values one AES-GCM key may encrypt
// before the server says that it is worn and must be rotated. With a
// random 96-bit nonce per value, the chance that two collide, which
// breaks AES-GCM, grows with the square of the count; kube's
// documentation advises a new key after about 200,000 writes.
const DefaultWearThreshold = 150_000

// WearPrefix is where the writes of each AES-GCM key are counted for
// every server that shares the etcd: WearPrefix<key name> holds a decimal
// count.
const WearPrefix = Prefix + "trustplane.io/encryption-writes/aesgcm/"

// Wear counts the values each AES-GCM key encrypts: this server's writes
// since its last flush, added to the count in etcd. It is safe for
// concurrent use.
type Wear struct {
	threshold atomic.Int64
	logger    *slog.Logger
	// mu guards the maps.
	mu sync.Mutex
	// pending are the writes of each key not yet added in etcd.
	pending map[string]int64
	// flushed are the counts etcd held after the last flush.
	flushed map[string]int64
	// warned are the keys whose wear has been logged.
	warned map[string]bool
}

func newWear(logger *slog.Logger) *Wear {
	w := &Wear{logger: logger, pending: map[string]int64{}, flushed: map[string]int64{}, warned: map[string]bool{}}
	w.threshold.Store(DefaultWearThreshold)
	return w
}

// SetThreshold sets the count past which a key is worn.
func (w *Wear) SetThreshold(n int64) { w.threshold.Store(n) }

// count notes a value written, if an AES-GCM key encrypted it.
func (w *Wear) count(stored []byte) {
	provider, name := StoredKey(stored)
	if provider != "aesgcm" {
		return
	}
	w.mu.Lock()
	w.pending[name]++
	w.mu.Unlock()
}

// KeyWear is how many values one AES-GCM key has encrypted.
type KeyWear struct {
	Name   string
	Writes int64
	// Worn is whether Writes is past the threshold.
	Worn bool
}

// String says it without key material: the key's name and its count.
func (k KeyWear) String() string {
	s := fmt.Sprintf("aesgcm key %s has encrypted %d values", k.Name, k.Writes)
	if k.Worn {
		s += ", past the threshold: rotate it (trustplane secrets-encrypt rotate)"
	}
	return s
}

// Keys are the counts of every key etcd or this server has one of,
// sorted by name.
func (w *Wear) Keys() []KeyWear {
	threshold := w.threshold.Load()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []KeyWear
	for name, n := range w.flushed {
		out = append(out, KeyWear{Name: name, Writes: n + w.pending[name]})
	}
	for name, n := range w.pending {
		if _, ok := w.flushed[name]; !ok {
			out = append(out, KeyWear{Name: name, Writes: n})
		}
	}
	for i := range out {
		out[i].Worn = out[i].Writes > threshold
	}
	slices.SortFunc(out, func(a, b KeyWear) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Run adds this server's counts to etcd every interval, and once more
// when ctx is done, and logs each key that becomes worn.
func (w *Wear) Run(ctx context.Context, client *clientv3.Client, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := w.Flush(flushCtx, client); err != nil {
				w.logger.Warn("encryption key wear: counts not saved", "err", err)
			}
			cancel()
			return
		case <-t.C:
		}
		if err := w.Flush(ctx, client); err != nil {
			w.logger.WarnContext(ctx, "encryption key wear: counts not saved; kept for the next try", "err", err)
		}
		for _, k := range w.Keys() {
			w.mu.Lock()
			warn := k.Worn && !w.warned[k.Name]
			w.warned[k.Name] = w.warned[k.Name] || k.Worn
			w.mu.Unlock()
			if warn {
				w.logger.WarnContext(ctx, "encryption key worn", "provider", "aesgcm", "key", k.Name, "writes", k.Writes, "threshold", w.threshold.Load(), "fix", "trustplane secrets-encrypt rotate")
			}
		}
	}
}

// Flush adds the pending counts to etcd's, each in a compare-and-swap,
// and reads every key's count back. A count it could not add stays
// pending.
func (w *Wear) Flush(ctx context.Context, client *clientv3.Client) error {
	w.mu.Lock()
	pending := w.pending
	w.pending = map[string]int64{}
	w.mu.Unlock()
	var failed error
	for name, n := range pending {
		if err := addCount(ctx, client, WearPrefix+name, n); err != nil {
			failed = err
			w.mu.Lock()
			w.pending[name] += n
			w.mu.Unlock()
		}
	}
	getCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := client.Get(getCtx, WearPrefix, clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("read key wear: %w", err)
	}
	flushed := map[string]int64{}
	for _, kv := range resp.Kvs {
		n, err := strconv.ParseInt(string(kv.Value), 10, 64)
		if err != nil {
			return fmt.Errorf("key wear %s: %q is not a count", kv.Key, kv.Value)
		}
		flushed[strings.TrimPrefix(string(kv.Key), WearPrefix)] = n
	}
	w.mu.Lock()
	w.flushed = flushed
	w.mu.Unlock()
	return failed
}

// addCount adds n to the count at key, retrying while other servers add
// theirs.
func addCount(ctx context.Context, client *clientv3.Client, key string, n int64) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		resp, err := client.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("add key wear: %w", err)
		}
		var cur, rev int64
		if len(resp.Kvs) == 1 {
			if cur, err = strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64); err != nil {
				return fmt.Errorf("key wear %s: %q is not a count", key, resp.Kvs[0].Value)
			}
			rev = resp.Kvs[0].ModRevision
		}
		txn, err := client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, strconv.FormatInt(cur+n, 10))).
			Commit()
		if err != nil {
			return fmt.Errorf("add key wear: %w", err)
		}
		if txn.Succeeded {
			return nil
		}
	}
}

// countingTransformer counts, in wear, the values its transformer
// encrypts.
type countingTransformer struct {
	value.Transformer
	wear *Wear
}

func (c countingTransformer) TransformToStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, error) {
	out, err := c.Transformer.TransformToStorage(ctx, data, dataCtx)
	if err == nil {
		c.wear.count(out)
	}
	return out, err
}

// wearWrites and wearWorn describe the metrics a Wear collects.
var (
	wearWrites = prometheus.NewDesc("trustplane_encryption_key_writes",
		"Values each AES-GCM key has encrypted, counted by every API server that shares the etcd.",
		[]string{"provider", "key"}, nil)
	wearWorn = prometheus.NewDesc("trustplane_encryption_key_worn",
		"1 when an AES-GCM key has encrypted more values than the wear threshold: rotate it with trustplane secrets-encrypt rotate.",
		[]string{"provider", "key"}, nil)
)

var _ prometheus.Collector = (*Wear)(nil)

// Describe implements prometheus.Collector.
func (w *Wear) Describe(ch chan<- *prometheus.Desc) {
	ch <- wearWrites
	ch <- wearWorn
}

// Collect implements prometheus.Collector: each key's count and whether
// it is worn, by the key's name, never its material.
func (w *Wear) Collect(ch chan<- prometheus.Metric) {
	for _, k := range w.Keys() {
		worn := 0.0
		if k.Worn {
			worn = 1
		}
		ch <- prometheus.MustNewConstMetric(wearWrites, prometheus.GaugeValue, float64(k.Writes), "aesgcm", k.Name)
		ch <- prometheus.MustNewConstMetric(wearWorn, prometheus.GaugeValue, worn, "aesgcm", k.Name)
	}
}
