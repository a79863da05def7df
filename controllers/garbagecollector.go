package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// gcWait is how soon an object is looked at again while the graph is not
// yet complete.
const gcWait = time.Second

// newGarbageCollector deletes what its owners no longer hold, as kube's
// garbage collector does:
//   - an object whose owners (metadata.ownerReferences) are all gone is
//     deleted; an owner is gone when no object of its kind, name and
//     namespace has its uid, which is checked against the API server,
//     not the cache, before anything is deleted;
//   - references to owners that are gone, or that wait for their
//     dependents to go, are removed from an object that still has an owner;
//   - an owner deleted in the foreground (finalizer "foregroundDeletion")
//     has its dependents deleted, in the foreground themselves if they
//     have dependents, and loses its finalizer once those that block its
//     deletion (blockOwnerDeletion) are gone;
//   - an owner deleted with the orphan policy (finalizer "orphan") has its
//     references removed from its dependents, then loses its finalizer.
//
// It watches every resource the server serves that it can list, watch and
// delete, found by discovery, through metadata informers: it never reads
// more than an object's metadata.
func newGarbageCollector(c *controllerContext) (runner, error) {
	meta, disc, err := c.metadataClients("garbage collector")
	if err != nil {
		return nil, err
	}
	gc := &garbageCollector{meta: meta}
	w := newWorker("garbagecollector", c.logger, nil)
	gc.graph = &gcGraph{
		discovery:  disc,
		factory:    metadatainformer.NewSharedInformerFactory(meta, 0),
		changed:    func(uid types.UID) { w.queue.Add(string(uid)) },
		nodes:      map[types.UID]*gcNode{},
		dependents: map[types.UID]map[types.UID]bool{},
		informers:  map[schema.GroupVersionResource]cache.SharedIndexInformer{},
	}
	w.sync = func(ctx context.Context, key string) error {
		if !gc.graph.synced() {
			w.queue.AddAfter(key, gcWait)
			return nil
		}
		return gc.sync(ctx, types.UID(key))
	}
	return func(ctx context.Context, workers int) {
		defer gc.graph.factory.Shutdown()
		// Discovery is retried until it answers: without it there is no
		// graph to work from. A group that fails while others answer is
		// only missing until the next discovery.
		for {
			err := gc.graph.discover(ctx)
			if err == nil {
				break
			}
			w.logger.Warn("discovery failed; retrying", "err", err)
			if gc.graph.watching() {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(gcWait):
			}
		}
		go gc.graph.rediscover(ctx, func(err error) { w.logger.Warn("discovery failed", "err", err) })
		w.run(ctx, workers)
	}, nil
}

// garbageCollector acts on one object of its graph at a time.
type garbageCollector struct {
	meta  metadata.Interface
	graph *gcGraph
}

// sync does what the object with uid needs, if anything.
func (gc *garbageCollector) sync(ctx context.Context, uid types.UID) error {
	n, ok := gc.graph.node(uid)
	switch {
	case !ok:
		return nil
	case n.deleting && n.hasFinalizer(metav1.FinalizerDeleteDependents):
		return gc.deleteDependents(ctx, n)
	case n.deleting && n.hasFinalizer(metav1.FinalizerOrphanDependents):
		return gc.orphanDependents(ctx, n)
	case n.deleting || len(n.owners) == 0:
		return nil
	}
	return gc.collect(ctx, n)
}

// collect deletes n if none of its owners holds it any more, or removes
// its references to the owners that are gone if one still does.
func (gc *garbageCollector) collect(ctx context.Context, n gcNode) error {
	var solid, drop []types.UID
	waiting := false
	for _, ref := range n.owners {
		state, err := gc.ownerState(ctx, n, ref)
		if err != nil {
			return err
		}
		switch state {
		case ownerPresent:
			solid = append(solid, ref.UID)
		case ownerGone:
			drop = append(drop, ref.UID)
		case ownerWaiting:
			drop = append(drop, ref.UID)
			waiting = true
		}
	}
	switch {
	case len(solid) > 0:
		// Held: only the references to owners gone or going go, or an
		// owner waiting for its dependents would wait for this one
		// forever.
		if len(drop) == 0 {
			return nil
		}
		return gc.removeOwnerRefs(ctx, n, drop)
	case waiting && len(gc.graph.dependentsOf(n.uid)) > 0:
		// An owner waits for it to go, and it has dependents of its
		// own: they go first. If one of them waits for its own
		// dependents, ownership may run in a circle back to the owner
		// (a owns b owns a), where each would wait for the other: as
		// kube does, n stops blocking its owners, which may then go
		// before it. A false alarm only lets an owner go a little early.
		for _, dep := range gc.graph.dependentsOf(n.uid) {
			if dep.deleting && dep.hasFinalizer(metav1.FinalizerDeleteDependents) {
				if err := gc.unblockOwners(ctx, n); err != nil {
					return err
				}
				break
			}
		}
		return gc.delete(ctx, n, metav1.DeletePropagationForeground)
	}
	// Its finalizers say how its own dependents go, as a delete without
	// a policy would keep them (a Background delete removes them).
	policy := metav1.DeletePropagationBackground
	switch {
	case n.hasFinalizer(metav1.FinalizerOrphanDependents):
		policy = metav1.DeletePropagationOrphan
	case n.hasFinalizer(metav1.FinalizerDeleteDependents):
		policy = metav1.DeletePropagationForeground
	}
	return gc.delete(ctx, n, policy)
}

// ownerStates: whether an owner holds its dependent.
type ownerState int

const (
	// ownerPresent exists and is not waiting for its dependents to go;
	// an owner the collector cannot look up (its reference names a
	// namespaced kind for a cluster-scoped object) counts as present,
	// as in kube: such a dependent is never collected.
	ownerPresent ownerState = iota
	// ownerGone: no object of the reference's kind and name has its uid.
	ownerGone
	// ownerWaiting exists, being deleted in the foreground.
	ownerWaiting
)

