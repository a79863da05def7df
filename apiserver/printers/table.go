package printers

import (
	"errors"
	"fmt"
	certificatesv1 "k8s.io/api/certificates/v1"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Table converts obj — a single typed object (e.g. *corev1.Pod) or a typed
// list (e.g. *corev1.PodList) — into a Table.
//
// noHeaders omits ColumnDefinitions, as kube-apiserver does for watch events
// after the first. Each row's Object holds the item as a
// *metav1.PartialObjectMetadata (apiVersion meta.k8s.io/v1), which is where
// kubectl reads the NAMESPACE column from. Table.ResourceVersion, Continue
// and RemainingItemCount come from a list's ListMeta; for a single object,
// ResourceVersion comes from the object. now is the instant AGE columns are
// measured from.
//
// An object of a kind this package does not know gets kube-apiserver's
// default table (Name, Created At). An object without metadata is an error,
// which the caller should answer with 406 Not Acceptable as kube does. A nil
// typed list renders zero rows.
func Table(obj runtime.Object, noHeaders bool, now time.Time) (*metav1.Table, error) {
	if obj == nil {
		return nil, errors.New("print table: nil object")
	}
	nilPtr := isNilPointer(obj)

	var (
		items []runtime.Object
		// sample is an object of the table's kind: the object itself, or a
		// zero item of a typed list, so that an empty list still gets its
		// kind's columns.
		sample runtime.Object
	)
	if elem := listItemType(obj); elem != nil {
		sample, _ = reflect.New(elem).Interface().(runtime.Object)
		if !nilPtr {
			var err error
			if items, err = meta.ExtractList(obj); err != nil {
				return nil, fmt.Errorf("print %T as table: %w", obj, err)
			}
		}
	} else {
		if nilPtr {
			return nil, fmt.Errorf("print table: nil %T", obj)
		}
		sample, items = obj, []runtime.Object{obj}
	}

	gk, _, known := describe(sample)
	table := &metav1.Table{
		TypeMeta: metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "Table"},
		Rows:     make([]metav1.TableRow, 0, len(items)),
	}
	if !noHeaders {
		if known {
			table.ColumnDefinitions, _ = Columns(gk)
		} else {
			table.ColumnDefinitions = defaultColumns()
		}
	}

	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil {
			return nil, fmt.Errorf("print %T as table: %w", item, err)
		}
		var row metav1.TableRow
		if itemGK, render, ok := describe(item); known && ok && itemGK == gk {
			row = render(now)
		} else {
			row = defaultRow(m)
		}
		row.Object = runtime.RawExtension{Object: partialObjectMetadata(m)}
		table.Rows = append(table.Rows, row)
	}

	if nilPtr {
		return table, nil
	}
	if l, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = l.GetResourceVersion()
		table.Continue = l.GetContinue()
		table.RemainingItemCount = l.GetRemainingItemCount()
	} else if c, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = c.GetResourceVersion()
	}
	return table, nil
}

// renderFunc renders one object's cells, and row conditions where kube sets
// them, measuring ages from now.
type renderFunc func(now time.Time) metav1.TableRow

// describe returns the GroupKind of a single object of a kind this package
// prints, and the function that renders its row.
func describe(obj runtime.Object) (schema.GroupKind, renderFunc, bool) {
	switch o := obj.(type) {
	case *corev1.Namespace:
		return gkNamespace, bind(o, namespaceRow), true
	case *corev1.Pod:
		return gkPod, bind(o, podRow), true
	case *corev1.Node:
		return gkNode, bind(o, nodeRow), true
	case *corev1.Secret:
		return gkSecret, bind(o, secretRow), true
	case *corev1.ConfigMap:
		return gkConfigMap, bind(o, configMapRow), true
	case *corev1.ServiceAccount:
		return gkServiceAccount, bind(o, serviceAccountRow), true
	case *corev1.Event:
		return gkEvent, bind(o, coreEventRow), true
	case *eventsv1.Event:
		return gkEventsEvent, bind(o, eventsEventRow), true
	case *appsv1.ReplicaSet:
		return gkReplicaSet, bind(o, replicaSetRow), true
	case *appsv1.Deployment:
		return gkDeployment, bind(o, deploymentRow), true
	case *appsv1.StatefulSet:
		return gkStatefulSet, bind(o, statefulSetRow), true
	case *appsv1.DaemonSet:
		return gkDaemonSet, bind(o, daemonSetRow), true
	case *appsv1.ControllerRevision:
		return gkControllerRevision, bind(o, controllerRevisionRow), true
	case *corev1.Service:
		return gkService, bind(o, serviceRow), true
	case *discoveryv1.EndpointSlice:
		return gkEndpointSlice, bind(o, endpointSliceRow), true
	case *coordinationv1.Lease:
		return gkLease, bind(o, leaseRow), true
	case *certificatesv1.CertificateSigningRequest:
		return gkCSR, bind(o, csrRow), true
	case *rbacv1.Role:
		return gkRole, bind(metav1.Object(o), defaultRowAt), true
	case *rbacv1.ClusterRole:
		return gkClusterRole, bind(metav1.Object(o), defaultRowAt), true
	case *rbacv1.RoleBinding:
		return gkRoleBinding, bind(o, roleBindingRow), true
	case *rbacv1.ClusterRoleBinding:
		return gkClusterRoleBinding, bind(o, clusterRoleBindingRow), true
	}
	return schema.GroupKind{}, nil, false
}

func bind[T any](obj T, row func(T, time.Time) metav1.TableRow) renderFunc {
	return func(now time.Time) metav1.TableRow { return row(obj, now) }
}

// defaultRow is a row of k8s.io/apiserver's default table convertor: the
// name, and the creation time as RFC 3339 in UTC.
func defaultRow(m metav1.Object) metav1.TableRow {
	return metav1.TableRow{Cells: []any{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}}
}

func defaultRowAt(m metav1.Object, _ time.Time) metav1.TableRow { return defaultRow(m) }

// partialObjectMetadata is what kube-apiserver puts in a row for
// includeObject=Metadata, the default.
func partialObjectMetadata(m metav1.Object) *metav1.PartialObjectMetadata {
	p := meta.AsPartialObjectMetadata(m)
	p.TypeMeta = metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "PartialObjectMetadata"}
	return p
}

// listItemType returns the element type of obj's Items slice when obj is a
// pointer to a list struct, and nil otherwise. It looks only at types, so
// it works on a nil *PodList too.
func listItemType(obj runtime.Object) reflect.Type {
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	f, ok := t.Elem().FieldByName("Items")
	if !ok || f.Type.Kind() != reflect.Slice {
		return nil
	}
	return f.Type.Elem()
}

func isNilPointer(obj runtime.Object) bool {
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
