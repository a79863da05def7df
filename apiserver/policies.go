package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/trustplane/trustplane/admission"
	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/apiserver/storage"
)

// policyStage runs what the Rego admission stage needs beside requests: the
// replication of objects into the policies' data, and the reload of the
// policies, from the policy directory and from the ConfigMaps of
// kube-system labelled trustplane.io/policy=rego.
type policyStage struct {
	plugin    *opa.Plugin
	data      *opa.Data
	replicate []schema.GroupResource
	// dir, when set, is watched for changes, and so are the ConfigMaps.
	dir string

	mu sync.Mutex // guards fromConfigMaps
	// fromConfigMaps are the policies of the labelled ConfigMaps, by
	// "configmap:kube-system/<name>/<key>".
	fromConfigMaps map[string][]byte
}

// policyLabelRego is the value of admission.PolicyLabel that marks a
// ConfigMap of kube-system as carrying Rego policies; the
// PolicyConfigMaps plugin keeps their writes to cluster administrators.
const policyLabelRego = "rego"

// start replicates each resource from its watch cache until ctx is done,
// returning once every one has its current objects in the data (or
// syncCtx is done); and watches the policy directory. Its goroutines are
// added to wg.
func (p *policyStage) start(ctx, syncCtx context.Context, wg *sync.WaitGroup, caches map[schema.GroupResource]*storage.Cacher, logger *slog.Logger) error {
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
	if p.dir == "" {
		return nil
	}
	cmSynced := make(chan struct{}, 1)
	wg.Go(func() { p.followConfigMaps(ctx, caches[configMapsGR], cmSynced) })
	select {
	case <-cmSynced:
	case <-syncCtx.Done():
		return fmt.Errorf("admission policies: the policy ConfigMaps did not sync: %w", syncCtx.Err())
	}
	// The ConfigMaps' policies are in force before the server serves:
	// they load as the directory's do at start, and stop it when they do
	// not compile or pass their tests, rather than letting requests
	// through that they would refuse.
	p.mu.Lock()
	none := len(p.fromConfigMaps) == 0
	p.mu.Unlock()
	if !none {
		files, err := p.read()
		if err != nil {
			return fmt.Errorf("admission policies: %w", err)
		}
		set, err := p.data.Compile(ctx, files)
		if err != nil {
			return fmt.Errorf("admission policies with those of the ConfigMaps of kube-system: %w", err)
		}
		p.plugin.Swap(set)
	}
	// Without them, the directory's set, loaded with the configuration,
	// is the running one.
	wg.Go(func() { p.plugin.Watch(ctx, p.data, opa.DefaultReloadInterval, p.read) })
	return nil
}

var configMapsGR = schema.GroupResource{Resource: "configmaps"}

// read is every policy: the directory's and the ConfigMaps'.
func (p *policyStage) read() (map[string][]byte, error) {
	files, err := opa.ReadDirs(p.dir)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for path, src := range p.fromConfigMaps {
		files[path] = src
	}
	return files, nil
}

// followConfigMaps keeps fromConfigMaps the .rego keys of kube-system's
// labelled ConfigMaps, and says on synced when it first has them all. A watch that starts again gathers its initial
// events apart and puts them in whole, so that no reload in between sees
// some of the policies gone.
func (p *policyStage) followConfigMaps(ctx context.Context, cache *storage.Cacher, synced chan<- struct{}) {
	followCache(ctx, cache, storage.ListPrefix(configMapsGR, metav1.NamespaceSystem), watchBufferForPolicies, func(w *storage.Watcher, _ int64) {
		files, initial := map[string][]byte{}, w.Initial
		commit := func() {
			p.mu.Lock()
			p.fromConfigMaps = files
			p.mu.Unlock()
			// The first watch's objects are all in.
			select {
			case synced <- struct{}{}:
			default:
			}
		}
		if initial == 0 {
			commit()
		}
		for ev := range w.Events() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			if initial > 0 {
				policyKeys(files, cm, ev.Type)
				if initial--; initial == 0 {
					commit()
				}
				continue
			}
			p.mu.Lock()
			policyKeys(p.fromConfigMaps, cm, ev.Type)
			p.mu.Unlock()
		}
	})
}

// policyKeys sets in files the policies of cm after an event of type typ:
// its .rego keys by "configmap:<namespace>/<name>/<key>", none once it is
// deleted or unlabelled.
func policyKeys(files map[string][]byte, cm *corev1.ConfigMap, typ watch.EventType) {
	prefix := "configmap:" + cm.Namespace + "/" + cm.Name + "/"
	for path := range files {
		if strings.HasPrefix(path, prefix) {
			delete(files, path)
		}
	}
	if typ == watch.Deleted || cm.Labels[admission.PolicyLabel] != policyLabelRego {
		return
	}
	for key, src := range cm.Data {
		if strings.HasSuffix(key, ".rego") {
			files[prefix+key] = []byte(src)
		}
	}
}

func (p *policyStage) follow(ctx context.Context, gr schema.GroupResource, cache *storage.Cacher, synced chan<- struct{}, logger *slog.Logger) {
	told := false
	// Until a watch's initial events are all in, and after a write that
	// failed, the data is marked stale and evaluations refuse; a failure
	// ends the watch, and the next one replicates afresh.
	fresh := func() {
		p.data.MarkFresh(gr.Resource)
		if !told {
			synced <- struct{}{}
			told = true
		}
	}
	failed := func(err error) {
		if ctx.Err() != nil {
			return
		}
		logger.Error("admission policies: replication failed; replicating afresh", "resource", gr.String(), "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	followCache(ctx, cache, storage.ListPrefix(gr, ""), watchBufferForPolicies, func(w *storage.Watcher, rev int64) {
		// The watch ended, or fell behind: stale until the next one is in.
		defer p.data.MarkStale(gr.Resource)
		p.data.MarkStale(gr.Resource)
		if err := p.data.Reset(ctx, gr.Resource); err != nil {
			failed(err)
			return
		}
		initial := w.Initial
		// Once the initial events are in, the data is the cache's as of
		// rev; after that, as of each event's revision.
		caughtUp := func() {
			p.data.Applied(gr.Resource, rev)
			fresh()
		}
		if initial == 0 {
			caughtUp()
		}
		for ev := range w.Events() {
			accessor, err := meta.Accessor(ev.Object)
			switch {
			case err != nil:
			case ev.Type == watch.Deleted:
				err = p.data.Delete(ctx, gr.Resource, accessor.GetNamespace(), accessor.GetName())
			default:
				err = p.data.Put(ctx, gr.Resource, accessor.GetNamespace(), accessor.GetName(), ev.Object)
			}
			if err != nil {
				failed(err)
				return
			}
			if initial--; initial == 0 {
				caughtUp()
			} else if initial < 0 {
				p.data.Applied(gr.Resource, ev.Rev)
			}
		}
	})
}

// watchBufferForPolicies is how many events replication may fall behind
// before its watch is cut off and started again.
const watchBufferForPolicies = 10000

// growStack grows the stack of a request whose admission evaluates Rego
// policies (a write, while policies are loaded) to hold the evaluation,
// at the top of the request: see opa.GrowStack.
func (p *policyStage) growStack(r *http.Request) {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		if p.plugin.Evaluates() {
			opa.GrowStack()
		}
	}
}
