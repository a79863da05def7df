package kinds

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const fileModeErrorMsg = "must be a number between 0 and 0777 (octal), both inclusive"

// validateVolumes checks spec.volumes and returns the volumes that passed,
// by name: a container mount naming a volume with errors is reported as not
// found as well, as kube does. podName is the pod's name when validating a
// pod (ephemeral volumes derive claim names from it), "" for templates.
func validateVolumes(volumes []corev1.Volume, podName string, isPod bool, fldPath *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	valid := map[string]corev1.VolumeSource{}
	names := map[string]bool{}
	for i := range volumes {
		v := &volumes[i]
		path := fldPath.Index(i)
		namePath := path.Child("name")
		el := validateVolumeSource(&v.VolumeSource, v.Name, podName, isPod, path)
		if v.Name == "" {
			el = append(el, field.Required(namePath, ""))
		} else {
			el = append(el, validateDNS1123Label(v.Name, namePath)...)
		}
		if names[v.Name] {
			el = append(el, field.Duplicate(namePath, v.Name))
		}
		if len(el) == 0 {
			names[v.Name] = true
			valid[v.Name] = v.VolumeSource
		} else {
			errs = append(errs, el...)
		}
	}
	return valid, errs
}

func validateVolumeSource(src *corev1.VolumeSource, volName, podName string, isPod bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	set := setVolumeSources(src)
	if len(set) == 0 {
		return field.ErrorList{field.Required(fldPath, "must specify a volume type")}
	}
	for _, extra := range set[1:] {
		errs = append(errs, field.Forbidden(fldPath.Child(extra), "may not specify more than 1 volume type"))
	}
	required := func(p *field.Path, empty bool) {
		if empty {
			errs = append(errs, field.Required(p, ""))
		}
	}
	// Only the first type set is checked further, as in kube.
	switch p := fldPath.Child(set[0]); set[0] {
	case "emptyDir":
		if l := src.EmptyDir.SizeLimit; l != nil && l.Sign() < 0 {
			errs = append(errs, field.Forbidden(p.Child("sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	case "hostPath":
		if src.HostPath.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
			break
		}
		errs = append(errs, validatePathNoBacksteps(src.HostPath.Path, p.Child("path"))...)
		errs = append(errs, validateHostPathType(src.HostPath.Type, p.Child("type"))...)
	case "gitRepo":
		required(p.Child("repository"), src.GitRepo.Repository == "")
		errs = append(errs, validateLocalDescendingPath(src.GitRepo.Directory, p.Child("directory"))...)
	case "gcePersistentDisk":
		required(p.Child("pdName"), src.GCEPersistentDisk.PDName == "")
		errs = append(errs, validatePartition(src.GCEPersistentDisk.Partition, p.Child("partition"))...)
	case "awsElasticBlockStore":
		required(p.Child("volumeID"), src.AWSElasticBlockStore.VolumeID == "")
		errs = append(errs, validatePartition(src.AWSElasticBlockStore.Partition, p.Child("partition"))...)
	case "secret":
		required(p.Child("secretName"), src.Secret.SecretName == "")
		errs = append(errs, validateFileMode(src.Secret.DefaultMode, p.Child("defaultMode"))...)
		for j := range src.Secret.Items {
			errs = append(errs, validateKeyToPath(&src.Secret.Items[j], p.Child("items").Index(j))...)
		}
	case "configMap":
		required(p.Child("name"), src.ConfigMap.Name == "")
		errs = append(errs, validateFileMode(src.ConfigMap.DefaultMode, p.Child("defaultMode"))...)
		for j := range src.ConfigMap.Items {
			errs = append(errs, validateKeyToPath(&src.ConfigMap.Items[j], p.Child("items").Index(j))...)
		}
	case "nfs":
		required(p.Child("server"), src.NFS.Server == "")
		required(p.Child("path"), src.NFS.Path == "")
		if !path.IsAbs(src.NFS.Path) {
			errs = append(errs, field.Invalid(p.Child("path"), src.NFS.Path, "must be an absolute path"))
		}
	case "iscsi":
		required(p.Child("targetPortal"), src.ISCSI.TargetPortal == "")
		required(p.Child("iqn"), src.ISCSI.IQN == "")
		if src.ISCSI.Lun < 0 || src.ISCSI.Lun > 255 {
			errs = append(errs, field.Invalid(p.Child("lun"), src.ISCSI.Lun, validation.InclusiveRangeError(0, 255)))
		}
		if (src.ISCSI.DiscoveryCHAPAuth || src.ISCSI.SessionCHAPAuth) && src.ISCSI.SecretRef == nil {
			errs = append(errs, field.Required(p.Child("secretRef"), ""))
		}
	case "glusterfs":
		required(p.Child("endpoints"), src.Glusterfs.EndpointsName == "")
		required(p.Child("path"), src.Glusterfs.Path == "")
	case "persistentVolumeClaim":
		required(p.Child("claimName"), src.PersistentVolumeClaim.ClaimName == "")
	case "rbd":
		required(p.Child("monitors"), len(src.RBD.CephMonitors) == 0)
		required(p.Child("image"), src.RBD.RBDImage == "")
	case "flexVolume":
		required(p.Child("driver"), src.FlexVolume.Driver == "")
		for _, k := range sortedKeys(src.FlexVolume.Options) {
			ns, _, _ := strings.Cut(k, "/")
			normalized := "." + strings.ToLower(ns)
			if strings.HasSuffix(normalized, ".kubernetes.io") || strings.HasSuffix(normalized, ".k8s.io") {
				errs = append(errs, field.Invalid(p.Child("options").Key(k), k, "kubernetes.io and k8s.io namespaces are reserved"))
			}
		}
	case "cinder":
		required(p.Child("volumeID"), src.Cinder.VolumeID == "")
		if src.Cinder.SecretRef != nil {
			required(p.Child("secretRef", "name"), src.Cinder.SecretRef.Name == "")
		}
	case "cephfs":
		required(p.Child("monitors"), len(src.CephFS.Monitors) == 0)
	case "flocker":
		name, uuid := src.Flocker.DatasetName, src.Flocker.DatasetUUID
		if name == "" && uuid == "" {
			errs = append(errs, field.Required(p, "one of datasetName and datasetUUID is required"))
		}
		if name != "" && uuid != "" {
			errs = append(errs, field.Invalid(p, "resource", "datasetName and datasetUUID can not be specified simultaneously"))
		}
		if strings.Contains(name, "/") {
			errs = append(errs, field.Invalid(p.Child("datasetName"), name, "must not contain '/'"))
		}
	case "downwardAPI":
		errs = append(errs, validateFileMode(src.DownwardAPI.DefaultMode, p.Child("defaultMode"))...)
		for j := range src.DownwardAPI.Items {
			errs = append(errs, validateDownwardAPIFile(&src.DownwardAPI.Items[j], p)...)
		}
	case "fc":
		fc := src.FC
		if len(fc.TargetWWNs) == 0 && len(fc.WWIDs) == 0 {
			errs = append(errs, field.Required(p.Child("targetWWNs"), "must specify either targetWWNs or wwids, but not both"))
		}
		if len(fc.TargetWWNs) != 0 && len(fc.WWIDs) != 0 {
			errs = append(errs, field.Invalid(p.Child("targetWWNs"), fc.TargetWWNs, "targetWWNs and wwids can not be specified simultaneously"))
		}
		if len(fc.TargetWWNs) != 0 {
			if fc.Lun == nil {
				errs = append(errs, field.Required(p.Child("lun"), "lun is required if targetWWNs is specified"))
			} else if *fc.Lun < 0 || *fc.Lun > 255 {
				errs = append(errs, field.Invalid(p.Child("lun"), fc.Lun, validation.InclusiveRangeError(0, 255)))
			}
		}
	case "azureFile":
		required(p.Child("secretName"), src.AzureFile.SecretName == "")
		required(p.Child("shareName"), src.AzureFile.ShareName == "")
	case "vsphereVolume":
		required(p.Child("volumePath"), src.VsphereVolume.VolumePath == "")
	case "quobyte":
		required(p.Child("registry"), src.Quobyte.Registry == "")
		required(p.Child("volume"), src.Quobyte.Volume == "")
	case "azureDisk":
		d := src.AzureDisk
		required(p.Child("diskName"), d.DiskName == "")
		required(p.Child("diskURI"), d.DataDiskURI == "")
		if d.CachingMode != nil {
			switch *d.CachingMode {
			case corev1.AzureDataDiskCachingNone, corev1.AzureDataDiskCachingReadOnly, corev1.AzureDataDiskCachingReadWrite:
			default:
				errs = append(errs, field.NotSupported(p.Child("cachingMode"), *d.CachingMode, []corev1.AzureDataDiskCachingMode{
					corev1.AzureDataDiskCachingNone, corev1.AzureDataDiskCachingReadOnly, corev1.AzureDataDiskCachingReadWrite}))
			}
		}
		if d.Kind != nil {
			switch *d.Kind {
			case corev1.AzureDedicatedBlobDisk, corev1.AzureManagedDisk, corev1.AzureSharedBlobDisk:
			default:
				errs = append(errs, field.NotSupported(p.Child("kind"), *d.Kind, []corev1.AzureDataDiskKind{
					corev1.AzureDedicatedBlobDisk, corev1.AzureManagedDisk, corev1.AzureSharedBlobDisk}))
			}
		}
	case "photonPersistentDisk":
		required(p.Child("pdID"), src.PhotonPersistentDisk.PdID == "")
	case "projected":
		errs = append(errs, validateFileMode(src.Projected.DefaultMode, p.Child("defaultMode"))...)
		errs = append(errs, validateProjectionSources(src.Projected, p)...)
	case "portworxVolume":
		required(p.Child("volumeID"), src.PortworxVolume.VolumeID == "")
	case "scaleIO":
		required(p.Child("gateway"), src.ScaleIO.Gateway == "")
		required(p.Child("system"), src.ScaleIO.System == "")
		required(p.Child("volumeName"), src.ScaleIO.VolumeName == "")
	case "storageos":
		if src.StorageOS.VolumeName == "" {
			errs = append(errs, field.Required(p.Child("volumeName"), ""))
		} else {
			errs = append(errs, validateDNS1123Label(src.StorageOS.VolumeName, p.Child("volumeName"))...)
		}
		if src.StorageOS.VolumeNamespace != "" {
			errs = append(errs, validateDNS1123Label(src.StorageOS.VolumeNamespace, p.Child("volumeNamespace"))...)
		}
	case "csi":
		errs = append(errs, validateCSIDriverName(src.CSI.Driver, p.Child("driver"))...)
		if ref := src.CSI.NodePublishSecretRef; ref != nil {
			if ref.Name == "" {
				errs = append(errs, field.Required(p.Child("nodePublishSecretRef", "name"), ""))
			} else {
				errs = append(errs, validateName(ref.Name, apivalidation.NameIsDNSSubdomain, p.Child("name"))...)
			}
		}
	case "ephemeral":
		errs = append(errs, validateEphemeralVolume(src.Ephemeral, volName, podName, fldPath)...)
	case "image":
		if isPod && src.Image.Reference == "" {
			errs = append(errs, field.Required(p.Child("reference"), "must be set"))
		}
		errs = append(errs, validatePullPolicy(src.Image.PullPolicy, p.Child("pullPolicy"))...)
	}
	return errs
}

func validateHostPathType(t *corev1.HostPathType, fldPath *field.Path) field.ErrorList {
	if t == nil {
		return nil
	}
	switch *t {
	case corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory,
		corev1.HostPathFileOrCreate, corev1.HostPathFile, corev1.HostPathSocket,
		corev1.HostPathCharDev, corev1.HostPathBlockDev:
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, t, []corev1.HostPathType{
		corev1.HostPathUnset, corev1.HostPathBlockDev, corev1.HostPathCharDev, corev1.HostPathDirectory,
		corev1.HostPathDirectoryOrCreate, corev1.HostPathFile, corev1.HostPathFileOrCreate, corev1.HostPathSocket})}
}

func validatePartition(partition int32, fldPath *field.Path) field.ErrorList {
	if partition < 0 || partition > 255 {
		return field.ErrorList{field.Invalid(fldPath, partition, validation.InclusiveRangeError(1, 255))}
	}
	return nil
}

func validateFileMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0777 || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, fileModeErrorMsg)}
	}
	return nil
}

