package kinds

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestValidateNamespace(t *testing.T) {
	for _, tc := range []struct {
		name       string
		finalizers []corev1.FinalizerName
		create     []string
		update     []string
	}{
		{"none", nil, nil, nil},
		{"standard and qualified", []corev1.FinalizerName{"kubernetes", "orphan", "foregroundDeletion", "example.com/cleanup"}, nil, nil},
		{"unknown unprefixed", []corev1.FinalizerName{"kubernetes", "cleanup"},
			[]string{e("spec.finalizers", invalid)}, []string{e("spec.finalizers[1]", invalid)}},
		{"not a qualified name", []corev1.FinalizerName{"example.com/clean up"},
			[]string{e("spec.finalizers", invalid)}, []string{e("spec.finalizers[0]", invalid)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := &corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: tc.finalizers}}
			ns.Name = "team-a"
			checkErrs(t, ValidateNamespace(ns, nil), tc.create...)
			checkErrs(t, ValidateNamespace(ns, ns.DeepCopy()), tc.update...)
		})
	}
}

func TestValidateServiceAccount(t *testing.T) {
	sa := &corev1.ServiceAccount{
		Secrets:          []corev1.ObjectReference{{Name: "not-created-yet"}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}},
	}
	sa.Name, sa.Namespace = "builder", "default"
	checkErrs(t, ValidateServiceAccount(sa, nil))
	checkErrs(t, ValidateServiceAccount(sa, sa.DeepCopy()))
}
