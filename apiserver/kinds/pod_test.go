package kinds

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// newPod returns a pod as a client sends it, before defaulting.
func newPod() *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace = "web", "default"
	p.Spec.Containers = []corev1.Container{{Name: "web", Image: "nginx:1.27"}}
	return p
}

// validPod returns a defaulted pod that passes validation.
func validPod() *corev1.Pod {
	p := newPod()
	DefaultPod(p)
	return p
}

func int64Ptr(v int64) *int64 { return &v }

// TestDefaultPodMatchesKube compares with the parts of
// `kubectl run web --image=nginx --dry-run=server -o yaml` that come from
// defaulting (kube's admission adds the service account, its token volume,
// tolerations and priority on top).
func TestDefaultPodMatchesKube(t *testing.T) {
	got := fromYAML[corev1.Pod](t, `
metadata: {name: web, namespace: default}
spec:
  containers:
  - name: web
    image: nginx
`)
	DefaultPod(got)
	want := fromYAML[corev1.Pod](t, `
metadata: {name: web, namespace: default}
spec:
  containers:
  - image: nginx
    imagePullPolicy: Always
    name: web
    resources: {}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
  dnsPolicy: ClusterFirst
  enableServiceLinks: true
  restartPolicy: Always
  schedulerName: default-scheduler
  securityContext: {}
  terminationGracePeriodSeconds: 30
`)
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("DefaultPod mismatch (-want +got):\n%s", cmp.Diff(want, got))
	}
}

func TestDefaultPodFields(t *testing.T) {
	p := fromYAML[corev1.Pod](t, `
metadata: {name: web}
spec:
  hostNetwork: true
  serviceAccount: builder
  containers:
  - name: web
    image: registry.example.com/web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    ports: [{containerPort: 8080}]
    resources:
      limits: {cpu: "0.0001", memory: 1Gi}
    env:
    - name: NODE
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
    livenessProbe:
      httpGet: {port: 8080}
  volumes:
  - name: scratch
  - name: config
    configMap: {name: web}
status:
  podIP: 10.0.0.7
`)
	DefaultPod(p)
	c := p.Spec.Containers[0]
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"digest image pull policy", c.ImagePullPolicy, corev1.PullIfNotPresent},
		{"port protocol", c.Ports[0].Protocol, corev1.ProtocolTCP},
		{"host port under hostNetwork", c.Ports[0].HostPort, int32(8080)},
		{"cpu limit rounded to milli", c.Resources.Limits.Cpu().String(), "1m"},
		{"cpu request from limit", c.Resources.Requests.Cpu().String(), "1m"},
		{"memory request from limit", c.Resources.Requests.Memory().String(), "1Gi"},
		{"fieldRef apiVersion", c.Env[0].ValueFrom.FieldRef.APIVersion, "v1"},
		{"probe timeout", c.LivenessProbe.TimeoutSeconds, int32(1)},
		{"probe period", c.LivenessProbe.PeriodSeconds, int32(10)},
		{"probe success threshold", c.LivenessProbe.SuccessThreshold, int32(1)},
		{"probe failure threshold", c.LivenessProbe.FailureThreshold, int32(3)},
		{"httpGet path", c.LivenessProbe.HTTPGet.Path, "/"},
		{"httpGet scheme", c.LivenessProbe.HTTPGet.Scheme, corev1.URISchemeHTTP},
		{"volume without type is emptyDir", p.Spec.Volumes[0].EmptyDir != nil, true},
		{"configMap default mode", *p.Spec.Volumes[1].ConfigMap.DefaultMode, int32(0644)},
		{"serviceAccountName from serviceAccount", p.Spec.ServiceAccountName, "builder"},
		{"podIPs from podIP", p.Status.PodIPs, []corev1.PodIP{{IP: "10.0.0.7"}}},
	} {
		if !equality.Semantic.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestDefaultPodIsIdempotent(t *testing.T) {
	p := fromYAML[corev1.Pod](t, `
metadata: {name: web}
spec:
  hostNetwork: true
  initContainers:
  - name: init
    image: busybox
    resources: {limits: {memory: 64Mi}}
  containers:
  - name: web
    image: nginx:latest
    ports: [{containerPort: 80}]
    resources: {limits: {cpu: 500m}, requests: {cpu: "0.1"}}
    readinessProbe: {grpc: {port: 9000}}
    lifecycle: {preStop: {httpGet: {port: 80}}}
  volumes:
  - name: token
    projected:
      sources:
      - serviceAccountToken: {path: token}
      - downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}
  - name: data
    ephemeral:
      volumeClaimTemplate:
        spec:
          accessModes: [ReadWriteOnce]
          resources: {requests: {storage: 1Gi}}
`)
	DefaultPod(p)
	once := p.DeepCopy()
	DefaultPod(p)
	if !equality.Semantic.DeepEqual(once, p) {
		t.Errorf("second DefaultPod changed the pod (-once +twice):\n%s", cmp.Diff(once, p))
	}
	DefaultPodTemplateSpec(nil)
	tmpl := &corev1.PodTemplateSpec{Spec: *once.Spec.DeepCopy()}
	DefaultPodTemplateSpec(tmpl)
	if !equality.Semantic.DeepEqual(tmpl.Spec, once.Spec) {
		t.Errorf("DefaultPodTemplateSpec changed a defaulted spec:\n%s", cmp.Diff(once.Spec, tmpl.Spec))
	}
}

// A template gets neither enableServiceLinks nor requests from limits, as
// `kubectl create deployment` output shows.
func TestDefaultPodTemplateSpecLeavesPodOnlyFields(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "web", Image: "nginx",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
	}}}}
	DefaultPodTemplateSpec(tmpl)
	if tmpl.Spec.EnableServiceLinks != nil {
		t.Errorf("enableServiceLinks = %v, want unset", *tmpl.Spec.EnableServiceLinks)
	}
	if tmpl.Spec.Containers[0].Resources.Requests != nil {
		t.Errorf("requests = %v, want unset", tmpl.Spec.Containers[0].Resources.Requests)
	}
	if got := tmpl.Spec.Containers[0].ImagePullPolicy; got != corev1.PullAlways {
		t.Errorf("imagePullPolicy = %q, want Always", got)
	}
}

