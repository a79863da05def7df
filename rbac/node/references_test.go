package node

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestReferences(t *testing.T) {
	p := pod("ns", "p", "n1", func(p *corev1.Pod) {
		p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "b"}, {Name: ""}}
		p.Spec.Volumes = []corev1.Volume{
			secretVolume("a"),
			// Invalid (two sources), yet both count: the list must not
			// rely on validation.
			{Name: "two", VolumeSource: corev1.VolumeSource{
				Secret:    &corev1.SecretVolumeSource{SecretName: "c"},
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}},
			}},
			{Name: "rbd", VolumeSource: corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{SecretRef: &corev1.LocalObjectReference{Name: "rbd"}}}},
			{Name: "az", VolumeSource: corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{SecretName: "az"}}},
		}
		p.Spec.Containers[0].Env = []corev1.EnvVar{secretEnv("a")}
	})
	got := References(p)
	if want := []string{"a", "az", "b", "c", "rbd"}; !slices.Equal(got.Secrets, want) {
		t.Errorf("Secrets = %q, want %q", got.Secrets, want)
	}
	if want := []string{"cm"}; !slices.Equal(got.ConfigMaps, want) {
		t.Errorf("ConfigMaps = %q, want %q", got.ConfigMaps, want)
	}
	if got.ServiceAccount != "default" {
		t.Errorf("ServiceAccount = %q, want default", got.ServiceAccount)
	}
	if r := References(nil); r.Secrets != nil || r.ConfigMaps != nil || r.ServiceAccount != "" {
		t.Errorf("References(nil) = %+v, want zero", r)
	}
}
