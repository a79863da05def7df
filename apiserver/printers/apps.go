package printers

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func statefulSetRow(s *appsv1.StatefulSet, now time.Time) metav1.TableRow {
	names, images := containerCells(s.Spec.Template.Spec.Containers)
	return metav1.TableRow{Cells: []any{
		s.Name,
		fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, desiredReplicas(s.Spec.Replicas)),
		age(s.CreationTimestamp.Time, now),
		names,
		images,
	}}
}

func daemonSetRow(d *appsv1.DaemonSet, now time.Time) metav1.TableRow {
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	return metav1.TableRow{Cells: []any{
		d.Name,
		int64(d.Status.DesiredNumberScheduled),
		int64(d.Status.CurrentNumberScheduled),
		int64(d.Status.NumberReady),
		int64(d.Status.UpdatedNumberScheduled),
		int64(d.Status.NumberAvailable),
		labels.FormatLabels(d.Spec.Template.Spec.NodeSelector),
		age(d.CreationTimestamp.Time, now),
		names,
		images,
		metav1.FormatLabelSelector(d.Spec.Selector),
	}}
}

// controllerRevisionRow names the revision's controller as kube does,
// "statefulset.apps/web", and "<none>" for an orphan.
func controllerRevisionRow(r *appsv1.ControllerRevision, now time.Time) metav1.TableRow {
	controller := "<none>"
	if ref := metav1.GetControllerOf(r); ref != nil {
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
			controller = strings.ToLower(gv.WithKind(ref.Kind).GroupKind().String()) + "/" + ref.Name
		}
	}
	return metav1.TableRow{Cells: []any{r.Name, controller, r.Revision, age(r.CreationTimestamp.Time, now)}}
}