// ownerState looks up the owner ref names for n: in the graph first,
// whose word that it exists is enough (its deletion, when seen, brings n
// back here), then, before it is found gone, from the API server.
func (gc *garbageCollector) ownerState(ctx context.Context, n gcNode, ref metav1.OwnerReference) (ownerState, error) {
	res, ok := gc.graph.resourceOf(ref)
	if !ok {
		return ownerPresent, fmt.Errorf("owner %s %s of %s: kind not served", ref.APIVersion, ref.Kind, n.name)
	}
	namespace := ""
	if res.namespaced {
		if n.namespace == "" {
			return ownerPresent, nil
		}
		namespace = n.namespace
	}
	if owner, ok := gc.graph.node(ref.UID); ok && owner.resource.GroupResource() == res.gvr.GroupResource() && owner.namespace == namespace && owner.name == ref.Name {
		if owner.deleting && owner.hasFinalizer(metav1.FinalizerDeleteDependents) {
			return ownerWaiting, nil
		}
		return ownerPresent, nil
	}
	// A list of its one name, not a get: the collector's role has no
	// get, so that it can read no Secret whole. A list without a
	// resourceVersion is as fresh as a get.
	list, err := gc.meta.Resource(res.gvr).Namespace(namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", ref.Name).String()})
	if err != nil {
		return ownerPresent, fmt.Errorf("look up owner %s %s/%s: %w", res.gvr.Resource, namespace, ref.Name, err)
	}
	for _, item := range list.Items {
		if item.Name == ref.Name && item.UID == ref.UID {
			if item.DeletionTimestamp != nil && slices.Contains(item.Finalizers, metav1.FinalizerDeleteDependents) {
				return ownerWaiting, nil
			}
			return ownerPresent, nil
		}
	}
	// Gone, or replaced by another object of the same name: the new one
	// does not adopt the old one's dependents.
	return ownerGone, nil
}

// delete deletes n with policy, if it is still the object of that uid.
func (gc *garbageCollector) delete(ctx context.Context, n gcNode, policy metav1.DeletionPropagation) error {
	err := gc.meta.Resource(n.resource).Namespace(n.namespace).Delete(ctx, n.name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: &n.uid},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone already, or replaced.
		return nil
	}
	return err
}

// deleteDependents deletes the dependents of owner, deleted in the
// foreground, and removes its finalizer once none of those that block
// its deletion is left.
func (gc *garbageCollector) deleteDependents(ctx context.Context, owner gcNode) error {
	blocked := false
	for _, dep := range gc.graph.dependentsOf(owner.uid) {
		ref, _ := dep.ownerRef(owner.uid)
		if ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
			blocked = true
		}
		if dep.deleting {
			continue
		}
		// Found with its owner waiting: deleted, or released if it has
		// another owner.
		if err := gc.collect(ctx, dep); err != nil {
			return err
		}
	}
	if blocked {
		// A dependent's deletion brings the owner back here.
		return nil
	}
	return gc.removeFinalizer(ctx, owner, metav1.FinalizerDeleteDependents)
}

// orphanDependents removes the references to owner, deleted with the
// orphan policy, from its dependents, then its finalizer.
func (gc *garbageCollector) orphanDependents(ctx context.Context, owner gcNode) error {
	for _, dep := range gc.graph.dependentsOf(owner.uid) {
		if err := gc.removeOwnerRefs(ctx, dep, []types.UID{owner.uid}); err != nil {
			return err
		}
	}
	return gc.removeFinalizer(ctx, owner, metav1.FinalizerOrphanDependents)
}

// removeOwnerRefs removes n's references to the owners with uids by a
// merge patch that holds to the uid and resourceVersion of n as seen: a
// conflict means a newer n, which will be looked at again.
func (gc *garbageCollector) removeOwnerRefs(ctx context.Context, n gcNode, uids []types.UID) error {
	keep := slices.DeleteFunc(slices.Clone(n.owners), func(r metav1.OwnerReference) bool { return slices.Contains(uids, r.UID) })
	if len(keep) == len(n.owners) {
		return nil
	}
	return gc.patchMeta(ctx, n, map[string]any{"ownerReferences": keep})
}

// unblockOwners sets blockOwnerDeletion false in each of n's references.
func (gc *garbageCollector) unblockOwners(ctx context.Context, n gcNode) error {
	refs := slices.Clone(n.owners)
	changed := false
	for i := range refs {
		if refs[i].BlockOwnerDeletion != nil && *refs[i].BlockOwnerDeletion {
			refs[i].BlockOwnerDeletion = new(false)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return gc.patchMeta(ctx, n, map[string]any{"ownerReferences": refs})
}

// removeFinalizer removes finalizer f from n, likewise held to n as seen.
func (gc *garbageCollector) removeFinalizer(ctx context.Context, n gcNode, f string) error {
	keep := slices.DeleteFunc(slices.Clone(n.finalizers), func(s string) bool { return s == f })
	if len(keep) == len(n.finalizers) {
		return nil
	}
	return gc.patchMeta(ctx, n, map[string]any{"finalizers": keep})
}

// patchMeta merges fields into n's metadata, if n is unchanged since
// seen.
func (gc *garbageCollector) patchMeta(ctx context.Context, n gcNode, fields map[string]any) error {
	fields["uid"] = n.uid
	fields["resourceVersion"] = n.resourceVersion
	body, err := json.Marshal(map[string]any{"metadata": fields})
	if err != nil {
		return err
	}
	_, err = gc.meta.Resource(n.resource).Namespace(n.namespace).Patch(ctx, n.name, types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
