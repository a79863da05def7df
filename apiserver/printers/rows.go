package printers

import (
	"fmt"
	certificatesv1 "k8s.io/api/certificates/v1"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Rows of the kinds whose printing is a matter of picking fields. Integer
// cells are int64, as in kube: JSON clients see a number either way, but the
// Go type is what kube's own tests compare.

func namespaceRow(ns *corev1.Namespace, now time.Time) metav1.TableRow {
	return metav1.TableRow{Cells: []any{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp.Time, now)}}
}

// secretRow counts the keys of data and of stringData. kube counts data
// alone, but stringData is write-only: kube merges it into data when it
// decodes a write, so in kube the two counts are the same thing.
func secretRow(s *corev1.Secret, now time.Time) metav1.TableRow {
	n := len(s.Data)
	for k := range s.StringData {
		if _, dup := s.Data[k]; !dup {
			n++
		}
	}
	return metav1.TableRow{Cells: []any{s.Name, string(s.Type), int64(n), age(s.CreationTimestamp.Time, now)}}
}

func configMapRow(cm *corev1.ConfigMap, now time.Time) metav1.TableRow {
	return metav1.TableRow{Cells: []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), age(cm.CreationTimestamp.Time, now)}}
}

func serviceAccountRow(sa *corev1.ServiceAccount, now time.Time) metav1.TableRow {
	return metav1.TableRow{Cells: []any{sa.Name, int64(len(sa.Secrets)), age(sa.CreationTimestamp.Time, now)}}
}

func replicaSetRow(rs *appsv1.ReplicaSet, now time.Time) metav1.TableRow {
	names, images := containerCells(rs.Spec.Template.Spec.Containers)
	return metav1.TableRow{Cells: []any{
		rs.Name,
		int64(desiredReplicas(rs.Spec.Replicas)),
		int64(rs.Status.Replicas),
		int64(rs.Status.ReadyReplicas),
		age(rs.CreationTimestamp.Time, now),
		names,
		images,
		metav1.FormatLabelSelector(rs.Spec.Selector),
	}}
}

func deploymentRow(d *appsv1.Deployment, now time.Time) metav1.TableRow {
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	// Unlike a ReplicaSet's, a Deployment's empty selector prints as "", not
	// "<none>": kube formats the two differently.
	selector := "<invalid>"
	if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
		selector = s.String()
	}
	return metav1.TableRow{Cells: []any{
		d.Name,
		fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, desiredReplicas(d.Spec.Replicas)),
		int64(d.Status.UpdatedReplicas),
		int64(d.Status.AvailableReplicas),
		age(d.CreationTimestamp.Time, now),
		names,
		images,
		selector,
	}}
}

// desiredReplicas is spec.replicas, which apps/v1 defaults to 1 when unset;
// kube prints objects after defaulting, so an unset count prints as 1.
func desiredReplicas(replicas *int32) int32 {
	if replicas == nil {
		return 1
	}
	return *replicas
}

// containerCells lists the containers' names and images, comma-separated.
func containerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	i := make([]string, len(containers))
	for j, c := range containers {
		n[j], i[j] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

func leaseRow(l *coordinationv1.Lease, now time.Time) metav1.TableRow {
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	return metav1.TableRow{Cells: []any{l.Name, holder, age(l.CreationTimestamp.Time, now)}}
}

// csrRow is kube's: the requested duration, and the state of the request
// as Pending, Approved or Denied, then Failed and Issued when they are so.
func csrRow(c *certificatesv1.CertificateSigningRequest, now time.Time) metav1.TableRow {
	requested := none
	if s := c.Spec.ExpirationSeconds; s != nil {
		requested = duration.HumanDuration(time.Duration(*s) * time.Second)
	}
	var approved, denied, failed bool
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	state := "Pending"
	switch {
	case denied:
		state = "Denied"
	case approved:
		state = "Approved"
	}
	if failed {
		state += ",Failed"
	}
	if len(c.Status.Certificate) > 0 {
		state += ",Issued"
	}
	return metav1.TableRow{Cells: []any{c.Name, age(c.CreationTimestamp.Time, now), c.Spec.SignerName, c.Spec.Username, requested, state}}
}

func roleBindingRow(b *rbacv1.RoleBinding, now time.Time) metav1.TableRow {
	return bindingRow(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp.Time, now)
}

func clusterRoleBindingRow(b *rbacv1.ClusterRoleBinding, now time.Time) metav1.TableRow {
	return bindingRow(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp.Time, now)
}

// bindingRow renders a binding: ROLE is "Kind/name", and the subjects are
// split by kind, service accounts as "namespace/name". Subjects of any other
// kind are not shown.
func bindingRow(name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject, created, now time.Time) metav1.TableRow {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	return metav1.TableRow{Cells: []any{
		name,
		ref.Kind + "/" + ref.Name,
		age(created, now),
		strings.Join(users, ", "),
		strings.Join(groups, ", "),
		strings.Join(sas, ", "),
	}}
}

const none = "<none>"

// age is how long before now t was, as kube prints ages ("5m", "3d"), or
// "<unknown>" for a zero time.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}
