package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// deploymentKind is the kind a ReplicaSet's controller reference names.
var deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// deploymentController rolls Deployments out through ReplicaSets, as
// kube's deployment controller (pkg/controller/deployment) does: it
// creates a ReplicaSet for each pod template, scales the new one up and
// the old ones down by the strategy, records revisions on them, keeps
// revisionHistoryLimit of the old ones, and reports progress in the
// Deployment's status. The ReplicaSet controller makes the pods; this
// one reads only what it reports in the ReplicaSets' status.
type deploymentController struct {
	client      kubernetes.Interface
	deployments appslisters.DeploymentLister
	replicaSets appslisters.ReplicaSetLister
	recorder    record.EventRecorder
	w           *worker
	logger      *slog.Logger
}

func newDeploymentController(c *controllerContext) (runner, error) {
	deployments := c.informers.Apps().V1().Deployments()
	replicaSets := c.informers.Apps().V1().ReplicaSets()
	broadcaster := record.NewBroadcaster()
	dc := &deploymentController{
		client:      c.client,
		deployments: deployments.Lister(),
		replicaSets: replicaSets.Lister(),
		recorder:    broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "deployment-controller"}),
		logger:      c.logger.With("controller", "deployment"),
	}
	dc.w = newWorker("deployment", c.logger, dc.sync)
	if _, err := deployments.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    dc.w.enqueue,
		UpdateFunc: func(_, obj any) { dc.w.enqueue(obj) },
		DeleteFunc: dc.w.enqueue,
	}); err != nil {
		return nil, err
	}
	if _, err := replicaSets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    dc.addReplicaSet,
		UpdateFunc: dc.updateReplicaSet,
		DeleteFunc: dc.deleteReplicaSet,
	}); err != nil {
		return nil, err
	}
	synced := []cache.InformerSynced{deployments.Informer().HasSynced, replicaSets.Informer().HasSynced}
	return func(ctx context.Context, workers int) {
		// Events are written as the controller, once it runs, and the
		// broadcaster's goroutines end with it.
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.client.CoreV1().Events("")})
		defer broadcaster.Shutdown()
		dc.w.run(ctx, workers, synced...)
	}, nil
}

// addReplicaSet wakes the Deployment that owns rs, or, for an orphan,
// every Deployment that could adopt it.
func (dc *deploymentController) addReplicaSet(obj any) {
	rs := obj.(*appsv1.ReplicaSet)
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := dc.owner(rs.Namespace, ref); d != nil {
			dc.w.enqueue(d)
		}
		return
	}
	for _, d := range dc.selecting(rs) {
		dc.w.enqueue(d)
	}
}

func (dc *deploymentController) updateReplicaSet(oldObj, obj any) {
	old, cur := oldObj.(*appsv1.ReplicaSet), obj.(*appsv1.ReplicaSet)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	oldRef, curRef := metav1.GetControllerOf(old), metav1.GetControllerOf(cur)
	refChanged := !reflect.DeepEqual(oldRef, curRef)
	if refChanged && oldRef != nil {
		// The former owner has one ReplicaSet less.
		if d := dc.owner(old.Namespace, oldRef); d != nil {
			dc.w.enqueue(d)
		}
	}
	if curRef != nil {
		if d := dc.owner(cur.Namespace, curRef); d != nil {
			dc.w.enqueue(d)
		}
		return
	}
	if refChanged || !reflect.DeepEqual(old.Labels, cur.Labels) {
		for _, d := range dc.selecting(cur) {
			dc.w.enqueue(d)
		}
	}
}

func (dc *deploymentController) deleteReplicaSet(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := dc.owner(rs.Namespace, ref); d != nil {
			dc.w.enqueue(d)
		}
	}
}