func validateKeyToPath(kp *corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if kp.Key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	}
	if kp.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(kp.Path, fldPath.Child("path"))...)
	return append(errs, validateFileMode(kp.Mode, fldPath.Child("mode"))...)
}

// validateDownwardAPIFile checks one file of a downwardAPI volume or
// projection. Like kube, it reports at the volume's path, not the item's.
func validateDownwardAPIFile(f *corev1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(f.Path, fldPath.Child("path"))...)
	switch {
	case f.FieldRef != nil:
		errs = append(errs, validateObjectFieldSelector(f.FieldRef, volumeFieldPathSupported, fldPath.Child("fieldRef"))...)
		if f.ResourceFieldRef != nil {
			errs = append(errs, field.Invalid(fldPath, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		errs = append(errs, validateResourceFieldSelector(f.ResourceFieldRef, true, fldPath.Child("resourceFieldRef"))...)
	default:
		errs = append(errs, field.Required(fldPath, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(errs, validateFileMode(f.Mode, fldPath.Child("mode"))...)
}

func validateProjectionSources(proj *corev1.ProjectedVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := map[string]bool{}
	claim := func(p, conflictValue string) {
		if p == "" {
			return
		}
		if paths[p] {
			errs = append(errs, field.Invalid(fldPath, conflictValue, "conflicting duplicate paths"))
		}
		paths[p] = true
	}
	for i := range proj.Sources {
		s := &proj.Sources[i]
		srcPath := fldPath.Child("sources").Index(i)
		n := 0
		if s.Secret != nil {
			n++
			p := srcPath.Child("secret")
			if s.Secret.Name == "" {
				errs = append(errs, field.Required(p.Child("name"), ""))
			}
			for j := range s.Secret.Items {
				errs = append(errs, validateKeyToPath(&s.Secret.Items[j], p.Child("items").Index(j))...)
				claim(s.Secret.Items[j].Path, s.Secret.Name)
			}
		}
		if s.ConfigMap != nil {
			n++
			p := srcPath.Child("configMap")
			if s.ConfigMap.Name == "" {
				errs = append(errs, field.Required(p.Child("name"), ""))
			}
			for j := range s.ConfigMap.Items {
				errs = append(errs, validateKeyToPath(&s.ConfigMap.Items[j], p.Child("items").Index(j))...)
				claim(s.ConfigMap.Items[j].Path, s.ConfigMap.Name)
			}
		}
		if s.DownwardAPI != nil {
			n++
			p := srcPath.Child("downwardAPI")
			for j := range s.DownwardAPI.Items {
				errs = append(errs, validateDownwardAPIFile(&s.DownwardAPI.Items[j], p)...)
				claim(s.DownwardAPI.Items[j].Path, s.DownwardAPI.Items[j].Path)
			}
		}
		if t := s.ServiceAccountToken; t != nil {
			n++
			p := srcPath.Child("serviceAccountToken")
			if t.ExpirationSeconds != nil {
				if *t.ExpirationSeconds < 10*60 {
					errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *t.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
				}
				if *t.ExpirationSeconds > 1<<32 {
					errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *t.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
				}
			}
			if t.Path == "" {
				errs = append(errs, field.Required(fldPath.Child("path"), ""))
			} else {
				errs = append(errs, validateLocalNonReservedPath(t.Path, fldPath.Child("path"))...)
			}
		}
		if b := s.ClusterTrustBundle; b != nil {
			n++
			p := srcPath.Child("clusterTrustBundle")
			switch {
			case b.Name != nil && b.SignerName != nil:
				errs = append(errs, field.Invalid(p, b, "only one of name and signerName may be used"))
			case b.Name != nil && *b.Name == "":
				errs = append(errs, field.Required(p.Child("name"), "must be a valid object name"))
			case b.SignerName != nil && *b.SignerName == "":
				errs = append(errs, field.Required(p.Child("signerName"), "must be a valid signer name"))
			case b.Name == nil && b.SignerName == nil:
				errs = append(errs, field.Required(p, "either name or signerName must be specified"))
			}
			if b.Path == "" {
				errs = append(errs, field.Required(p.Child("path"), ""))
			}
			errs = append(errs, validateLocalNonReservedPath(b.Path, p.Child("path"))...)
			claim(b.Path, b.Path)
		}
		if s.PodCertificate != nil {
			n++
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(srcPath, "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

func validateCSIDriverName(driver string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if driver == "" {
		errs = append(errs, field.Required(fldPath, ""))
	}
	if len(driver) > 63 {
		errs = append(errs, field.TooLong(fldPath, "", 63))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(driver)) {
		errs = append(errs, field.Invalid(fldPath, driver, msg))
	}
	return errs
}

// validateEphemeralVolume checks the claim template of a generic ephemeral
// volume. The claim is named <pod>-<volume>, so in a pod that name must be
// a valid object name.
func validateEphemeralVolume(e *corev1.EphemeralVolumeSource, volName, podName string, fldPath *field.Path) field.ErrorList {
	p := fldPath.Child("ephemeral")
	if e.VolumeClaimTemplate == nil {
		return field.ErrorList{field.Required(p.Child("volumeClaimTemplate"), "")}
	}
	var errs field.ErrorList
	spec := &e.VolumeClaimTemplate.Spec
	specPath := p.Child("volumeClaimTemplate", "spec")
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(specPath.Child("accessModes"), "at least 1 access mode is required"))
	}
	for _, mode := range spec.AccessModes {
		switch mode {
		case corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod:
		default:
			errs = append(errs, field.NotSupported(specPath.Child("accessModes"), mode, []corev1.PersistentVolumeAccessMode{
				corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod}))
		}
	}
	storagePath := specPath.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storagePath, ""))
	} else if q.Cmp(resource.Quantity{}) <= 0 {
		errs = append(errs, field.Invalid(storagePath, q.String(), "must be greater than zero"))
	}
	if podName != "" && volName != "" {
		claim := podName + "-" + volName
		for _, msg := range apivalidation.NameIsDNSSubdomain(claim, false) {
			errs = append(errs, field.Invalid(fldPath.Child("name"), volName, fmt.Sprintf("PVC name %q: %v", claim, msg)))
		}
	}
	return errs
}
