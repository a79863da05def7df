package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
)

// How the namespace controller paces itself.
const (
	// namespaceRecheck is how soon a namespace whose content is not all
	// gone (finalizers, pods in their grace period) is looked at again.
	namespaceRecheck = 2 * time.Second
	// discoveryTTL is how long the list of namespaced resources is kept.
	discoveryTTL = 30 * time.Second
)

// The conditions kube's namespace controller reports on a namespace being
// deleted.
const (
	conditionContentRemaining    corev1.NamespaceConditionType = "NamespaceContentRemaining"
	conditionFinalizersRemaining corev1.NamespaceConditionType = "NamespaceFinalizersRemaining"
	conditionDeletionFailure     corev1.NamespaceConditionType = "NamespaceDeletionContentFailure"
	conditionDiscoveryFailure    corev1.NamespaceConditionType = "NamespaceDeletionDiscoveryFailure"
)

// newNamespaceController empties each namespace being deleted, as kube's
// namespace controller does: every namespaced resource the server serves
// is deleted through the API (so each object passes admission, waits for
// its own finalizers and, for a pod, its grace period), then, once
// nothing is left, the namespace's "kubernetes" finalizer is removed and
// the server lets it go. It reads and deletes by metadata only: no
// Secret's data reaches it. Progress is reported in the namespace's
// status conditions.
func newNamespaceController(c *controllerContext) (runner, error) {
	meta, disc, err := c.metadataClients("namespace controller")
	if err != nil {
		return nil, err
	}
	d := &namespaceDeleter{c: c, meta: meta, discovery: disc}
	namespaces := c.informers.Core().V1().Namespaces()
	w := newWorker("namespace", c.logger, nil)
	w.sync = func(ctx context.Context, name string) error {
		ns, err := namespaces.Lister().Get(name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
			return nil
		}
		done, err := d.empty(ctx, ns)
		if err != nil {
			return err
		}
		if !done {
			w.queue.AddAfter(name, namespaceRecheck)
		}
		return nil
	}
	if _, err := namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.enqueue,
		UpdateFunc: func(_, obj any) { w.enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	synced := []cache.InformerSynced{namespaces.Informer().HasSynced}
	return func(ctx context.Context, workers int) { w.run(ctx, workers, synced...) }, nil
}

// namespaceDeleter deletes the content of namespaces.
type namespaceDeleter struct {
	c         *controllerContext
	meta      metadata.Interface
	discovery discovery.DiscoveryInterface

	mu        sync.Mutex
	resources []schema.GroupVersionResource
	found     time.Time
}

// deletable are the namespaced resources that can be listed and deleted,
// from discovery, kept for discoveryTTL.
func (d *namespaceDeleter) deletable() ([]schema.GroupVersionResource, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.resources != nil && time.Since(d.found) < discoveryTTL {
		return d.resources, nil
	}
	lists, err := d.discovery.ServerPreferredNamespacedResources()
	if err != nil {
		return nil, err
	}
	var out []schema.GroupVersionResource
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range list.APIResources {
			verbs := r.Verbs
			if strings.Contains(r.Name, "/") || !slices.Contains(verbs, "list") || !(slices.Contains(verbs, "delete") || slices.Contains(verbs, "deletecollection")) {
				continue
			}
			out = append(out, gv.WithResource(r.Name))
		}
	}
	d.resources, d.found = out, time.Now()
	return out, nil
}

// empty deletes what is left in ns and, when nothing is, finalizes it. It
// reports whether the namespace is done with.
func (d *namespaceDeleter) empty(ctx context.Context, ns *corev1.Namespace) (bool, error) {
	resources, err := d.deletable()
	if err != nil {
		return false, d.report(ctx, ns, map[corev1.NamespaceConditionType]string{conditionDiscoveryFailure: "Discovery failed: " + err.Error()})
	}
	remaining := map[string]int{}  // resource → objects left
	finalizers := map[string]int{} // finalizer → objects it holds
	var failures []string
	for _, gvr := range resources {
		client := d.meta.Resource(gvr).Namespace(ns.Name)
		background := metav1.DeletePropagationBackground
		err := client.DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{})
		if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
			err = nil
		}
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", gvr.GroupResource(), err))
			continue
		}
		left, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", gvr.GroupResource(), err))
			continue
		}
		for _, item := range left.Items {
			remaining[gvr.GroupResource().String()]++
			for _, f := range item.Finalizers {
				finalizers[f]++
			}
		}
	}
	conditions := map[corev1.NamespaceConditionType]string{}
	if len(failures) > 0 {
		conditions[conditionDeletionFailure] = "Failed to delete all resource types, " + fmt.Sprint(len(failures)) + " remaining: " + strings.Join(failures, ", ")
	}
	if len(remaining) > 0 {
		conditions[conditionContentRemaining] = "Some resources are remaining: " + counts(remaining, "has %d resource instances")
	}
	if len(finalizers) > 0 {
		conditions[conditionFinalizersRemaining] = "Some content in the namespace has finalizers remaining: " + counts(finalizers, "in %d resource instances")
	}
	if err := d.report(ctx, ns, conditions); err != nil {
		return false, err
	}
	if len(conditions) > 0 {
		return false, nil
	}
	// Empty: the namespace may go.
	final := ns.DeepCopy()
	final.Spec.Finalizers = slices.DeleteFunc(final.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
	_, err = d.c.client.CoreV1().Namespaces().Finalize(ctx, final, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return err == nil, err
}

// report sets the deletion conditions of ns: those given are True with
// their message, the others False, as kube reports them.
func (d *namespaceDeleter) report(ctx context.Context, ns *corev1.Namespace, set map[corev1.NamespaceConditionType]string) error {
	next := ns.DeepCopy()
	changed := false
	for _, t := range []corev1.NamespaceConditionType{conditionDiscoveryFailure, conditionDeletionFailure, conditionContentRemaining, conditionFinalizersRemaining} {
		want := corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: reasonFor(t, false)}
		if msg, ok := set[t]; ok {
			want.Status, want.Reason, want.Message = corev1.ConditionTrue, reasonFor(t, true), msg
		}
		i := slices.IndexFunc(next.Status.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == t })
		switch {
		case i < 0:
			want.LastTransitionTime = metav1.Now()
			next.Status.Conditions = append(next.Status.Conditions, want)
			changed = true
		case next.Status.Conditions[i].Status != want.Status || next.Status.Conditions[i].Message != want.Message:
			want.LastTransitionTime = metav1.Now()
			next.Status.Conditions[i] = want
			changed = true
		}
	}
	if !changed {
		return nil
	}
	_, err := d.c.client.CoreV1().Namespaces().UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone, or changed since: the next sync reports on the new one.
		return nil
	}
	return err
}

// reasonFor is kube's reason of a deletion condition.
func reasonFor(t corev1.NamespaceConditionType, on bool) string {
	if !on {
		switch t {
		case conditionDiscoveryFailure:
			return "ResourcesDiscovered"
		case conditionDeletionFailure:
			return "ContentDeleted"
		default:
			return "ContentRemoved"
		}
	}
	switch t {
	case conditionDiscoveryFailure:
		return "DiscoveryFailed"
	case conditionDeletionFailure:
		return "ContentDeletionFailed"
	case conditionContentRemaining:
		return "SomeResourcesRemain"
	default:
		return "SomeFinalizersRemain"
	}
}

// counts is "a has 2 …, b has 1 …", sorted by name.
func counts(m map[string]int, format string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+" "+fmt.Sprintf(format, m[k]))
	}
	return strings.Join(parts, ", ")
}