func TestValidatePodCreate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []string
	}{
		{"valid", func(p *corev1.Pod) {}, nil},
		{"valid with init container, volume and probe", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
			DefaultPod(p)
		}, nil},
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil },
			[]string{e("spec.containers", required)}},
		{"container name not a DNS label", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "Web_1" },
			[]string{e("spec.containers[0].name", invalid)}},
		{"container name missing", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "" },
			[]string{e("spec.containers[0].name", required)}},
		{"duplicate container names", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0])
		}, []string{e("spec.containers[1].name", duplicate)}},
		{"init container reuses a container name", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{p.Spec.Containers[0]}
		}, []string{e("spec.initContainers[0].name", duplicate)}},
		{"image missing", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" },
			[]string{e("spec.containers[0].image", required)}},
		{"image padded", func(p *corev1.Pod) { p.Spec.Containers[0].Image = " nginx" },
			[]string{e("spec.containers[0].image", invalid)}},
		{"restartPolicy unknown", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" },
			[]string{e("spec.restartPolicy", notSupported)}},
		{"restartPolicy missing", func(p *corev1.Pod) { p.Spec.RestartPolicy = "" },
			[]string{e("spec.restartPolicy", required)}},
		{"dnsPolicy unknown", func(p *corev1.Pod) { p.Spec.DNSPolicy = "Google" },
			[]string{e("spec.dnsPolicy", notSupported)}},
		{"dnsPolicy None without dnsConfig", func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone },
			[]string{e("spec.dnsConfig", required)}},
		{"terminationGracePeriodSeconds missing", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = nil },
			[]string{e("spec.terminationGracePeriodSeconds", required)}},
		{"imagePullPolicy unknown", func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" },
			[]string{e("spec.containers[0].imagePullPolicy", notSupported)}},
		{"container port missing", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Protocol: corev1.ProtocolTCP}}
		}, []string{e("spec.containers[0].ports[0].containerPort", required)}},
		{"container port out of range", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000, Protocol: corev1.ProtocolTCP}}
		}, []string{e("spec.containers[0].ports[0].containerPort", invalid)}},
		{"port protocol unknown", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: "HTTP"}}
		}, []string{e("spec.containers[0].ports[0].protocol", notSupported)}},
		{"duplicate port names", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{
				{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP},
				{Name: "http", ContainerPort: 81, Protocol: corev1.ProtocolTCP}}
		}, []string{e("spec.containers[0].ports[1].name", duplicate)}},
		{"host ports collide", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Image: "nginx",
				ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile})
			for i := range p.Spec.Containers {
				p.Spec.Containers[i].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
			}
		}, []string{e("spec.containers[1].ports[0].hostPort", duplicate)}},
		{"hostNetwork port without matching hostPort", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 81, Protocol: corev1.ProtocolTCP}}
		}, []string{e("spec.containers[0].ports[0].hostPort", invalid)}},
		{"negative cpu request", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
		}, []string{e("spec.containers[0].resources.requests[cpu]", invalid)}},
		{"request above limit", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}
		}, []string{e("spec.containers[0].resources.requests", invalid)}},
		{"unknown unprefixed resource", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"gpu": resource.MustParse("1")}
		}, []string{e("spec.containers[0].resources.limits[gpu]", invalid), e("spec.containers[0].resources.limits[gpu]", invalid)}},
		{"fractional extended resource", func(p *corev1.Pod) {
			q := resource.MustParse("500m")
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"example.com/gpu": q}
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"example.com/gpu": q}
		}, []string{e("spec.containers[0].resources.limits[example.com/gpu]", invalid), e("spec.containers[0].resources.requests[example.com/gpu]", invalid)}},
		{"env var without name", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Value: "x"}}
		}, []string{e("spec.containers[0].env[0].name", required)}},
		{"env var from two sources", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
				FieldRef:     &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"},
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}
		}, []string{e("spec.containers[0].env[0].valueFrom", invalid)}},
		{"env fieldRef to an unsupported field", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.phase"}}}}
		}, []string{e("spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", notSupported)}},
		{"mount of an unknown volume", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}, []string{e("spec.containers[0].volumeMounts[0].name", notFound)}},
		{"volume with two types", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/srv"}}}}
		}, []string{e("spec.volumes[0].emptyDir", forbidden)}},
		{"secret volume without secretName", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}}}
		}, []string{e("spec.volumes[0].secret.secretName", required)}},
		{"duplicate volume names", func(p *corev1.Pod) {
			v := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
			p.Spec.Volumes = []corev1.Volume{v, v}
		}, []string{e("spec.volumes[1].name", duplicate)}},
		{"liveness probe without handler", func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{SuccessThreshold: 1}
		}, []string{e("spec.containers[0].livenessProbe", required)}},
		{"liveness probe successThreshold above 1", func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{SuccessThreshold: 2,
				ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		}, []string{e("spec.containers[0].livenessProbe.successThreshold", invalid)}},
		{"probe on a plain init container", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox",
				ImagePullPolicy: corev1.PullAlways, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}}
		}, []string{e("spec.initContainers[0].readinessProbe", forbidden)}},
		{"restartPolicy on a regular container", func(p *corev1.Pod) {
			always := corev1.ContainerRestartPolicyAlways
			p.Spec.Containers[0].RestartPolicy = &always
		}, []string{e("spec.containers[0].restartPolicy", forbidden)}},
		{"activeDeadlineSeconds zero", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = int64Ptr(0) },
			[]string{e("spec.activeDeadlineSeconds", invalid)}},
		{"nodeName not a DNS subdomain", func(p *corev1.Pod) { p.Spec.NodeName = "Node_1" },
			[]string{e("spec.nodeName", invalid)}},
		{"serviceAccountName invalid", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "Bad Name" },
			[]string{e("spec.serviceAccountName", invalid)}},
		{"toleration operator unknown", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Like"}}
		}, []string{e("spec.tolerations[0].operator", notSupported)}},
		{"toleration seconds without NoExecute", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: int64Ptr(10)}}
		}, []string{e("spec.tolerations[0].effect", invalid)}},
		{"nodeSelector value invalid", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a b"} },
			[]string{e("spec.nodeSelector", invalid)}},
		{"runAsUser negative", func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsUser = int64Ptr(-1) },
			[]string{e("spec.securityContext.runAsUser", invalid)}},
		{"ephemeral containers on create", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", ImagePullPolicy: corev1.PullAlways, TerminationMessagePolicy: corev1.TerminationMessageReadFile}}}
		}, []string{e("spec.ephemeralContainers", forbidden)}},
		{"nodeName with scheduling gates", func(p *corev1.Pod) {
			p.Spec.NodeName = "node-1"
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
		}, []string{e("spec.nodeName", forbidden)}},
		{"mirror pod without a node", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
		}, []string{e("metadata.annotations[kubernetes.io/config.mirror]", invalid)}},
		{"sidecar with probes", func(p *corev1.Pod) {
			always := corev1.ContainerRestartPolicyAlways
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "envoy", RestartPolicy: &always,
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("admin")}}}}}
			DefaultPod(p)
		}, nil},
		{"init container restartPolicy other than Always", func(p *corev1.Pod) {
			never := corev1.ContainerRestartPolicy("Never")
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", RestartPolicy: &never}}
			DefaultPod(p)
		}, []string{e("spec.initContainers[0].restartPolicy", notSupported)}},
		{"subPath escaping the volume", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "../etc"}}
		}, []string{e("spec.containers[0].volumeMounts[0].subPath", invalid)}},
		{"mount path repeated", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			m := corev1.VolumeMount{Name: "data", MountPath: "/data"}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{m, m}
		}, []string{e("spec.containers[0].volumeMounts[1].mountPath", invalid)}},
		{"hostPath type unknown", func(p *corev1.Pod) {
			t := corev1.HostPathType("Pipe")
			p.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv", Type: &t}}}}
		}, []string{e("spec.volumes[0].hostPath.type", notSupported)}},
		{"node affinity without terms", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		}, []string{e("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", required)}},
		{"pod anti-affinity weight out of range", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 0, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname"}}}}}
		}, []string{e("spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", invalid)}},
		{"topology spread without skew", func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
		}, []string{e("spec.topologySpreadConstraints[0].maxSkew", invalid)}},
		{"too many nameservers", func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8", "9.9.9.9", "8.8.4.4"}}
		}, []string{e("spec.dnsConfig.nameservers", invalid)}},
		{"net sysctl with hostNetwork", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}
		}, []string{e("spec.securityContext.sysctls[0].name", invalid)}},
		{"seccomp Localhost without profile", func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}
		}, []string{e("spec.securityContext.seccompProfile.localhostProfile", required)}},
		{"privileged without privilege escalation", func(p *corev1.Pod) {
			yes, no := true, false
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes, AllowPrivilegeEscalation: &no}
		}, []string{e("spec.containers[0].securityContext", invalid)}},
		{"hugepages without cpu or memory", func(p *corev1.Pod) {
			q := resource.MustParse("4Mi")
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"hugepages-2Mi": q}, Requests: corev1.ResourceList{"hugepages-2Mi": q}}
		}, []string{e("spec.containers[0].resources", forbidden)}},
		{"os unknown", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: "plan9"} },
			[]string{e("spec.os", notSupported)}},
		{"projected token without a service account", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
		}, []string{e("spec.volumes[0].projected.sources[0].serviceAccountToken", forbidden)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validPod()
			tc.mutate(p)
			checkErrs(t, ValidatePod(p, nil), tc.want...)
		})
	}
}

