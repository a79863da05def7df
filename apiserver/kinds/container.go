package kinds

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// specContext is what container validation needs from the pod spec around
// the containers.
type specContext struct {
	volumes       map[string]corev1.VolumeSource // the spec's valid volumes, by name
	claimNames    map[string]bool                // spec.resourceClaims names
	gracePeriod   *int64                         // spec.terminationGracePeriodSeconds
	restartPolicy corev1.RestartPolicy
	hostUsers     bool // spec.hostUsers, true when unset
}

// validateContainerCommon holds the checks every kind of container gets:
// regular, init and ephemeral.
func validateContainerCommon(c *corev1.Container, sc *specContext, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	namePath := path.Child("name")
	if c.Name == "" {
		errs = append(errs, field.Required(namePath, ""))
	} else {
		errs = append(errs, validateDNS1123Label(c.Name, namePath)...)
	}
	// Whitespace-only images are accepted here, as kube does for templates
	// (some tools use " " as a placeholder); pods refuse padding separately.
	if c.Image == "" {
		errs = append(errs, field.Required(path.Child("image"), ""))
	}
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		errs = append(errs, field.Required(path.Child("terminationMessagePolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}))
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	devices := map[string]string{}
	for _, d := range c.VolumeDevices {
		devices[d.Name] = d.DevicePath
	}
	errs = append(errs, validateContainerPorts(c.Ports, path.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, path.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, path.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, devices, sc.volumes, c, path.Child("volumeMounts"))...)
	errs = append(errs, validateVolumeDevices(c.VolumeDevices, mounts, sc.volumes, path.Child("volumeDevices"))...)
	errs = append(errs, validatePullPolicy(c.ImagePullPolicy, path.Child("imagePullPolicy"))...)
	errs = append(errs, validateResourceRequirements(&c.Resources, validateContainerResourceName, sc.claimNames, path.Child("resources"))...)
	errs = append(errs, validateResizePolicy(c.ResizePolicy, sc.restartPolicy, path.Child("resizePolicy"))...)
	errs = append(errs, validateSecurityContext(c.SecurityContext, sc.hostUsers, path.Child("securityContext"))...)
	return errs
}

// validateContainers checks spec.containers: at least one, unique names,
// probes and lifecycle hooks, and host ports that do not collide.
func validateContainers(containers []corev1.Container, sc *specContext, fldPath *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range containers {
		c := &containers[i]
		path := fldPath.Index(i)
		errs = append(errs, validateContainerCommon(c, sc, path)...)
		if names[c.Name] {
			errs = append(errs, field.Duplicate(path.Child("name"), c.Name))
		}
		names[c.Name] = true
		if c.Lifecycle != nil {
			errs = append(errs, validateLifecycle(c.Lifecycle, sc.gracePeriod, path.Child("lifecycle"))...)
		}
		errs = append(errs, validateLivenessProbe(c.LivenessProbe, sc.gracePeriod, path.Child("livenessProbe"))...)
		errs = append(errs, validateReadinessProbe(c.ReadinessProbe, sc.gracePeriod, path.Child("readinessProbe"))...)
		errs = append(errs, validateStartupProbe(c.StartupProbe, sc.gracePeriod, path.Child("startupProbe"))...)
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(path.Child("restartPolicy"), "may not be set for non-init containers"))
		}
	}
	errs = append(errs, checkHostPortConflicts(containers, 0, fldPath)...)
	return errs
}

// validateInitContainers checks spec.initContainers. Names must not repeat
// those of regular containers; only sidecars (restartPolicy Always) may
// have probes and lifecycle hooks.
func validateInitContainers(inits, regular []corev1.Container, sc *specContext, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for _, c := range regular {
		names[c.Name] = true
	}
	for i := range inits {
		c := &inits[i]
		path := fldPath.Index(i)
		errs = append(errs, validateContainerCommon(c, sc, path)...)
		sidecar := false
		if c.RestartPolicy != nil {
			if *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				sidecar = true
			} else {
				errs = append(errs, field.NotSupported(path.Child("restartPolicy"), *c.RestartPolicy,
					[]corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
			}
		}
		if names[c.Name] {
			errs = append(errs, field.Duplicate(path.Child("name"), c.Name))
		} else if c.Name != "" {
			names[c.Name] = true
		}
		// Init containers run one at a time, so their host ports only
		// collide within a container.
		errs = append(errs, checkHostPortConflicts(inits[i:i+1], i, fldPath)...)
		if sidecar {
			if c.Lifecycle != nil {
				errs = append(errs, validateLifecycle(c.Lifecycle, sc.gracePeriod, path.Child("lifecycle"))...)
			}
			errs = append(errs, validateLivenessProbe(c.LivenessProbe, sc.gracePeriod, path.Child("livenessProbe"))...)
			errs = append(errs, validateReadinessProbe(c.ReadinessProbe, sc.gracePeriod, path.Child("readinessProbe"))...)
			errs = append(errs, validateStartupProbe(c.StartupProbe, sc.gracePeriod, path.Child("startupProbe"))...)
			continue
		}
		const msg = "may not be set for init containers without restartPolicy=Always"
		if c.Lifecycle != nil {
			errs = append(errs, field.Forbidden(path.Child("lifecycle"), msg))
		}
		if c.LivenessProbe != nil {
			errs = append(errs, field.Forbidden(path.Child("livenessProbe"), msg))
		}
		if c.ReadinessProbe != nil {
			errs = append(errs, field.Forbidden(path.Child("readinessProbe"), msg))
		}
		if c.StartupProbe != nil {
			errs = append(errs, field.Forbidden(path.Child("startupProbe"), msg))
		}
	}
	return errs
}

// ephemeralAllowedFields are the Container fields an ephemeral (debug)
// container may set; the rest would make it part of the workload. Listing
// what is allowed means a field added to the API is refused until someone
// decides otherwise.
func ephemeralAllowedField(name string) bool {
	switch name {
	case "Name", "Image", "Command", "Args", "WorkingDir", "EnvFrom", "Env",
		"VolumeMounts", "VolumeDevices", "TerminationMessagePath",
		"TerminationMessagePolicy", "ImagePullPolicy", "SecurityContext",
		"Stdin", "StdinOnce", "TTY":
		return true
	}
	return false
}

func validateEphemeralContainers(ephemeral []corev1.EphemeralContainer, containers, inits []corev1.Container, sc *specContext, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(ephemeral) == 0 {
		return nil
	}
	others, all := map[string]bool{}, map[string]bool{}
	for _, c := range containers {
		others[c.Name], all[c.Name] = true, true
	}
	for _, c := range inits {
		others[c.Name], all[c.Name] = true, true
	}
	for i := range ephemeral {
		ec := &ephemeral[i]
		path := fldPath.Index(i)
		c := (*corev1.Container)(&ec.EphemeralContainerCommon)
		errs = append(errs, validateContainerCommon(c, sc, path)...)
		errs = append(errs, validateImageWhitespace(c.Image, path.Child("image"))...)
		if all[ec.Name] {
			errs = append(errs, field.Duplicate(path.Child("name"), ec.Name))
		}
		all[ec.Name] = true
		if ec.TargetContainerName != "" && !others[ec.TargetContainerName] {
			errs = append(errs, field.NotFound(path.Child("targetContainerName"), ec.TargetContainerName))
		}
		v := reflect.ValueOf(ec.EphemeralContainerCommon)
		t := v.Type()
		for j := 0; j < t.NumField(); j++ {
			f := t.Field(j)
			if ephemeralAllowedField(f.Name) || v.Field(j).IsZero() {
				continue
			}
			r, n := utf8.DecodeRuneInString(f.Name)
			errs = append(errs, field.Forbidden(path.Child(string(unicode.ToLower(r))+f.Name[n:]), "cannot be set for an Ephemeral Container"))
		}
		for j, m := range ec.VolumeMounts {
			if m.SubPath != "" {
				errs = append(errs, field.Forbidden(path.Child("volumeMounts").Index(j).Child("subPath"), "cannot be set for an Ephemeral Container"))
			}
			if m.SubPathExpr != "" {
				errs = append(errs, field.Forbidden(path.Child("volumeMounts").Index(j).Child("subPathExpr"), "cannot be set for an Ephemeral Container"))
			}
		}
	}
	return errs
}

// validateImageWhitespace is the pod-only check that an image reference is
// not padded; templates tolerate it.
func validateImageWhitespace(image string, fldPath *field.Path) field.ErrorList {
	if len(image) != len(strings.TrimSpace(image)) {
		return field.ErrorList{field.Invalid(fldPath, image, "must not have leading or trailing whitespace")}
	}
	return nil
}

// checkHostPortConflicts refuses two ports claiming the same
// protocol/hostIP/hostPort. offset is the index of containers[0] in the
// list at fldPath.
func checkHostPortConflicts(containers []corev1.Container, offset int, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for ci, c := range containers {
		for pi, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", p.Protocol, p.HostIP, p.HostPort)
			if seen[key] {
				errs = append(errs, field.Duplicate(fldPath.Index(offset+ci).Child("ports").Index(pi).Child("hostPort"), key))
			}
			seen[key] = true
		}
	}
	return errs
}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, p := range ports {
		path := fldPath.Index(i)
		if p.Name != "" {
			if msgs := validation.IsValidPortName(p.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(path.Child("name"), p.Name, msg))
				}
			} else if names[p.Name] {
				errs = append(errs, field.Duplicate(path.Child("name"), p.Name))
			} else {
				names[p.Name] = true
			}
		}
		if p.ContainerPort == 0 {
			errs = append(errs, field.Required(path.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(p.ContainerPort)) {
				errs = append(errs, field.Invalid(path.Child("containerPort"), p.ContainerPort, msg))
			}
		}
		if p.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(p.HostPort)) {
				errs = append(errs, field.Invalid(path.Child("hostPort"), p.HostPort, msg))
			}
		}
		errs = append(errs, validateProtocol(p.Protocol, path.Child("protocol"))...)
	}
	return errs
}

