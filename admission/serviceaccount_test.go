package admission

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// accounts is a test-only in-memory ServiceAccountGetter, keyed by
// namespace/name; the namespace "broken" fails as storage would.
type accounts map[string]*corev1.ServiceAccount

func (a accounts) ServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	if namespace == "broken" {
		return nil, errors.New("etcd unreachable")
	}
	return a[namespace+"/"+name], nil
}

func podCreate(pod *corev1.Pod) admission.Attributes {
	return admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), pod.Namespace, pod.Name,
		corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "alice"})
}

func TestServiceAccountAdmission(t *testing.T) {
	off := false
	plugin, err := NewServiceAccount(accounts{
		"team/default": {ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "team"}},
		"team/builder": {ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "team"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}}},
		"team/quiet":   {ObjectMeta: metav1.ObjectMeta{Name: "quiet", Namespace: "team"}, AutomountServiceAccountToken: &off},
	})
	if err != nil {
		t.Fatal(err)
	}
	plugin.rand = func(int) string { return "abcde" }
	mount := corev1.VolumeMount{Name: "kube-api-access-abcde", ReadOnly: true, MountPath: ServiceAccountTokenMountPath}
	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		wantErr    string
		wantSA     string
		wantMounts bool
		check      func(t *testing.T, pod *corev1.Pod)
	}{
		{name: "no ServiceAccount runs as default, with the token mounted", pod: corePod("team", "web", "", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
		}), wantSA: "default", wantMounts: true, check: func(t *testing.T, pod *corev1.Pod) {
			if len(pod.Spec.Volumes) != 1 || cmp.Diff(pod.Spec.Volumes[0], tokenVolume("kube-api-access-abcde")) != "" {
				t.Errorf("volumes %+v", pod.Spec.Volumes)
			}
			v := pod.Spec.Volumes[0].Projected
			if *v.Sources[0].ServiceAccountToken.ExpirationSeconds != 3607 || v.Sources[1].ConfigMap.Name != "kube-root-ca.crt" || v.Sources[2].DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.namespace" || *v.DefaultMode != 0o644 {
				t.Errorf("projected volume %+v", v)
			}
		}},
		{name: "a ServiceAccount that does not exist refuses the pod", pod: corePod("team", "web", "", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "ghost" }),
			wantErr: `error looking up service account team/ghost: serviceaccount "ghost" not found`},
		{name: "a namespace without its default ServiceAccount refuses the pod", pod: corePod("new", "web", "", nil),
			wantErr: `error looking up service account new/default`},
		{name: "a lookup that fails refuses the pod", pod: corePod("broken", "web", "", nil), wantErr: "etcd unreachable"},
		{name: "the ServiceAccount's pull secrets", pod: corePod("team", "web", "", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "builder" }),
			wantSA: "builder", wantMounts: true, check: func(t *testing.T, pod *corev1.Pod) {
				if len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "registry" {
					t.Errorf("imagePullSecrets %v", pod.Spec.ImagePullSecrets)
				}
			}},
		{name: "the pod's own pull secrets stay", pod: corePod("team", "web", "", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "builder"
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "mine"}}
		}), wantSA: "builder", wantMounts: true, check: func(t *testing.T, pod *corev1.Pod) {
			if len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "mine" {
				t.Errorf("imagePullSecrets %v", pod.Spec.ImagePullSecrets)
			}
		}},
		{name: "the ServiceAccount turns automount off", pod: corePod("team", "web", "", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "quiet" }), wantSA: "quiet"},
		{name: "the pod turns automount off", pod: corePod("team", "web", "", func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = &off }), wantSA: "default"},
		{name: "a container that mounts something there keeps it", pod: corePod("team", "web", "", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "own", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "mine", MountPath: ServiceAccountTokenMountPath}}})
			p.Spec.Volumes = []corev1.Volume{{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}), wantSA: "default", check: func(t *testing.T, pod *corev1.Pod) {
			if got := pod.Spec.Containers[0].VolumeMounts; len(got) != 1 || !cmp.Equal(got[0], mount) {
				t.Errorf("first container mounts %+v", got)
			}
			if got := pod.Spec.Containers[1].VolumeMounts; len(got) != 1 || got[0].Name != "mine" {
				t.Errorf("second container mounts %+v", got)
			}
		}},
		{name: "a mirror pod is left alone", pod: corePod("team", "static", "n1", func(p *corev1.Pod) { p.Annotations = map[string]string{mirrorPodAnnotation: "x"} }), wantSA: ""},
		{name: "a mirror pod may not name a ServiceAccount", pod: corePod("team", "static", "n1", func(p *corev1.Pod) {
			p.Annotations = map[string]string{mirrorPodAnnotation: "x"}
			p.Spec.ServiceAccountName = "builder"
		}), wantErr: "a mirror pod may not name a ServiceAccount"},
		{name: "a mirror pod may not reference a Secret", pod: corePod("team", "static", "n1", func(p *corev1.Pod) {
			p.Annotations = map[string]string{mirrorPodAnnotation: "x"}
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}}
		}), wantErr: "a mirror pod may not reference secrets"},
		{name: "a mirror pod may not project a token", pod: corePod("team", "static", "n1", func(p *corev1.Pod) {
			p.Annotations = map[string]string{mirrorPodAnnotation: "x"}
			p.Spec.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
			}}}}
		}), wantErr: "a mirror pod may not use service account tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := podCreate(tc.pod)
			err := plugin.Admit(context.Background(), a, nil)
			if err == nil {
				err = plugin.Validate(context.Background(), a, nil)
			}
			if tc.wantErr != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want 403 with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.pod.Spec.ServiceAccountName != tc.wantSA {
				t.Errorf("serviceAccountName %q, want %q", tc.pod.Spec.ServiceAccountName, tc.wantSA)
			}
			mounted := false
			for _, c := range append(tc.pod.Spec.InitContainers, tc.pod.Spec.Containers...) {
				has := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return cmp.Equal(m, mount) })
				mounted = mounted || has
				if tc.wantMounts && !has {
					t.Errorf("container %s does not mount the token: %+v", c.Name, c.VolumeMounts)
				}
			}
			if !tc.wantMounts && tc.check == nil && (mounted || len(tc.pod.Spec.Volumes) > 0) {
				t.Errorf("the token is mounted: %+v", tc.pod.Spec)
			}
			if tc.check != nil {
				tc.check(t, tc.pod)
			}
		})
	}
	// Only pod creates: an update, a subresource, another kind pass.
	update := admission.NewAttributesRecord(corePod("nowhere", "web", "", nil), corePod("nowhere", "web", "", nil), corev1.SchemeGroupVersion.WithKind("Pod"), "nowhere", "web",
		corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Update, &metav1.UpdateOptions{}, false, &user.DefaultInfo{Name: "alice"})
	if err := plugin.Validate(context.Background(), update, nil); err != nil {
		t.Errorf("an update: %v", err)
	}
}