func TestValidatePodUpdate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		old    func(p *corev1.Pod)
		mutate func(p *corev1.Pod)
		want   []string
	}{
		{"unchanged", nil, func(p *corev1.Pod) {}, nil},
		{"image changed", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }, nil},
		{"labels changed", nil, func(p *corev1.Pod) { p.Labels = map[string]string{"tier": "web"} }, nil},
		{"command changed", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"sleep", "1"} },
			[]string{e("spec", forbidden)}},
		{"nodeName set by update", nil, func(p *corev1.Pod) { p.Spec.NodeName = "node-1" },
			[]string{e("spec", forbidden)}},
		{"nodeName moved", func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }, func(p *corev1.Pod) { p.Spec.NodeName = "node-2" },
			[]string{e("spec", forbidden)}},
		{"container added", nil, func(p *corev1.Pod) {
			c := p.Spec.Containers[0]
			c.Name = "sidecar"
			p.Spec.Containers = append(p.Spec.Containers, c)
		}, []string{e("spec.containers", forbidden)}},
		{"image cleared", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" },
			[]string{e("spec.containers[0].image", required), e("spec.containers[0].image", required)}},
		{"activeDeadlineSeconds set", nil, func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = int64Ptr(60) }, nil},
		{"activeDeadlineSeconds lowered", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = int64Ptr(60) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = int64Ptr(30) }, nil},
		{"activeDeadlineSeconds raised", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = int64Ptr(60) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = int64Ptr(90) },
			[]string{e("spec.activeDeadlineSeconds", invalid)}},
		{"activeDeadlineSeconds removed", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = int64Ptr(60) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil },
			[]string{e("spec.activeDeadlineSeconds", invalid)}},
		{"toleration added", nil, func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists})
		}, nil},
		{"toleration seconds changed",
			func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: int64Ptr(60)}}
			},
			func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = int64Ptr(10) }, nil},
		{"toleration changed",
			func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
			},
			func(p *corev1.Pod) { p.Spec.Tolerations[0].Key = "other" },
			[]string{e("spec.tolerations", forbidden)}},
		{"grace period from negative to 1", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = int64Ptr(-1) },
			func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = int64Ptr(1) }, nil},
		{"grace period changed", nil, func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = int64Ptr(60) },
			[]string{e("spec", forbidden)}},
		{"scheduling gate removed",
			func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}} },
			func(p *corev1.Pod) { p.Spec.SchedulingGates = nil }, nil},
		{"scheduling gate added",
			func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}} },
			func(p *corev1.Pod) {
				p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: "example.com/b"})
			},
			[]string{e("spec.schedulingGates[1].name", forbidden)}},
		{"nodeSelector added while gated",
			func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}} },
			func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} }, nil},
		{"nodeSelector added while not gated", nil,
			func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} },
			[]string{e("spec", forbidden)}},
		{"deprecated serviceAccount omitted",
			func(p *corev1.Pod) { p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = "default", "default" },
			func(p *corev1.Pod) { p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = "default", "" }, nil},
		{"mirror annotation removed",
			func(p *corev1.Pod) {
				p.Spec.NodeName = "node-1"
				p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
			},
			func(p *corev1.Pod) { p.Annotations = nil },
			[]string{e("metadata.annotations[kubernetes.io/config.mirror]", forbidden)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := validPod()
			if tc.old != nil {
				tc.old(old)
			}
			p := old.DeepCopy()
			tc.mutate(p)
			checkErrs(t, ValidatePod(p, old), tc.want...)
		})
	}
}

