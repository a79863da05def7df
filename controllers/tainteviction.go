package controllers

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// taintEvictionController is kube's taint eviction controller: a pod on
// a node with a NoExecute taint it does not tolerate is deleted at once;
// one that tolerates every such taint, some for a time
// (tolerationSeconds), is deleted once the shortest of those times has
// passed since the taints were seen; one that tolerates them all forever
// stays. A taint removed in time cancels the deletion. The rate at which
// nodes are tainted is the node lifecycle controller's to limit; this
// one deletes as soon as a pod's time is up, as kube's does.
type taintEvictionController struct {
	client     kubernetes.Interface
	pods       corelisters.PodLister
	nodes      corelisters.NodeLister
	podsOnNode func(node string) ([]*corev1.Pod, error)
	recorder   record.EventRecorder
	now        func() time.Time
	w          *worker

	mu sync.Mutex
	// since is, by pod key, when the pod was first seen on a node whose
	// NoExecute taints it tolerates for a time: its clock. Guarded by
	// mu.
	since map[string]time.Time
}

func newTaintEvictionController(c *controllerContext) (runner, error) {
	pods := c.informers.Core().V1().Pods()
	nodes := c.informers.Core().V1().Nodes()
	podsOnNode, err := podsByNode(pods.Informer())
	if err != nil {
		return nil, err
	}
	broadcaster := record.NewBroadcaster()
	tc := &taintEvictionController{
		client:     c.client,
		pods:       pods.Lister(),
		nodes:      nodes.Lister(),
		podsOnNode: podsOnNode,
		recorder:   broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "taint-eviction-controller"}),
		now:        time.Now,
		since:      map[string]time.Time{},
	}
	tc.w = newWorker("taint-eviction-controller", c.logger, tc.sync)
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: tc.w.enqueue,
		UpdateFunc: func(oldObj, obj any) {
			old, cur := oldObj.(*corev1.Pod), obj.(*corev1.Pod)
			if old.Spec.NodeName != cur.Spec.NodeName || !equality.Semantic.DeepEqual(old.Spec.Tolerations, cur.Spec.Tolerations) {
				tc.w.enqueue(obj)
			}
		},
		DeleteFunc: tc.w.enqueue,
	}); err != nil {
		return nil, err
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: tc.nodeChanged,
		UpdateFunc: func(oldObj, obj any) {
			old, cur := oldObj.(*corev1.Node), obj.(*corev1.Node)
			if !equality.Semantic.DeepEqual(noExecuteTaints(old), noExecuteTaints(cur)) {
				tc.nodeChanged(obj)
			}
		},
		DeleteFunc: tc.nodeChanged,
	}); err != nil {
		return nil, err
	}
	synced := []cache.InformerSynced{pods.Informer().HasSynced, nodes.Informer().HasSynced}
	return func(ctx context.Context, workers int) {
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
		defer broadcaster.Shutdown()
		tc.w.run(ctx, workers, synced...)
	}, nil
}

// nodeChanged queues every pod of a node whose NoExecute taints changed.
func (tc *taintEvictionController) nodeChanged(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	pods, err := tc.podsOnNode(node.Name)
	if err != nil {
		tc.w.logger.Error("pods of a node", "node", node.Name, "err", err)
		return
	}
	for _, p := range pods {
		tc.w.enqueue(p)
	}
}

// sync decides one pod's fate by its node's NoExecute taints now.
func (tc *taintEvictionController) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := tc.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		tc.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
		tc.forget(key)
		return nil
	}
	var taints []corev1.Taint
	node, err := tc.nodes.Get(pod.Spec.NodeName)
	switch {
	case err == nil:
		taints = noExecuteTaints(node)
	case !apierrors.IsNotFound(err):
		return err
	}
	if len(taints) == 0 {
		tc.forget(key)
		return nil
	}
	now := tc.now()
	tolerated, used := matchingTolerations(taints, pod.Spec.Tolerations)
	if tolerated {
		wait := minTolerationTime(used)
		if wait < 0 {
			tc.forget(key)
			return nil
		}
		tc.mu.Lock()
		start, ok := tc.since[key]
		if !ok {
			start = now
			tc.since[key] = now
		}
		tc.mu.Unlock()
		if due := start.Add(wait); now.Before(due) {
			tc.w.queue.AddAfter(key, due.Sub(now))
			return nil
		}
	}
	if err := tc.evict(ctx, pod); err != nil {
		return err
	}
	tc.forget(key)
	return nil
}

func (tc *taintEvictionController) forget(key string) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	delete(tc.since, key)
}

// evict marks the pod a disruption target, with kube's reason, and
// deletes it: this pod, not one made since under its name.
func (tc *taintEvictionController) evict(ctx context.Context, pod *corev1.Pod) error {
	tc.w.logger.Info("deleting a pod for its node's NoExecute taint", "pod", pod.Namespace+"/"+pod.Name, "node", pod.Spec.NodeName)
	tc.recorder.Eventf(pod, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s/%s", pod.Namespace, pod.Name)
	if !slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue
	}) {
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "DeletionByTaintManager", Message: "Taint manager: deleting due to NoExecute taint",
			LastTransitionTime: metav1.NewTime(tc.now()),
		}}}})
		if err != nil {
			return err
		}
		_, err = tc.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	err := tc.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptrUID(pod.UID)}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
