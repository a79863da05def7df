package kinds

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
)

// The defaults kube sets on every PodSpec, in a Pod or in a template
// (SetDefaults_PodSpec and the defaulters of the types inside it). Fields
// that only a Pod gets (enableServiceLinks, requests copied from limits,
// host ports under hostNetwork) are set by DefaultPod.

func defaultPodSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		period := int64(corev1.DefaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &period
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundResourceList(spec.Overhead)
	if spec.Resources != nil {
		roundResourceList(spec.Resources.Limits)
		roundResourceList(spec.Resources.Requests)
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil {
			defaultFieldSelector(vf.FieldRef)
		}
	}
	roundResourceList(c.Resources.Limits)
	roundResourceList(c.Resources.Requests)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p != nil {
			defaultProbe(p)
		}
	}
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil && h.HTTPGet != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

func defaultProbe(p *corev1.Probe) {
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if p.HTTPGet != nil {
		defaultHTTPGet(p.HTTPGet)
	}
	if p.GRPC != nil && p.GRPC.Service == nil {
		service := ""
		p.GRPC.Service = &service
	}
}

func defaultHTTPGet(a *corev1.HTTPGetAction) {
	if a.Path == "" {
		a.Path = "/"
	}
	if a.Scheme == "" {
		a.Scheme = corev1.URISchemeHTTP
	}
}

func defaultFieldSelector(s *corev1.ObjectFieldSelector) {
	if s.APIVersion == "" {
		s.APIVersion = "v1"
	}
}

func defaultVolume(v *corev1.Volume) {
	src := &v.VolumeSource
	if len(setVolumeSources(src)) == 0 {
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		unset := corev1.HostPathUnset
		src.HostPath.Type = &unset
	}
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		src.Secret.DefaultMode = int32Ptr(corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		src.ConfigMap.DefaultMode = int32Ptr(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if src.DownwardAPI != nil {
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = int32Ptr(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		for i := range src.DownwardAPI.Items {
			if ref := src.DownwardAPI.Items[i].FieldRef; ref != nil {
				defaultFieldSelector(ref)
			}
		}
	}
	if src.Projected != nil {
		if src.Projected.DefaultMode == nil {
			src.Projected.DefaultMode = int32Ptr(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range src.Projected.Sources {
			s := &src.Projected.Sources[i]
			if s.DownwardAPI != nil {
				for j := range s.DownwardAPI.Items {
					if ref := s.DownwardAPI.Items[j].FieldRef; ref != nil {
						defaultFieldSelector(ref)
					}
				}
			}
			if s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds == nil {
				hour := int64(3600)
				s.ServiceAccountToken.ExpirationSeconds = &hour
			}
		}
	}
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = "default"
	}
	if src.RBD != nil {
		if src.RBD.RBDPool == "" {
			src.RBD.RBDPool = "rbd"
		}
		if src.RBD.RadosUser == "" {
			src.RBD.RadosUser = "admin"
		}
		if src.RBD.Keyring == "" {
			src.RBD.Keyring = "/etc/ceph/keyring"
		}
	}
	if d := src.AzureDisk; d != nil {
		if d.CachingMode == nil {
			mode := corev1.AzureDataDiskCachingReadWrite
			d.CachingMode = &mode
		}
		if d.Kind == nil {
			kind := corev1.AzureSharedBlobDisk
			d.Kind = &kind
		}
		if d.FSType == nil {
			fsType := "ext4"
			d.FSType = &fsType
		}
		if d.ReadOnly == nil {
			readOnly := false
			d.ReadOnly = &readOnly
		}
	}
	if s := src.ScaleIO; s != nil {
		if s.StorageMode == "" {
			s.StorageMode = "ThinProvisioned"
		}
		if s.FSType == "" {
			s.FSType = "xfs"
		}
	}
	if e := src.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
		spec := &e.VolumeClaimTemplate.Spec
		if spec.VolumeMode == nil {
			mode := corev1.PersistentVolumeFilesystem
			spec.VolumeMode = &mode
		}
		roundResourceList(spec.Resources.Limits)
		roundResourceList(spec.Resources.Requests)
	}
	if src.Image != nil && src.Image.PullPolicy == "" {
		src.Image.PullPolicy = defaultPullPolicy(src.Image.Reference)
	}
}

// setVolumeSources returns the JSON names of the volume types set in src, in
// field order. Reflection keeps a volume type added to the API from being
// mistaken for "no type set" and defaulted to emptyDir.
func setVolumeSources(src *corev1.VolumeSource) []string {
	v := reflect.ValueOf(src).Elem()
	t := v.Type()
	var set []string
	for i := 0; i < t.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			set = append(set, jsonName(t.Field(i)))
		}
	}
	return set
}

func jsonName(f reflect.StructField) string {
	name := f.Tag.Get("json")
	for i := 0; i < len(name); i++ {
		if name[i] == ',' {
			return name[:i]
		}
	}
	return name
}

func int32Ptr(v int32) *int32 { return &v }
