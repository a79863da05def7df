package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/apiserver/storage"
)

// policies runs what the Rego admission stage needs beside requests: the
// replication of objects into the policies' data, and the reload of the
// policy directory.
type policies struct {
	plugin    *opa.Plugin
	data      *opa.Data
	replicate []schema.GroupResource
	// dir, when set, is watched for changes.
	dir string
}

// start replicates each resource from its watch cache until ctx is done,
// returning once every one has its current objects in the data (or
// syncCtx is done); and watches the policy directory. Its goroutines are
// added to wg.
func (p *policies) start(ctx, syncCtx context.Context, wg *sync.WaitGroup, caches map[schema.GroupResource]*storage.Cacher, logger *slog.Logger) error {
	synced := make(chan struct{}, len(p.replicate))
	for _, gr := range p.replicate {
		wg.Go(func() { p.follow(ctx, gr, caches[gr], synced, logger) })
	}
	for range p.replicate {
		select {
		case <-synced:
		case <-syncCtx.Done():
			return fmt.Errorf("admission policies: replication did not sync: %w", syncCtx.Err())
		}
	}
	if p.dir != "" {
		wg.Go(func() { p.plugin.Watch(ctx, p.data, opa.DefaultReloadInterval, p.dir) })
	}
	return nil
}

// follow keeps the data's objects of gr those of its cache: a watch from
// the current state (its initial events), then every change; a watch that
// ends starts again from a fresh state. synced is told once, when the
// first initial events are in.
func (p *policies) follow(ctx context.Context, gr schema.GroupResource, cache *storage.Cacher, synced chan<- struct{}, logger *slog.Logger) {
	told := false
	followCache(ctx, cache, storage.ListPrefix(gr, ""), watchBufferForPolicies, func(w *storage.Watcher) {
		if err := p.data.Reset(ctx, gr.Resource); err != nil {
			logger.Error("admission policies: replication reset failed", "resource", gr.String(), "err", err)
		}
		initial := w.Initial
		if initial == 0 && !told {
			synced <- struct{}{}
			told = true
		}
		for ev := range w.Events() {
			accessor, err := meta.Accessor(ev.Object)
			if err != nil {
				continue
			}
			if ev.Type == watch.Deleted {
				err = p.data.Delete(ctx, gr.Resource, accessor.GetNamespace(), accessor.GetName())
			} else {
				err = p.data.Put(ctx, gr.Resource, accessor.GetNamespace(), accessor.GetName(), ev.Object)
			}
			if err != nil && ctx.Err() == nil {
				logger.Error("admission policies: replication failed", "resource", gr.String(), "err", err)
			}
			if initial--; initial == 0 && !told {
				synced <- struct{}{}
				told = true
			}
		}
	})
}

// watchBufferForPolicies is how many events replication may fall behind
// before its watch is cut off and started again.
const watchBufferForPolicies = 10000
