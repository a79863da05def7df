package admission

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// The namespace controller deletes, and writes a namespace's status and
// finalizers, only in namespaces being deleted; a live one, a missing one
// or one that cannot be read refuses it. Other users are left to the
// other plugins.
func TestNamespaceControllerRestriction(t *testing.T) {
	const controller = "system:serviceaccount:kube-system:namespace-controller"
	now := metav1.Now()
	plugin, err := NewNamespaceControllerRestriction(controller, namespaces{
		"kube-system": {ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
		// Marked Terminating by a status write, not deleted: still live.
		"marked": {ObjectMeta: metav1.ObjectMeta{Name: "marked"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
		"dying":  {ObjectMeta: metav1.ObjectMeta{Name: "dying", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cm := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	cms := corev1.SchemeGroupVersion.WithResource("configmaps")
	rb := rbacv1.SchemeGroupVersion.WithKind("RoleBinding")
	rbs := rbacv1.SchemeGroupVersion.WithResource("rolebindings")
	nsKind := corev1.SchemeGroupVersion.WithKind("Namespace")
	nsRes := corev1.SchemeGroupVersion.WithResource("namespaces")
	crb := rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding")
	crbs := rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")
	as := func(name string, kind schema.GroupVersionKind, res schema.GroupVersionResource, sub, ns, objName string, op admission.Operation) admission.Attributes {
		return admission.NewAttributesRecord(nil, nil, kind, ns, objName, res, sub, op, nil, false, &user.DefaultInfo{Name: name, Groups: []string{"system:serviceaccounts"}})
	}
	byController := func(kind schema.GroupVersionKind, res schema.GroupVersionResource, sub, ns, name string, op admission.Operation) admission.Attributes {
		return as(controller, kind, res, sub, ns, name, op)
	}
	allowed := func(err error) bool { return err == nil }
	// forbiddenNaming is a Forbidden whose message names the namespace
	// and says why.
	forbiddenNaming := func(ns, why string) func(error) bool {
		return func(err error) bool {
			return apierrors.IsForbidden(err) && strings.Contains(err.Error(), ns) && strings.Contains(err.Error(), why)
		}
	}
	tests := []struct {
		name  string
		attrs admission.Attributes
		check func(error) bool
	}{
		{"delete a ConfigMap in a live namespace", byController(cm, cms, "", "kube-system", "settings", admission.Delete), forbiddenNaming("kube-system", "is not being deleted")},
		{"delete a RoleBinding in a live namespace", byController(rb, rbs, "", "kube-system", "system:kube-controller-manager:tokens", admission.Delete), forbiddenNaming("kube-system", "is not being deleted")},
		{"delete in a namespace only marked Terminating", byController(cm, cms, "", "marked", "a", admission.Delete), forbiddenNaming("marked", "is not being deleted")},
		{"delete in a terminating namespace", byController(cm, cms, "", "dying", "a", admission.Delete), allowed},
		{"delete a RoleBinding in a terminating namespace", byController(rb, rbs, "", "dying", "a", admission.Delete), allowed},
		{"update namespaces/status of a live namespace", byController(nsKind, nsRes, "status", "", "kube-system", admission.Update), forbiddenNaming("kube-system", "is not being deleted")},
		{"update namespaces/finalize of a live namespace", byController(nsKind, nsRes, "finalize", "", "kube-system", admission.Update), forbiddenNaming("kube-system", "is not being deleted")},
		{"update namespaces/status of a marked namespace", byController(nsKind, nsRes, "status", "", "marked", admission.Update), forbiddenNaming("marked", "is not being deleted")},
		{"update namespaces/status of a terminating namespace", byController(nsKind, nsRes, "status", "", "dying", admission.Update), allowed},
		{"update namespaces/finalize of a terminating namespace", byController(nsKind, nsRes, "finalize", "", "dying", admission.Update), allowed},
		{"delete in a missing namespace", byController(cm, cms, "", "nope", "a", admission.Delete), forbiddenNaming("nope", "not found")},
		{"finalize a missing namespace", byController(nsKind, nsRes, "finalize", "", "nope", admission.Update), forbiddenNaming("nope", "not found")},
		{"delete a cluster-scoped object", byController(crb, crbs, "", "", "cluster-admin", admission.Delete), apierrors.IsForbidden},
		{"namespace lookup fails", byController(cm, cms, "", "broken", "a", admission.Delete), func(err error) bool {
			// Refused, with a cause for the log, not an API error whose
			// message would reach the client.
			_, isAPI := err.(apierrors.APIStatus)
			return err != nil && !isAPI
		}},
		{"another user deletes in a live namespace", as("alice", cm, cms, "", "kube-system", "settings", admission.Delete), allowed},
		{"another user updates a live namespace's status", as("alice", nsKind, nsRes, "status", "", "kube-system", admission.Update), allowed},
		{"another service account of kube-system", as("system:serviceaccount:kube-system:generic-garbage-collector", rb, rbs, "", "kube-system", "a", admission.Delete), allowed},
		{"another user, missing namespace", as("alice", cm, cms, "", "nope", "a", admission.Delete), allowed},
	}
	for _, tt := range tests {
		if err := plugin.Validate(context.Background(), tt.attrs, nil); !tt.check(err) {
			t.Errorf("%s: unexpected result %v", tt.name, err)
		}
	}
	if plugin.Handles(admission.Create) || plugin.Handles(admission.Connect) {
		t.Error("the plugin handles creates or connects, which are RBAC's to refuse")
	}
	if !plugin.Handles(admission.Update) || !plugin.Handles(admission.Delete) {
		t.Error("the plugin does not handle updates and deletes")
	}
	if _, err := NewNamespaceControllerRestriction(controller, nil); err == nil {
		t.Error("nil getter accepted")
	}
	if _, err := NewNamespaceControllerRestriction("", namespaces{}); err == nil {
		t.Error("empty user accepted")
	}
}
