package node

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Refs are the objects a pod refers to in its own namespace, which the node
// running it needs to read.
type Refs struct {
	// Secrets and ConfigMaps are sorted names without duplicates.
	Secrets    []string
	ConfigMaps []string
	// ServiceAccount is spec.serviceAccountName, or "default" when that is
	// empty, as the API server defaults it.
	ServiceAccount string
}

// References returns what pod refers to: Secrets through volumes (secret,
// projected, and the volume plugins with a secret reference: CSI, RBD,
// CephFS, Cinder, FlexVolume, iSCSI, AzureFile, ScaleIO, StorageOS),
// environment variables (valueFrom and envFrom) of containers, init
// containers and ephemeral containers, and imagePullSecrets; ConfigMaps
// through configMap and projected volumes and environment variables.
//
// It is the one list both of what the Authorizer lets a node read and of
// what NodeRestriction forbids in mirror pods, so that the two cannot drift.
func References(pod *corev1.Pod) Refs {
	var r Refs
	if pod == nil {
		return r
	}
	spec := &pod.Spec
	r.ServiceAccount = spec.ServiceAccountName
	if r.ServiceAccount == "" {
		r.ServiceAccount = "default"
	}
	for _, s := range spec.ImagePullSecrets {
		r.Secrets = append(r.Secrets, s.Name)
	}
	for i := range spec.Volumes {
		r.addVolume(&spec.Volumes[i].VolumeSource)
	}
	for i := range spec.InitContainers {
		r.addEnv(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom)
	}
	for i := range spec.Containers {
		r.addEnv(spec.Containers[i].Env, spec.Containers[i].EnvFrom)
	}
	for i := range spec.EphemeralContainers {
		r.addEnv(spec.EphemeralContainers[i].Env, spec.EphemeralContainers[i].EnvFrom)
	}
	r.Secrets = sortedNames(r.Secrets)
	r.ConfigMaps = sortedNames(r.ConfigMaps)
	return r
}

func (r *Refs) addEnv(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
	for _, e := range env {
		if e.ValueFrom == nil {
			continue
		}
		if ref := e.ValueFrom.SecretKeyRef; ref != nil {
			r.Secrets = append(r.Secrets, ref.Name)
		}
		if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
			r.ConfigMaps = append(r.ConfigMaps, ref.Name)
		}
	}
	for _, e := range envFrom {
		if e.SecretRef != nil {
			r.Secrets = append(r.Secrets, e.SecretRef.Name)
		}
		if e.ConfigMapRef != nil {
			r.ConfigMaps = append(r.ConfigMaps, e.ConfigMapRef.Name)
		}
	}
}

func (r *Refs) addVolume(v *corev1.VolumeSource) {
	secretRef := func(ref *corev1.LocalObjectReference) {
		if ref != nil {
			r.Secrets = append(r.Secrets, ref.Name)
		}
	}
	// Each source is looked at, not just the first set: a volume with two
	// is invalid, but this list must not depend on validation having run.
	if v.Secret != nil {
		r.Secrets = append(r.Secrets, v.Secret.SecretName)
	}
	if v.ConfigMap != nil {
		r.ConfigMaps = append(r.ConfigMaps, v.ConfigMap.Name)
	}
	if v.Projected != nil {
		for _, s := range v.Projected.Sources {
			if s.Secret != nil {
				r.Secrets = append(r.Secrets, s.Secret.Name)
			}
			if s.ConfigMap != nil {
				r.ConfigMaps = append(r.ConfigMaps, s.ConfigMap.Name)
			}
		}
	}
	if v.CSI != nil {
		secretRef(v.CSI.NodePublishSecretRef)
	}
	if v.RBD != nil {
		secretRef(v.RBD.SecretRef)
	}
	if v.CephFS != nil {
		secretRef(v.CephFS.SecretRef)
	}
	if v.Cinder != nil {
		secretRef(v.Cinder.SecretRef)
	}
	if v.FlexVolume != nil {
		secretRef(v.FlexVolume.SecretRef)
	}
	if v.ISCSI != nil {
		secretRef(v.ISCSI.SecretRef)
	}
	if v.ScaleIO != nil {
		secretRef(v.ScaleIO.SecretRef)
	}
	if v.StorageOS != nil {
		secretRef(v.StorageOS.SecretRef)
	}
	if v.AzureFile != nil {
		r.Secrets = append(r.Secrets, v.AzureFile.SecretName)
	}
}

// sortedNames sorts names and drops duplicates and empty names: an empty
// reference names nothing a node could read.
func sortedNames(names []string) []string {
	names = slices.DeleteFunc(names, func(n string) bool { return n == "" })
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return slices.Compact(names)
}
