package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apiserver/pkg/admission"

	nodeauthz "github.com/trustplane/trustplane/rbac/node"
)

// ServiceAccountGetter reads a ServiceAccount; (nil, nil) when it does not
// exist.
type ServiceAccountGetter interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
}

// The conventions of kube's ServiceAccount admission, which clients and
// kubelets rely on.
const (
	// DefaultServiceAccount runs a pod that names none.
	DefaultServiceAccount = "default"
	// ServiceAccountTokenMountPath is where a pod's containers find the
	// token, the CA and the namespace.
	ServiceAccountTokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// serviceAccountVolumePrefix starts the name of the volume that holds
	// them.
	serviceAccountVolumePrefix = "kube-api-access-"
	// serviceAccountTokenExpiration is kube's: an hour, and seven seconds
	// by which a kubelet tells a token it asked for from a default one.
	serviceAccountTokenExpiration = 3607
	// rootCAConfigMap holds the cluster CA in every namespace (the root
	// CA publisher of the controller manager writes it).
	rootCAConfigMap = "kube-root-ca.crt"
	// mirrorPodAnnotation marks a pod a kubelet created for a static
	// pod.
	mirrorPodAnnotation = "kubernetes.io/config.mirror"
)

// ServiceAccount is kube's ServiceAccount admission plugin, for pods being
// created:
//
//   - a pod that names no ServiceAccount runs as "default";
//   - a ServiceAccount that does not exist refuses the pod;
//   - unless the pod or its ServiceAccount turns automountServiceAccountToken
//     off, the pod gets a projected volume kube-api-access-<random> with a
//     bound token (3607 seconds), the namespace's kube-root-ca.crt and its
//     namespace, mounted read-only at ServiceAccountTokenMountPath in every
//     container and init container that mounts nothing there;
//   - a pod without imagePullSecrets gets its ServiceAccount's.
//
// A mirror pod (a kubelet's static pod) is left as it is, and refused if
// it names a ServiceAccount, a Secret, a ConfigMap or a token projection:
// a node makes it, not a user with a ServiceAccount.
type ServiceAccount struct {
	*admission.Handler
	accounts ServiceAccountGetter
	// rand names the volume; nil is k8s.io/apimachinery's rand.String.
	rand func(n int) string
}

var (
	_ admission.MutationInterface   = (*ServiceAccount)(nil)
	_ admission.ValidationInterface = (*ServiceAccount)(nil)
)

// NewServiceAccount returns the plugin; accounts must not be nil.
func NewServiceAccount(accounts ServiceAccountGetter) (*ServiceAccount, error) {
	if accounts == nil {
		return nil, errors.New("service account admission: ServiceAccount getter is nil")
	}
	return &ServiceAccount{Handler: admission.NewHandler(admission.Create), accounts: accounts, rand: rand.String}, nil
}

// podCreated is the pod a, a create of a pod, carries; nil when a is anything
// else.
func podCreated(a admission.Attributes) *corev1.Pod {
	if a.GetResource().GroupResource() != podsResource || a.GetSubresource() != "" || a.GetOperation() != admission.Create {
		return nil
	}
	pod, _ := a.GetObject().(*corev1.Pod)
	return pod
}

// Admit names the default ServiceAccount and mounts the token volume.
func (p *ServiceAccount) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod := podCreated(a)
	if pod == nil || isMirrorPod(pod) {
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccount
	}
	sa, err := p.lookup(ctx, a, pod)
	if err != nil {
		return err
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = slices.Clone(sa.ImagePullSecrets)
	}
	if automount(pod, sa) {
		p.mountToken(pod)
	}
	return nil
}

// Validate refuses a pod whose ServiceAccount does not exist, and a
// mirror pod that names one.
func (p *ServiceAccount) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod := podCreated(a)
	if pod == nil {
		return nil
	}
	if isMirrorPod(pod) {
		if err := mirrorPodCredentials(pod); err != nil {
			return admission.NewForbidden(a, err)
		}
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		return admission.NewForbidden(a, errors.New("no ServiceAccount: the pod was not admitted by the ServiceAccount plugin"))
	}
	_, err := p.lookup(ctx, a, pod)
	return err
}

// lookup is the pod's ServiceAccount; its absence refuses the pod, as
// kube's does.
func (p *ServiceAccount) lookup(ctx context.Context, a admission.Attributes, pod *corev1.Pod) (*corev1.ServiceAccount, error) {
	sa, err := p.accounts.ServiceAccount(ctx, a.GetNamespace(), pod.Spec.ServiceAccountName)
	switch {
	case err != nil:
		return nil, admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.GetNamespace(), pod.Spec.ServiceAccountName, err))
	case sa == nil:
		return nil, admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: serviceaccount %q not found", a.GetNamespace(), pod.Spec.ServiceAccountName, pod.Spec.ServiceAccountName))
	}
	return sa, nil
}

// automount is kube's: the pod's setting, else the ServiceAccount's,
// else on.
func automount(pod *corev1.Pod, sa *corev1.ServiceAccount) bool {
	switch {
	case pod.Spec.AutomountServiceAccountToken != nil:
		return *pod.Spec.AutomountServiceAccountToken
	case sa.AutomountServiceAccountToken != nil:
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountToken adds the token volume and mounts it in every container and
// init container that mounts nothing at ServiceAccountTokenMountPath; a
// pod that already mounts a kube-api-access volume keeps it.
func (p *ServiceAccount) mountToken(pod *corev1.Pod) {
	name := ""
	for _, v := range pod.Spec.Volumes {
		if v.Projected != nil && strings.HasPrefix(v.Name, serviceAccountVolumePrefix) {
			name = v.Name
		}
	}
	if name == "" {
		taken := func(n string) bool {
			return slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == n })
		}
		for name = serviceAccountVolumePrefix + p.rand(5); taken(name); name = serviceAccountVolumePrefix + p.rand(5) {
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, tokenVolume(name))
	}
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: ServiceAccountTokenMountPath}
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			c := &containers[i]
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == ServiceAccountTokenMountPath }) {
				c.VolumeMounts = append(c.VolumeMounts, mount)
			}
		}
	}
}

// tokenVolume is kube's projected ServiceAccount volume.
func tokenVolume(name string) corev1.Volume {
	expiration := int64(serviceAccountTokenExpiration)
	mode := int32(0o644)
	return corev1.Volume{
		Name: name,
		VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: &mode,
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &expiration, Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: rootCAConfigMap},
					Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
				}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
					Path:     "namespace",
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
				}}}},
			},
		}},
	}
}

// mirrorPodCredentials refuses a mirror pod that names a credential of
// the API's, as kube's plugin does: a ServiceAccount, a Secret or a
// ConfigMap (by any reference), or a ServiceAccount token projection.
func mirrorPodCredentials(pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return errors.New("a mirror pod may not name a ServiceAccount")
	}
	refs := nodeauthz.References(pod)
	if len(refs.Secrets) > 0 {
		return errors.New("a mirror pod may not reference secrets")
	}
	if len(refs.ConfigMaps) > 0 {
		return errors.New("a mirror pod may not reference configmaps")
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				return errors.New("a mirror pod may not use service account tokens")
			}
		}
	}
	return nil
}

func isMirrorPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[mirrorPodAnnotation]
	return ok
}
