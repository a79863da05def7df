package kinds

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestDefaultPullPolicy(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"nginx:1.27", corev1.PullIfNotPresent},
		{"library/nginx", corev1.PullAlways},
		{"docker.io/library/nginx:latest", corev1.PullAlways},
		{"nginx@" + digest, corev1.PullIfNotPresent},
		{"nginx:latest@" + digest, corev1.PullAlways},
		{"nginx:1.27@" + digest, corev1.PullIfNotPresent},
		{"registry.example.com:5000/team/app", corev1.PullAlways},
		{"localhost:5000/app:v1", corev1.PullIfNotPresent},
		{"localhost/app", corev1.PullAlways},
		{"[::1]:5000/app:latest", corev1.PullAlways},
		{"Registry.Example.com/app", corev1.PullAlways},
		// Not valid references: kube cannot tell the tag and defaults to
		// IfNotPresent.
		{"", corev1.PullIfNotPresent},
		{"Nginx", corev1.PullIfNotPresent},
		{"nginx:", corev1.PullIfNotPresent},
		{" nginx", corev1.PullIfNotPresent},
		{"nginx@sha256:abc", corev1.PullIfNotPresent},
		{"nginx:latest@md5:0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
		{"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
	} {
		if got := defaultPullPolicy(tc.image); got != tc.want {
			t.Errorf("defaultPullPolicy(%q) = %s, want %s", tc.image, got, tc.want)
		}
	}
}