func validateProtocol(p corev1.Protocol, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return field.ErrorList{field.NotSupported(fldPath, p, []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP})}
}

func validatePullPolicy(p corev1.PullPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return field.ErrorList{field.NotSupported(fldPath, p, []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever})}
}

// validateEnv uses the relaxed variable-name rule (any printable ASCII but
// "="), which kube has applied since RelaxedEnvironmentVariableValidation
// became the default.
func validateEnv(vars []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		path := fldPath.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(path.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(path.Child("name"), ev.Name, msg))
			}
		}
		errs = append(errs, validateEnvVarValueFrom(ev, path.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvVarValueFrom(ev corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	if ev.ValueFrom == nil {
		return nil
	}
	var errs field.ErrorList
	sources := 0
	if ev.ValueFrom.FieldRef != nil {
		sources++
		errs = append(errs, validateObjectFieldSelector(ev.ValueFrom.FieldRef, envFieldPathSupported, fldPath.Child("fieldRef"))...)
	}
	if ev.ValueFrom.ResourceFieldRef != nil {
		sources++
		errs = append(errs, validateResourceFieldSelector(ev.ValueFrom.ResourceFieldRef, false, fldPath.Child("resourceFieldRef"))...)
	}
	if ev.ValueFrom.ConfigMapKeyRef != nil {
		sources++
		errs = append(errs, validateKeySelector(ev.ValueFrom.ConfigMapKeyRef.Name, ev.ValueFrom.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if ev.ValueFrom.SecretKeyRef != nil {
		sources++
		errs = append(errs, validateKeySelector(ev.ValueFrom.SecretKeyRef.Name, ev.ValueFrom.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if ev.ValueFrom.FileKeyRef != nil {
		sources++
	}
	switch {
	case sources == 0:
		errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	case sources > 1:
		errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// envFieldPathSupported lists the pod fields an environment variable may
// take its value from.
func envFieldPathSupported() []string {
	return []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
		"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}
}

// volumeFieldPathSupported lists the pod fields a downwardAPI volume file
// may hold.
func volumeFieldPathSupported() []string {
	return []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}
}

// splitSubscript splits "metadata.labels['app']" into its path and key.
func splitSubscript(fieldPath string) (path, subscript string, ok bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return fieldPath, "", false
	}
	path, subscript, found := strings.Cut(strings.TrimSuffix(fieldPath, "']"), "['")
	if !found || path == "" {
		return fieldPath, "", false
	}
	return path, subscript, true
}

// downwardFieldLabelKnown reports whether the v1 pod has the field at all;
// kube refuses unknown ones while converting, before the per-use lists.
func downwardFieldLabelKnown(label string) bool {
	switch label {
	case "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace",
		"metadata.uid", "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName",
		"spec.schedulerName", "status.phase", "status.hostIP", "status.hostIPs",
		"status.podIP", "status.podIPs", "spec.host":
		return true
	}
	return false
}

func validateObjectFieldSelector(fs *corev1.ObjectFieldSelector, supported func() []string, fldPath *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(fldPath.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(fldPath.Child("fieldPath"), "")}
	}
	if fs.APIVersion != "v1" {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath,
			fmt.Sprintf("error converting fieldPath: unsupported pod version: %s", fs.APIVersion))}
	}
	if path, subscript, ok := splitSubscript(fs.FieldPath); ok {
		switch path {
		case "metadata.annotations":
			return validateQualifiedName(strings.ToLower(subscript), fldPath)
		case "metadata.labels":
			return validateQualifiedName(subscript, fldPath)
		}
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath,
			fmt.Sprintf("error converting fieldPath: field label does not support subscript: %s", fs.FieldPath))}
	}
	if !downwardFieldLabelKnown(fs.FieldPath) {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath,
			fmt.Sprintf("error converting fieldPath: field label not supported: %s", fs.FieldPath))}
	}
	path := fs.FieldPath
	if path == "spec.host" {
		path = "spec.nodeName"
	}
	valid := supported()
	for _, v := range valid {
		if v == path {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath.Child("fieldPath"), path, valid)}
}

func validateResourceFieldSelector(fs *corev1.ResourceFieldSelector, volume bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	supported := []string{"limits.cpu", "limits.ephemeral-storage", "limits.memory",
		"requests.cpu", "requests.ephemeral-storage", "requests.memory"}
	switch {
	case volume && fs.ContainerName == "":
		errs = append(errs, field.Required(fldPath.Child("containerName"), ""))
	case fs.Resource == "":
		errs = append(errs, field.Required(fldPath.Child("resource"), ""))
	default:
		known := strings.HasPrefix(fs.Resource, "requests.hugepages-") || strings.HasPrefix(fs.Resource, "limits.hugepages-")
		for _, s := range supported {
			known = known || s == fs.Resource
		}
		if !known {
			errs = append(errs, field.NotSupported(fldPath.Child("resource"), fs.Resource, supported))
		}
	}
	return append(errs, validateDivisor(fs.Resource, fs.Divisor, fldPath)...)
}

func validateDivisor(rName string, divisor resource.Quantity, fldPath *field.Path) field.ErrorList {
	if divisor.IsZero() {
		return nil
	}
	d := divisor.String()
	byteDivisor := func() bool {
		switch d {
		case "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei":
			return true
		}
		return false
	}
	const byteUnits = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"
	switch {
	case rName == "limits.cpu" || rName == "requests.cpu":
		if d != "1m" && d != "1" {
			return field.ErrorList{field.Invalid(fldPath.Child("divisor"), rName, "only divisor's values 1m and 1 are supported with the cpu resource")}
		}
	case rName == "limits.memory" || rName == "requests.memory":
		if !byteDivisor() {
			return field.ErrorList{field.Invalid(fldPath.Child("divisor"), rName, "only divisor's values "+byteUnits+" are supported with the memory resource")}
		}
	case rName == "limits.ephemeral-storage" || rName == "requests.ephemeral-storage":
		if !byteDivisor() {
			return field.ErrorList{field.Invalid(fldPath.Child("divisor"), rName, "only divisor's values "+byteUnits+" are supported with the local ephemeral storage resource")}
		}
	case strings.HasPrefix(rName, "requests.hugepages-") || strings.HasPrefix(rName, "limits.hugepages-"):
		if !byteDivisor() {
			return field.ErrorList{field.Invalid(fldPath.Child("divisor"), rName, "only divisor's values "+byteUnits+" are supported with the hugepages resource")}
		}
	}
	return nil
}

// validateKeySelector checks a configMapKeyRef or secretKeyRef.
func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	errs := validateName(name, apivalidation.NameIsDNSSubdomain, fldPath.Child("name"))
	if key == "" {
		return append(errs, field.Required(fldPath.Child("key"), ""))
	}
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(fldPath.Child("key"), key, msg))
	}
	return errs
}

