package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// gcIgnored are the resources the garbage collector does not watch, as
// kube's default --gc-ignored-resources: events, the busiest resource of
// all, own nothing and are owned by nothing in practice.
var gcIgnored = []schema.GroupResource{{Group: "", Resource: "events"}, {Group: "events.k8s.io", Resource: "events"}}

// gcNode is what the garbage collector knows of one object: its
// metadata, as its informer last saw it.
type gcNode struct {
	uid       types.UID
	resource  schema.GroupVersionResource
	namespace string
	name      string
	owners    []metav1.OwnerReference
	// deleting: it has a deletionTimestamp.
	deleting   bool
	finalizers []string
	// resourceVersion, for the writes that hold to it.
	resourceVersion string
}

func (n *gcNode) hasFinalizer(f string) bool { return slices.Contains(n.finalizers, f) }

// ownerRef is n's reference to the owner with uid, if any.
func (n *gcNode) ownerRef(uid types.UID) (metav1.OwnerReference, bool) {
	i := slices.IndexFunc(n.owners, func(r metav1.OwnerReference) bool { return r.UID == uid })
	if i < 0 {
		return metav1.OwnerReference{}, false
	}
	return n.owners[i], true
}

// gcResource is a served resource as discovery names it.
type gcResource struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// gcGraph is the owner → dependents graph the garbage collector works
// from, kept by metadata informers over every resource it may collect,
// found by discovery and found again every discoveryTTL.
type gcGraph struct {
	discovery discovery.DiscoveryInterface
	factory   metadatainformer.SharedInformerFactory
	// changed is told the uids to look at when an object changes.
	changed func(uid types.UID)

	mu sync.Mutex // guards what follows
	// nodes by uid; dependents by owner uid (the owner need not be known).
	nodes      map[types.UID]*gcNode
	dependents map[types.UID]map[types.UID]bool
	// kinds maps an owner reference's group and kind to its resource.
	kinds map[schema.GroupKind]gcResource
	// informers are those started, by resource.
	informers map[schema.GroupVersionResource]cache.SharedIndexInformer
}

// discover finds the resources to watch and starts an informer for each
// new one.
func (g *gcGraph) discover(ctx context.Context) error {
	lists, err := g.discovery.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return err
	}
	kinds := map[schema.GroupKind]gcResource{}
	var watch []schema.GroupVersionResource
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return err
		}
		for _, r := range list.APIResources {
			gvr := gv.WithResource(r.Name)
			if strings.Contains(r.Name, "/") || slices.Contains(gcIgnored, gvr.GroupResource()) {
				continue
			}
			if !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") || !slices.Contains(r.Verbs, "delete") {
				continue
			}
			kinds[gv.WithKind(r.Kind).GroupKind()] = gcResource{gvr: gvr, namespaced: r.Namespaced}
			watch = append(watch, gvr)
		}
	}
	g.mu.Lock()
	if err != nil {
		// The groups that did not answer keep the kinds they had.
		for gk, r := range g.kinds {
			if _, ok := kinds[gk]; !ok {
				kinds[gk] = r
			}
		}
	}
	g.kinds = kinds
	var added []schema.GroupVersionResource
	for _, gvr := range watch {
		if _, ok := g.informers[gvr]; !ok {
			added = append(added, gvr)
		}
	}
	g.mu.Unlock()
	for _, gvr := range added {
		inf := g.factory.ForResource(gvr).Informer()
		if _, err := inf.AddEventHandler(g.handler(gvr)); err != nil {
			return fmt.Errorf("watch %s: %w", gvr.GroupResource(), err)
		}
		g.mu.Lock()
		g.informers[gvr] = inf
		g.mu.Unlock()
	}
	g.factory.Start(ctx.Done())
	return err
}

// synced reports whether every informer has listed its resource: until
// then, an owner's dependents are not all known.
func (g *gcGraph) synced() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, inf := range g.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return len(g.informers) > 0
}

// watching reports whether the graph has informers.
func (g *gcGraph) watching() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.informers) > 0
}

// handler keeps the graph of the objects of one resource.
func (g *gcGraph) handler(gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { g.observe(gvr, obj, false) },
		UpdateFunc: func(_, obj any) { g.observe(gvr, obj, false) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			g.observe(gvr, obj, true)
		},
	}
}

// observe records an object's metadata, or its deletion, and tells which
// objects to look at again: the object; the owners it names now or named
// before (one waiting for its dependents may go on); and, once it is
// being deleted or gone, its dependents.
func (g *gcGraph) observe(gvr schema.GroupVersionResource, obj any, gone bool) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	uid := m.GetUID()
	g.mu.Lock()
	touched := []types.UID{uid}
	if old, ok := g.nodes[uid]; ok {
		for _, r := range old.owners {
			delete(g.dependents[r.UID], uid)
			if len(g.dependents[r.UID]) == 0 {
				delete(g.dependents, r.UID)
			}
			touched = append(touched, r.UID)
		}
	}
	if gone {
		delete(g.nodes, uid)
	} else {
		n := &gcNode{
			uid: uid, resource: gvr, namespace: m.GetNamespace(), name: m.GetName(),
			owners: m.GetOwnerReferences(), deleting: m.GetDeletionTimestamp() != nil,
			finalizers: m.GetFinalizers(), resourceVersion: m.GetResourceVersion(),
		}
		g.nodes[uid] = n
		for _, r := range n.owners {
			if g.dependents[r.UID] == nil {
				g.dependents[r.UID] = map[types.UID]bool{}
			}
			g.dependents[r.UID][uid] = true
			touched = append(touched, r.UID)
		}
	}
	if gone || m.GetDeletionTimestamp() != nil {
		for dep := range g.dependents[uid] {
			touched = append(touched, dep)
		}
	}
	g.mu.Unlock()
	for _, u := range touched {
		g.changed(u)
	}
}

// node is a copy of the node of uid, if the graph has it.
func (g *gcGraph) node(uid types.UID) (gcNode, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.nodes[uid]
	if !ok {
		return gcNode{}, false
	}
	return *n, true
}

// dependentsOf are copies of the known dependents of the owner with uid.
func (g *gcGraph) dependentsOf(uid types.UID) []gcNode {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []gcNode
	for dep := range g.dependents[uid] {
		if n, ok := g.nodes[dep]; ok {
			out = append(out, *n)
		}
	}
	return out
}

// resourceOf is the resource of an owner reference's kind.
func (g *gcGraph) resourceOf(ref metav1.OwnerReference) (gcResource, bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return gcResource{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.kinds[gv.WithKind(ref.Kind).GroupKind()]
	return r, ok
}

// rediscover runs discover every discoveryTTL until ctx is done, so that
// a resource added to the server is watched too.
func (g *gcGraph) rediscover(ctx context.Context, log func(error)) {
	t := time.NewTicker(discoveryTTL)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := g.discover(ctx); err != nil {
				log(err)
			}
		}
	}
}
