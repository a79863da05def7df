package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runOps calls op for i = 0 … n-1 from concurrency goroutines, each call
// under its own deadline of timeout, and returns the latency of every call
// and the wall time of them all. The first error cancels the others and is
// returned.
func runOps(ctx context.Context, n, concurrency int, timeout time.Duration, op func(ctx context.Context, i int) error) ([]time.Duration, time.Duration, error) {
	var next atomic.Int64
	perWorker := make([][]time.Duration, concurrency)
	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	for w := range concurrency {
		g.Go(func() error {
			samples := make([]time.Duration, 0, n/concurrency+1)
			defer func() { perWorker[w] = samples }()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return nil
				}
				if err := gctx.Err(); err != nil {
					return err
				}
				opCtx, cancel := context.WithTimeout(gctx, timeout)
				t0 := time.Now()
				err := op(opCtx, i)
				d := time.Since(t0)
				cancel()
				if err != nil {
					return err
				}
				samples = append(samples, d)
			}
		})
	}
	err := g.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, s := range perWorker {
		all = append(all, s...)
	}
	return all, elapsed, err
}

// Name prefixes of the objects a run creates.
const (
	secretPrefix    = "bench-"
	configMapPrefix = "watch-"
	burstPrefix     = "burst-"
	widePrefix      = "wide-"
	holdPrefix      = "hold-"
	listPrefix      = "list-"
)

func objectName(prefix string, i int) string { return fmt.Sprintf("%s%06d", prefix, i) }

func secretName(i int) string    { return objectName(secretPrefix, i) }
func configMapName(i int) string { return objectName(configMapPrefix, i) }
func holdName(i int) string      { return objectName(holdPrefix, i) }
func listName(i int) string      { return objectName(listPrefix, i) }

// create makes Requests Secrets of ObjectBytes each.
func (r *run) create(ctx context.Context) (Result, error) {
	secrets := r.Client.CoreV1().Secrets(r.Namespace)
	samples, elapsed, err := runOps(ctx, r.Requests, r.Concurrency, r.Timeout, func(ctx context.Context, i int) error {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: secretName(i)},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"payload": r.payload},
		}
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create secret %s/%s: %w", r.Namespace, s.Name, err)
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	r.secrets = r.Requests
	res := summarize(PhaseCreate, r.Requests, elapsed, samples)
	res.Bytes = r.ObjectBytes
	return res, nil
}

// get reads Requests Secrets chosen at random among those created.
func (r *run) get(ctx context.Context) (Result, error) {
	secrets := r.Client.CoreV1().Secrets(r.Namespace)
	samples, elapsed, err := runOps(ctx, r.Requests, r.Concurrency, r.Timeout, func(ctx context.Context, _ int) error {
		name := secretName(rand.IntN(r.secrets))
		if _, err := secrets.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("get secret %s/%s: %w", r.Namespace, name, err)
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	return summarize(PhaseGet, r.Requests, elapsed, samples), nil
}

// list lists every Secret in the namespace Requests times. Each list must
// hold at least the Secrets created: fewer is an error, not a faster list.
func (r *run) list(ctx context.Context) (Result, error) {
	secrets := r.Client.CoreV1().Secrets(r.Namespace)
	var fewest atomic.Int64
	fewest.Store(-1)
	samples, elapsed, err := runOps(ctx, r.Requests, r.Concurrency, r.Timeout, func(ctx context.Context, _ int) error {
		l, err := secrets.List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list secrets in %s: %w", r.Namespace, err)
		}
		n := len(l.Items)
		if n < r.secrets {
			return fmt.Errorf("list secrets in %s: got %d, want at least the %d created", r.Namespace, n, r.secrets)
		}
		for {
			old := fewest.Load()
			if (old >= 0 && old <= int64(n)) || fewest.CompareAndSwap(old, int64(n)) {
				return nil
			}
		}
	})
	if err != nil {
		return Result{}, err
	}
	res := summarize(PhaseList, r.Requests, elapsed, samples)
	res.Items = int(fewest.Load())
	return res, nil
}
