package admission

import (
	"context"
	"errors"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// namespaces is a test-only in-memory NamespaceGetter.
type namespaces map[string]*corev1.Namespace

var _ NamespaceGetter = namespaces(nil)

func (n namespaces) GetNamespace(_ context.Context, name string) (*corev1.Namespace, error) {
	if ns, ok := n[name]; ok {
		return ns, nil
	}
	if name == "broken" {
		return nil, errors.New("etcd unreachable")
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
}

func TestNamespaceLifecycle(t *testing.T) {
	now := metav1.Now()
	plugin, err := NewNamespaceLifecycle(namespaces{
		"default": {ObjectMeta: metav1.ObjectMeta{Name: "default"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
		"dying":   {ObjectMeta: metav1.ObjectMeta{Name: "dying", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	nsKind := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	attrs := func(kind schema.GroupVersionKind, ns, name string, op admission.Operation) admission.Attributes {
		return admission.NewAttributesRecord(nil, nil, kind, ns, name, schema.GroupVersionResource{}, "", op, nil, false, &user.DefaultInfo{Name: "alice"})
	}
	tests := []struct {
		name  string
		attrs admission.Attributes
		check func(error) bool
	}{
		{"create in existing namespace", attrs(cm, "default", "a", admission.Create), func(err error) bool { return err == nil }},
		{"create in missing namespace", attrs(cm, "nope", "a", admission.Create), apierrors.IsNotFound},
		{"update in missing namespace", attrs(cm, "nope", "a", admission.Update), apierrors.IsNotFound},
		{"create in terminating namespace", attrs(cm, "dying", "a", admission.Create), apierrors.IsForbidden},
		{"update in terminating namespace", attrs(cm, "dying", "a", admission.Update), func(err error) bool { return err == nil }},
		{"delete in terminating namespace", attrs(cm, "dying", "a", admission.Delete), func(err error) bool { return err == nil }},
		{"namespace lookup fails", attrs(cm, "broken", "a", admission.Create), func(err error) bool {
			// Refused, with a cause for the log, not an API error whose
			// message would reach the client.
			_, isAPI := err.(apierrors.APIStatus)
			return err != nil && !isAPI
		}},
		{"local access review in a missing namespace", admission.NewAttributesRecord(nil, nil, authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview"), "missing", "", authorizationv1.SchemeGroupVersion.WithResource("localsubjectaccessreviews"), "", admission.Create, nil, false, &user.DefaultInfo{Name: "alice"}), func(err error) bool { return err == nil }},
		{"local access review in a terminating namespace", admission.NewAttributesRecord(nil, nil, authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview"), "dying", "", authorizationv1.SchemeGroupVersion.WithResource("localsubjectaccessreviews"), "", admission.Create, nil, false, &user.DefaultInfo{Name: "alice"}), func(err error) bool { return err == nil }},
		{"delete default", attrs(nsKind, "", "default", admission.Delete), apierrors.IsForbidden},
		{"delete kube-system", attrs(nsKind, "", "kube-system", admission.Delete), apierrors.IsForbidden},
		{"delete kube-public", attrs(nsKind, "", "kube-public", admission.Delete), apierrors.IsForbidden},
		{"delete kube-node-lease", attrs(nsKind, "", "kube-node-lease", admission.Delete), apierrors.IsForbidden},
		{"delete other namespace", attrs(nsKind, "", "team-a", admission.Delete), func(err error) bool { return err == nil }},
		{"create namespace", attrs(nsKind, "", "team-a", admission.Create), func(err error) bool { return err == nil }},
	}
	for _, tt := range tests {
		if err := plugin.Validate(context.Background(), tt.attrs, nil); !tt.check(err) {
			t.Errorf("%s: unexpected result %v", tt.name, err)
		}
	}
	if _, err := NewNamespaceLifecycle(nil); err == nil {
		t.Error("nil getter accepted")
	}
}