// owner is the Deployment a controller reference names, if it still
// exists under the same UID.
func (dc *deploymentController) owner(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	if ref.Kind != deploymentKind.Kind || ref.APIVersion != deploymentKind.GroupVersion().String() {
		return nil
	}
	d, err := dc.deployments.Deployments(namespace).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

// selecting are the Deployments whose selector matches rs's labels.
func (dc *deploymentController) selecting(rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	if len(rs.Labels) == 0 {
		return nil
	}
	all, err := dc.deployments.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.Deployment
	for _, d := range all {
		selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || selector.Empty() || !selector.Matches(labels.Set(rs.Labels)) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// sync brings one Deployment a step closer to its spec, in the order of
// kube's syncDeployment: a paused Deployment or a change of replicas
// only scales; otherwise its strategy rolls it out.
func (dc *deploymentController) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	cached, err := dc.deployments.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d := cached.DeepCopy()
	if d.Spec.Replicas == nil {
		// The server defaults replicas; the arithmetic below counts on
		// them, and a panic would stop every controller.
		dc.logger.Error("deployment without defaults", "deployment", key)
		return nil
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		// Validation refuses such a selector; nothing to retry.
		dc.logger.Error("deployment with an invalid selector", "deployment", key, "err", err)
		return nil
	}
	if selector.Empty() {
		dc.recorder.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			return dc.updateStatus(ctx, d)
		}
		return nil
	}
	rsList, err := dc.claimReplicaSets(ctx, d, selector)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		newRS, oldRSs, err := dc.replicaSetsAndSyncRevision(ctx, d, rsList, false)
		if err != nil {
			return err
		}
		return dc.syncDeploymentStatus(ctx, append(oldRSs, newRS), newRS, d)
	}
	if err := dc.checkPausedConditions(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return dc.syncScale(ctx, d, rsList)
	}
	scaling, err := dc.isScalingEvent(ctx, d, rsList)
	if err != nil {
		return err
	}
	if scaling {
		return dc.syncScale(ctx, d, rsList)
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		return dc.rolloutRecreate(ctx, d, rsList)
	case appsv1.RollingUpdateDeploymentStrategyType:
		return dc.rolloutRolling(ctx, d, rsList)
	}
	return fmt.Errorf("deployment %s: unexpected strategy type %q", key, d.Spec.Strategy.Type)
}

// claimReplicaSets are the ReplicaSets of d's namespace that d controls
// once it has adopted the orphans its selector matches and let go of
// those it no longer matches, as kube's ControllerRefManager does. A
// ReplicaSet another controller owns is never taken.
func (dc *deploymentController) claimReplicaSets(ctx context.Context, d *appsv1.Deployment, selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	all, err := dc.replicaSets.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var owned []*appsv1.ReplicaSet
	for _, rs := range all {
		if rs.Spec.Replicas == nil {
			// Never so from this server, which defaults replicas.
			continue
		}
		ref := metav1.GetControllerOf(rs)
		matches := selector.Matches(labels.Set(rs.Labels))
		switch {
		case ref != nil && ref.UID != d.UID:
		case ref != nil && matches:
			owned = append(owned, rs)
		case ref != nil:
			if d.DeletionTimestamp != nil {
				continue
			}
			patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}],"uid":%q}}`, d.UID, rs.UID)
			if err := dc.patchReplicaSet(ctx, rs, patch); err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("release replica set %s: %w", rs.Name, err)
			}
		case matches && d.DeletionTimestamp == nil && rs.DeletionTimestamp == nil:
			ref, err := json.Marshal(metav1.NewControllerRef(d, deploymentKind))
			if err != nil {
				return nil, err
			}
			// The ReplicaSet's uid is a precondition: a ReplicaSet
			// deleted and made again under the name is not adopted
			// on the strength of the old one.
			patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[%s],"uid":%q}}`, ref, rs.UID)
			adopted, err := dc.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("adopt replica set %s: %w", rs.Name, err)
			}
			owned = append(owned, adopted)
		}
	}
	return owned, nil
}

func (dc *deploymentController) patchReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, patch string) error {
	_, err := dc.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// updateStatus writes d's status and takes the stored object back into
// d, so that a later write in the same sync is not a conflict with
// this one.
func (dc *deploymentController) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	out, err := dc.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	*d = *out
	return nil
}

// setRevision records revision in d's revision annotation. kube sets it
// in the same status update as the conditions; this server keeps a
// status update to the status, so it is a patch of its own.
func (dc *deploymentController) setRevision(ctx context.Context, d *appsv1.Deployment, revision string) error {
	if d.Annotations[revisionAnnotation] == revision {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations":     map[string]string{revisionAnnotation: revision},
		"resourceVersion": d.ResourceVersion,
	}})
	if err != nil {
		return err
	}
	out, err := dc.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return err
	}
	// The status being computed stays; the rest is the server's.
	status := d.Status
	*d = *out
	d.Status = status
	return nil
}