func TestValidatePodUpdateMessage(t *testing.T) {
	old := validPod()
	p := old.DeepCopy()
	p.Spec.Containers[0].Command = []string{"sleep", "3600"}
	checkDetail(t, ValidatePod(p, old), "spec",
		"pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"+
			"`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"+
			"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n")
	checkDetail(t, ValidatePod(p, old), "spec", "pod updates may not change fields other than")

	added := old.DeepCopy()
	added.Spec.Containers = append(added.Spec.Containers, corev1.Container{Name: "b", Image: "b"})
	checkDetail(t, ValidatePod(added, old), "spec.containers", "pod updates may not add or remove containers")
}

func TestValidatePodStatusUpdate(t *testing.T) {
	running := func(p *corev1.Pod) {
		p.Spec.NodeName = "node-1"
		p.Status.Phase = corev1.PodRunning
		p.Status.QOSClass = corev1.PodQOSBestEffort
	}
	for _, tc := range []struct {
		name   string
		old    func(p *corev1.Pod)
		mutate func(p *corev1.Pod)
		want   []string
	}{
		{"ready with IPs", nil, func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: "example.com/gate", Status: corev1.ConditionTrue}}
			p.Status.PodIP = "10.0.0.7"
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.7"}, {IP: "fd00::7"}}
			p.Status.HostIP = "192.168.0.10"
			p.Status.HostIPs = []corev1.HostIP{{IP: "192.168.0.10"}}
		}, nil},
		{"nodeName changed", nil, func(p *corev1.Pod) { p.Spec.NodeName = "node-2" },
			[]string{e("status.nodeName", forbidden)}},
		{"qosClass changed", nil, func(p *corev1.Pod) { p.Status.QOSClass = corev1.PodQOSGuaranteed },
			[]string{e("status.qosClass", invalid)}},
		{"nominatedNodeName invalid", nil, func(p *corev1.Pod) { p.Status.NominatedNodeName = "Node_2" },
			[]string{e("status.nominatedNodeName", invalid)}},
		{"condition type not a qualified name", nil, func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: "bad type", Status: corev1.ConditionTrue}}
		}, []string{e("metadata.conditions[0].Type", invalid)}},
		{"pod IP invalid", nil, func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.300"}} },
			[]string{e("status.podIPs[0]", invalid)}},
		{"two IPv4 pod IPs", nil, func(p *corev1.Pod) {
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.7"}, {IP: "10.0.0.8"}}
		}, []string{e("status.podIPs", invalid)}},
		{"hostIPs disagree with hostIP", nil, func(p *corev1.Pod) {
			p.Status.HostIP = "192.168.0.10"
			p.Status.HostIPs = []corev1.HostIP{{IP: "192.168.0.11"}}
		}, []string{e("status.hostIPs[0].ip", invalid)}},
		{"terminated container restarted under restartPolicy Never",
			func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
			},
			func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
			},
			[]string{e("status.containerStatuses[0].state", forbidden)}},
		{"failed container restarted under restartPolicy OnFailure",
			func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
			},
			func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
			}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := validPod()
			running(old)
			if tc.old != nil {
				tc.old(old)
			}
			p := old.DeepCopy()
			tc.mutate(p)
			checkErrs(t, ValidatePodStatusUpdate(p, old), tc.want...)
		})
	}
}

func TestPodFields(t *testing.T) {
	p := validPod()
	p.Spec.NodeName = "node-1"
	p.Spec.ServiceAccountName = "builder"
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.7"}, {IP: "fd00::7"}}
	p.Status.NominatedNodeName = "node-2"
	got := PodFields(p)
	want := map[string]string{
		"metadata.name":            "web",
		"metadata.namespace":       "default",
		"spec.nodeName":            "node-1",
		"spec.restartPolicy":       "Always",
		"spec.schedulerName":       "default-scheduler",
		"spec.serviceAccountName":  "builder",
		"spec.hostNetwork":         "false",
		"status.phase":             "Running",
		"status.podIP":             "10.0.0.7",
		"status.nominatedNodeName": "node-2",
	}
	if diff := cmp.Diff(want, map[string]string(got)); diff != "" {
		t.Errorf("PodFields (-want +got):\n%s", diff)
	}
	p.Spec.HostNetwork = true
	if got := PodFields(p)["spec.hostNetwork"]; got != "true" {
		t.Errorf("spec.hostNetwork = %q, want \"true\"", got)
	}
}
