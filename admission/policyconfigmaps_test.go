package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

func TestPolicyConfigMaps(t *testing.T) {
	p, err := NewPolicyConfigMaps("admins")
	if err != nil {
		t.Fatal(err)
	}
	cm := func(labelled bool) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "kube-system"}}
		if labelled {
			c.Labels = map[string]string{PolicyLabel: "rego"}
		}
		return c
	}
	admin := &user.DefaultInfo{Name: "a", Groups: []string{"admins"}}
	other := &user.DefaultInfo{Name: "system:kube-controller-manager"}
	attrs := func(obj, old runtime.Object, ns string, op admission.Operation, u user.Info) admission.Attributes {
		return admission.NewAttributesRecord(obj, old, corev1.SchemeGroupVersion.WithKind("ConfigMap"), ns, "p", corev1.SchemeGroupVersion.WithResource("configmaps"), "", op, nil, false, u)
	}
	tests := []struct {
		name    string
		attrs   admission.Attributes
		refused bool
	}{
		{"admin creates a policy", attrs(cm(true), nil, "kube-system", admission.Create, admin), false},
		{"another creates a policy", attrs(cm(true), nil, "kube-system", admission.Create, other), true},
		{"another labels a ConfigMap", attrs(cm(true), cm(false), "kube-system", admission.Update, other), true},
		{"another removes the label", attrs(cm(false), cm(true), "kube-system", admission.Update, other), true},
		{"another deletes a policy", attrs(nil, cm(true), "kube-system", admission.Delete, other), true},
		{"another writes an unlabelled ConfigMap", attrs(cm(false), nil, "kube-system", admission.Create, other), false},
		{"the label elsewhere loads nothing, so is anyone's", attrs(cm(true), nil, "team", admission.Create, other), false},
	}
	for _, tt := range tests {
		err := p.Validate(context.Background(), tt.attrs, nil)
		if got := apierrors.IsForbidden(err); got != tt.refused || (!tt.refused && err != nil) {
			t.Errorf("%s: %v, want refused %v", tt.name, err, tt.refused)
		}
	}
	if !IsPolicyConfigMapDeletion(attrs(nil, cm(true), "kube-system", admission.Delete, admin)) || IsPolicyConfigMapDeletion(attrs(cm(true), nil, "kube-system", admission.Create, admin)) {
		t.Error("IsPolicyConfigMapDeletion")
	}
}
