package kinds

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Security settings of pods and containers: user and group IDs, sysctls,
// seccomp and AppArmor profiles, Windows options.

// sysctlNameRE is a sysctl name: dot- or slash-separated segments.
var sysctlNameRE = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

const sysctlMaxLength = 253

// sysctlNamespace says which kernel namespace a sysctl belongs to: "net",
// "ipc", or "" for the others. Pods sharing that namespace with the host
// may not set it.
func sysctlNamespace(name string) string {
	name = normalizeSysctl(name)
	switch name {
	case "kernel.sem", "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced",
		"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni":
		return "ipc"
	}
	switch {
	case strings.HasPrefix(name, "net."):
		return "net"
	case strings.HasPrefix(name, "fs.mqueue."):
		return "ipc"
	}
	return ""
}

// normalizeSysctl turns the slash form (net/ipv4/conf/eth0.100/rp_filter)
// into the dotted one (net.ipv4.conf.eth0/100.rp_filter).
func normalizeSysctl(name string) string {
	i := strings.IndexAny(name, "./")
	if i == -1 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

func validatePodSecurityContext(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.FSGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.FSGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("fsGroup"), *sc.FSGroup, msg))
		}
	}
	if sc.RunAsUser != nil {
		for _, msg := range validation.IsValidUserID(*sc.RunAsUser) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.RunAsGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	for i, gid := range sc.SupplementalGroups {
		for _, msg := range validation.IsValidGroupID(gid) {
			errs = append(errs, field.Invalid(fldPath.Child("supplementalGroups").Index(i), gid, msg))
		}
	}
	// kube keeps shareProcessNamespace in the internal securityContext,
	// hence the path.
	if spec.ShareProcessNamespace != nil && spec.HostPID && *spec.ShareProcessNamespace {
		errs = append(errs, field.Invalid(fldPath.Child("shareProcessNamespace"), *spec.ShareProcessNamespace, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	names := map[string]bool{}
	for i, s := range sc.Sysctls {
		p := fldPath.Child("sysctls").Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlNameRE.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlNameRE)))
		case names[s.Name]:
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		switch ns := sysctlNamespace(s.Name); {
		case spec.HostNetwork && ns == "net":
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostNetwork' is true"))
		case spec.HostIPC && ns == "ipc":
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostIPC' is true"))
		}
		names[s.Name] = true
	}
	if p := sc.FSGroupChangePolicy; p != nil && *p != corev1.FSGroupChangeAlways && *p != corev1.FSGroupChangeOnRootMismatch {
		errs = append(errs, field.NotSupported(fldPath.Child("fsGroupChangePolicy"), p, []corev1.PodFSGroupChangePolicy{
			corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch}))
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	errs = append(errs, validateWindowsOptions(sc.WindowsOptions, fldPath.Child("windowsOptions"))...)
	errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	if p := sc.SupplementalGroupsPolicy; p != nil && *p != corev1.SupplementalGroupsPolicyMerge && *p != corev1.SupplementalGroupsPolicyStrict {
		errs = append(errs, field.NotSupported(fldPath.Child("supplementalGroupsPolicy"), p, []corev1.SupplementalGroupsPolicy{
			corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict}))
	}
	if p := sc.SELinuxChangePolicy; p != nil && *p != corev1.SELinuxChangePolicyMountOption && *p != corev1.SELinuxChangePolicyRecursive {
		errs = append(errs, field.NotSupported(fldPath.Child("seLinuxChangePolicy"), *p, []corev1.PodSELinuxChangePolicy{
			corev1.SELinuxChangePolicyMountOption, corev1.SELinuxChangePolicyRecursive}))
	}
	return errs
}

func validateSecurityContext(sc *corev1.SecurityContext, hostUsers bool, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		for _, msg := range validation.IsValidUserID(*sc.RunAsUser) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.RunAsGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	if sc.ProcMount != nil {
		switch *sc.ProcMount {
		case corev1.DefaultProcMount, corev1.UnmaskedProcMount:
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("procMount"), *sc.ProcMount, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}))
		}
		if hostUsers && *sc.ProcMount == corev1.UnmaskedProcMount {
			errs = append(errs, field.Invalid(fldPath.Child("procMount"), sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if string(c) == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	errs = append(errs, validateWindowsOptions(sc.WindowsOptions, fldPath.Child("windowsOptions"))...)
	errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	return errs
}

func validateSeccompProfile(sp *corev1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(fldPath.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), sp.Type, []corev1.SeccompProfileType{
			corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}))
	}
	if sp.Type == corev1.SeccompProfileTypeLocalhost {
		if sp.LocalhostProfile == nil {
			errs = append(errs, field.Required(fldPath.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
		} else {
			errs = append(errs, validateLocalDescendingPath(*sp.LocalhostProfile, fldPath.Child("localhostProfile"))...)
		}
	} else if sp.LocalhostProfile != nil {
		errs = append(errs, field.Invalid(fldPath.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

func validateAppArmorProfile(p *corev1.AppArmorProfile, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	switch p.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			errs = append(errs, field.Required(fldPath.Child("localhostProfile"), "must be set when AppArmor type is Localhost"))
			break
		}
		trimmed := strings.TrimSpace(*p.LocalhostProfile)
		if trimmed != *p.LocalhostProfile {
			errs = append(errs, field.Invalid(fldPath.Child("localhostProfile"), *p.LocalhostProfile, "must not be padded with whitespace"))
		} else if trimmed == "" {
			errs = append(errs, field.Required(fldPath.Child("localhostProfile"), "must be set when AppArmor type is Localhost"))
		}
		const maxLocalhostProfileLength = 4095 // PATH_MAX - 1
		if len(*p.LocalhostProfile) > maxLocalhostProfileLength {
			errs = append(errs, field.TooLong(fldPath.Child("localhostProfile"), "", maxLocalhostProfileLength))
		}
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if p.LocalhostProfile != nil {
			errs = append(errs, field.Invalid(fldPath.Child("localhostProfile"), p.LocalhostProfile, "can only be set when AppArmor type is Localhost"))
		}
	case "":
		errs = append(errs, field.Required(fldPath.Child("type"), "type is required when appArmorProfile is set"))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), p.Type, []corev1.AppArmorProfileType{
			corev1.AppArmorProfileTypeLocalhost, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined}))
	}
	return errs
}

