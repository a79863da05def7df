package printers

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// nodeRoleLabelPrefix marks a role in the key: node-role.kubernetes.io/control-plane="".
	nodeRoleLabelPrefix = "node-role.kubernetes.io/"
	// nodeRoleLabel is the older form, with the role as the value: kubernetes.io/role=worker.
	nodeRoleLabel = "kubernetes.io/role"
)

// nodeRow renders a node. STATUS is Ready, NotReady (the Ready condition is
// False or Unknown) or Unknown (no Ready condition), followed by
// ",SchedulingDisabled" when the node is cordoned.
func nodeRow(node *corev1.Node, now time.Time) metav1.TableRow {
	status := nodeStatus(node)
	roles := strings.Join(nodeRoles(node), ",")
	info := node.Status.NodeInfo
	return metav1.TableRow{Cells: []any{
		node.Name,
		status,
		orNone(roles),
		age(node.CreationTimestamp.Time, now),
		info.KubeletVersion,
		nodeAddress(node, corev1.NodeInternalIP),
		nodeAddress(node, corev1.NodeExternalIP),
		orUnknown(info.OSImage),
		orUnknown(info.KernelVersion),
		orUnknown(info.ContainerRuntimeVersion),
	}}
}

func nodeStatus(node *corev1.Node) string {
	status := "Unknown"
	// The last Ready condition wins, as in kube, should there be several.
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			status = "Ready"
		} else {
			status = "NotReady"
		}
	}
	if node.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles returns the node's roles, sorted and without duplicates.
func nodeRoles(node *corev1.Node) []string {
	var roles []string
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, nodeRoleLabelPrefix):
			if role := strings.TrimPrefix(k, nodeRoleLabelPrefix); role != "" {
				roles = append(roles, role)
			}
		case k == nodeRoleLabel && v != "":
			roles = append(roles, v)
		}
	}
	slices.Sort(roles)
	return slices.Compact(roles)
}

// nodeAddress returns the node's first address of type t, or "<none>".
func nodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return none
}