func validateEnvFrom(sources []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range sources {
		path := fldPath.Index(i)
		if ev.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Prefix) {
				errs = append(errs, field.Invalid(path.Child("prefix"), ev.Prefix, msg))
			}
		}
		n := 0
		if ev.ConfigMapRef != nil {
			n++
			errs = append(errs, validateEnvSourceName(ev.ConfigMapRef.Name, path.Child("configMapRef"))...)
		}
		if ev.SecretRef != nil {
			n++
			errs = append(errs, validateEnvSourceName(ev.SecretRef.Name, path.Child("secretRef"))...)
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

func validateEnvSourceName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath.Child("name"), "")}
	}
	var errs field.ErrorList
	// kube checks these names as prefixes, which tolerates a trailing "-".
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, true) {
		errs = append(errs, field.Invalid(fldPath.Child("name"), name, msg))
	}
	return errs
}

func validateVolumeMounts(mounts []corev1.VolumeMount, devices map[string]string, volumes map[string]corev1.VolumeSource, c *corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	mountPoints := map[string]bool{}
	for i, m := range mounts {
		path := fldPath.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(path.Child("name"), ""))
		}
		src, ok := volumes[m.Name]
		if !ok {
			errs = append(errs, field.NotFound(path.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(path.Child("mountPath"), ""))
		}
		if mountPoints[m.MountPath] {
			errs = append(errs, field.Invalid(path.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPoints[m.MountPath] = true
		if _, clash := devices[m.Name]; clash {
			errs = append(errs, field.Invalid(path.Child("name"), m.Name, "must not already exist in volumeDevices"))
		}
		for _, devicePath := range devices {
			if devicePath == m.MountPath {
				errs = append(errs, field.Invalid(path.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
				break
			}
		}
		if ok && src.Image != nil {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(path.Child("subPath"), m.SubPath, "not allowed in image volume sources"))
			}
			if m.SubPathExpr != "" {
				errs = append(errs, field.Invalid(path.Child("subPathExpr"), m.SubPathExpr, "not allowed in image volume sources"))
			}
		}
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, path.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(path.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateLocalDescendingPath(m.SubPathExpr, path.Child("subPathExpr"))...)
		}
		if m.MountPropagation != nil {
			errs = append(errs, validateMountPropagation(*m.MountPropagation, c, path.Child("mountPropagation"))...)
		}
		errs = append(errs, validateRecursiveReadOnly(m, path.Child("recursiveReadOnly"))...)
	}
	return errs
}

func validateMountPropagation(mode corev1.MountPropagationMode, c *corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch mode {
	case corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone:
	default:
		errs = append(errs, field.NotSupported(fldPath, mode, []corev1.MountPropagationMode{
			corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone}))
	}
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	if mode == corev1.MountPropagationBidirectional && !privileged {
		errs = append(errs, field.Forbidden(fldPath, "Bidirectional mount propagation is available only to privileged containers"))
	}
	return errs
}

func validateRecursiveReadOnly(m corev1.VolumeMount, fldPath *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	var errs field.ErrorList
	switch *m.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyDisabled:
	case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
		if !m.ReadOnly {
			errs = append(errs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			errs = append(errs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath, *m.RecursiveReadOnly, []corev1.RecursiveReadOnlyMode{
			corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible}))
	}
	return errs
}

func validateVolumeDevices(devices []corev1.VolumeDevice, mounts map[string]string, volumes map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths, names := map[string]bool{}, map[string]bool{}
	for i, d := range devices {
		path := fldPath.Index(i)
		src, matched := volumes[d.Name]
		if d.Name == "" {
			errs = append(errs, field.Required(path.Child("name"), ""))
		}
		if names[d.Name] {
			errs = append(errs, field.Invalid(path.Child("name"), d.Name, "must be unique"))
		}
		if matched && src.PersistentVolumeClaim == nil && src.Ephemeral == nil {
			errs = append(errs, field.Invalid(path.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if !matched {
			errs = append(errs, field.NotFound(path.Child("name"), d.Name))
		}
		if d.DevicePath == "" {
			errs = append(errs, field.Required(path.Child("devicePath"), ""))
		}
		if paths[d.DevicePath] {
			errs = append(errs, field.Invalid(path.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if d.DevicePath != "" && len(validatePathNoBacksteps(d.DevicePath, path)) > 0 {
			errs = append(errs, field.Invalid(path.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			paths[d.DevicePath] = true
		}
		if _, clash := mounts[d.Name]; clash {
			errs = append(errs, field.Invalid(path.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		for _, mountPath := range mounts {
			if mountPath == d.DevicePath {
				errs = append(errs, field.Invalid(path.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
				break
			}
		}
		if d.Name != "" {
			names[d.Name] = true
		}
	}
	return errs
}

func validateResizePolicy(policies []corev1.ContainerResizePolicy, podRestart corev1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.ResourceName]bool{}
	for i, p := range policies {
		if seen[p.ResourceName] {
			errs = append(errs, field.Duplicate(fldPath.Index(i), p.ResourceName))
		}
		seen[p.ResourceName] = true
		switch p.ResourceName {
		case corev1.ResourceCPU, corev1.ResourceMemory:
		case "":
			errs = append(errs, field.Required(fldPath, ""))
		default:
			errs = append(errs, field.NotSupported(fldPath, p.ResourceName, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}))
		}
		switch p.RestartPolicy {
		case corev1.NotRequired, corev1.RestartContainer:
		case "":
			errs = append(errs, field.Required(fldPath, ""))
		default:
			errs = append(errs, field.NotSupported(fldPath, p.RestartPolicy, []corev1.ResourceResizeRestartPolicy{corev1.NotRequired, corev1.RestartContainer}))
		}
		if podRestart == corev1.RestartPolicyNever && p.RestartPolicy != corev1.NotRequired {
			errs = append(errs, field.Invalid(fldPath, p.RestartPolicy, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
		}
	}
	return errs
}

func validateLivenessProbe(p *corev1.Probe, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateProbe(p, gracePeriod, fldPath)
	if p.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(fldPath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	return errs
}

func validateReadinessProbe(p *corev1.Probe, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateProbe(p, gracePeriod, fldPath)
	if p.TerminationGracePeriodSeconds != nil {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), p.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
	}
	return errs
}

func validateStartupProbe(p *corev1.Probe, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	return validateLivenessProbe(p, gracePeriod, fldPath)
}

func validateProbe(p *corev1.Probe, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	h := p.ProbeHandler
	errs := validateHandler(handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, grpc: h.GRPC}, gracePeriod, fldPath)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.TimeoutSeconds), fldPath.Child("timeoutSeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.PeriodSeconds), fldPath.Child("periodSeconds"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.SuccessThreshold), fldPath.Child("successThreshold"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.FailureThreshold), fldPath.Child("failureThreshold"))...)
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return errs
}

// handler is the union of probe and lifecycle handlers.
type handler struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

func validateHandler(h handler, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	one := func(set bool, name string, check func() field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 handler type"))
			return
		}
		n++
		errs = append(errs, check()...)
	}
	one(h.exec != nil, "exec", func() field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("exec", "command"), "")}
		}
		return nil
	})
	one(h.httpGet != nil, "httpGet", func() field.ErrorList {
		return validateHTTPGetAction(h.httpGet, fldPath.Child("httpGet"))
	})
	one(h.tcpSocket != nil, "tcpSocket", func() field.ErrorList {
		return validatePortNumOrName(h.tcpSocket.Port, fldPath.Child("tcpSocket", "port"))
	})
	one(h.grpc != nil, "grpc", func() field.ErrorList {
		return validatePortNumOrName(intstr.FromInt32(h.grpc.Port), fldPath.Child("grpc", "port"))
	})
	one(h.sleep != nil, "sleep", func() field.ErrorList {
		// A nil grace period is reported where it is set; don't repeat it.
		if gracePeriod != nil && (h.sleep.Seconds < 0 || h.sleep.Seconds > *gracePeriod) {
			return field.ErrorList{field.Invalid(fldPath.Child("sleep"), h.sleep.Seconds,
				fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *gracePeriod))}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a handler type"))
	}
	return errs
}

func validateHTTPGetAction(a *corev1.HTTPGetAction, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, validatePortNumOrName(a.Port, fldPath.Child("port"))...)
	if a.Scheme != corev1.URISchemeHTTP && a.Scheme != corev1.URISchemeHTTPS {
		errs = append(errs, field.NotSupported(fldPath.Child("scheme"), a.Scheme, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
	}
	for _, h := range a.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(h.Name) {
			errs = append(errs, field.Invalid(fldPath.Child("httpHeaders"), h.Name, msg))
		}
	}
	return errs
}

func validateLifecycle(l *corev1.Lifecycle, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h := l.PostStart; h != nil {
		errs = append(errs, validateHandler(handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}, gracePeriod, fldPath.Child("postStart"))...)
	}
	if h := l.PreStop; h != nil {
		errs = append(errs, validateHandler(handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}, gracePeriod, fldPath.Child("preStop"))...)
	}
	return errs
}