// Windows user names: DOMAIN\USER, where DOMAIN is a NetBIOS or DNS name.
var (
	ctrlCharsRE        = regexp.MustCompile(`[[:cntrl:]]+`)
	netBiosDomainRE    = regexp.MustCompile(`^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$`)
	dnsDomainRE        = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)
	badUserNameCharsRE = regexp.MustCompile(`["/\\:;|=,\+\*\?<>@\[\]]`)
	dotsOrSpacesOnlyRE = regexp.MustCompile(`^[\. ]+$`)
)

const (
	maxGMSASpecLength   = 64 * 1024
	maxUserDomainLength = 256
	maxUserNameLength   = 104
)

func validateWindowsOptions(o *corev1.WindowsSecurityContextOptions, fldPath *field.Path) field.ErrorList {
	if o == nil {
		return nil
	}
	var errs field.ErrorList
	if o.GMSACredentialSpecName != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*o.GMSACredentialSpecName) {
			errs = append(errs, field.Invalid(fldPath.Child("gmsaCredentialSpecName"), o.GMSACredentialSpecName, msg))
		}
	}
	if o.GMSACredentialSpec != nil {
		if l := len(*o.GMSACredentialSpec); l == 0 {
			errs = append(errs, field.Invalid(fldPath.Child("gmsaCredentialSpec"), o.GMSACredentialSpec, "gmsaCredentialSpec cannot be an empty string"))
		} else if l > maxGMSASpecLength {
			errs = append(errs, field.Invalid(fldPath.Child("gmsaCredentialSpec"), o.GMSACredentialSpec, "gmsaCredentialSpec size must be under 64 KiB"))
		}
	}
	if o.RunAsUserName == nil {
		return errs
	}
	name := *o.RunAsUserName
	p := fldPath.Child("runAsUserName")
	invalid := func(msg string) { errs = append(errs, field.Invalid(p, o.RunAsUserName, msg)) }
	parts := strings.Split(name, "\\")
	switch {
	case name == "":
		invalid("runAsUserName cannot be an empty string")
	case ctrlCharsRE.MatchString(name):
		invalid("runAsUserName cannot contain control characters")
	case len(parts) > 2:
		invalid("runAsUserName cannot contain more than one backslash")
	default:
		domain, user := "", parts[0]
		if len(parts) == 2 {
			domain, user = parts[0], parts[1]
		}
		if len(domain) >= maxUserDomainLength {
			invalid(fmt.Sprintf("runAsUserName's Domain length must be under %d characters", maxUserDomainLength))
		}
		if len(parts) == 2 && !netBiosDomainRE.MatchString(domain) && !dnsDomainRE.MatchString(domain) {
			invalid("runAsUserName's Domain doesn't match the NetBios nor the DNS format")
		}
		if user == "" {
			invalid("runAsUserName's User cannot be empty")
		} else if len(user) > maxUserNameLength {
			invalid(fmt.Sprintf("runAsUserName's User length must not be longer than %d characters", maxUserNameLength))
		}
		if dotsOrSpacesOnlyRE.MatchString(user) {
			invalid("runAsUserName's User cannot contain only periods or spaces")
		}
		if badUserNameCharsRE.MatchString(user) {
			invalid(`runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]`)
		}
	}
	return errs
}
