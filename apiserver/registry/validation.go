package registry

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The validation rules kube-apiserver applies to the served kinds, written
// with apimachinery's validation helpers.

func validateDataKeys[V any](data map[string]V, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k := range data {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(fld, k, msg))
		}
	}
	return errs
}

func validateConfigMap(obj, old runtime.Object) field.ErrorList {
	cm := obj.(*corev1.ConfigMap)
	errs := validateDataKeys(cm.Data, field.NewPath("data"))
	errs = append(errs, validateDataKeys(cm.BinaryData, field.NewPath("binaryData"))...)
	size := 0
	for k, v := range cm.Data {
		size += len(v)
		if _, dup := cm.BinaryData[k]; dup {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(k), k, "duplicate of key present in binaryData"))
		}
	}
	for _, v := range cm.BinaryData {
		size += len(v)
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
	}
	if old != nil {
		oldCM := old.(*corev1.ConfigMap)
		if oldCM.Immutable != nil && *oldCM.Immutable {
			if cm.Immutable == nil || !*cm.Immutable {
				errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
			}
			if !equality.Semantic.DeepEqual(cm.Data, oldCM.Data) {
				errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
			}
			if !equality.Semantic.DeepEqual(cm.BinaryData, oldCM.BinaryData) {
				errs = append(errs, field.Forbidden(field.NewPath("binaryData"), "field is immutable when `immutable` is set"))
			}
		}
	}
	return errs
}

func validateSecret(obj, old runtime.Object) field.ErrorList {
	s := obj.(*corev1.Secret)
	dataPath := field.NewPath("data")
	errs := validateDataKeys(s.Data, dataPath)
	size := 0
	for _, v := range s.Data {
		size += len(v)
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}
	required := func(keys ...string) {
		for _, k := range keys {
			if _, ok := s.Data[k]; !ok {
				errs = append(errs, field.Required(dataPath.Key(k), ""))
			}
		}
	}
	switch s.Type {
	case corev1.SecretTypeTLS:
		required(corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	case corev1.SecretTypeDockerConfigJson:
		required(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeDockercfg:
		required(corev1.DockerConfigKey)
	case corev1.SecretTypeSSHAuth:
		required(corev1.SSHAuthPrivateKey)
	case corev1.SecretTypeServiceAccountToken:
		// Long-lived ServiceAccount token Secrets are not issued; tokens
		// come from the TokenRequest API only.
		errs = append(errs, field.NotSupported(field.NewPath("type"), s.Type, []string{string(corev1.SecretTypeOpaque)}))
	}
	if old != nil {
		oldS := old.(*corev1.Secret)
		if s.Type != oldS.Type {
			errs = append(errs, field.Invalid(field.NewPath("type"), s.Type, "field is immutable"))
		}
		if oldS.Immutable != nil && *oldS.Immutable {
			if s.Immutable == nil || !*s.Immutable {
				errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
			}
			if !equality.Semantic.DeepEqual(s.Data, oldS.Data) {
				errs = append(errs, field.Forbidden(dataPath, "field is immutable when `immutable` is set"))
			}
		}
	}
	return errs
}

// maxRulePermissions bounds the single permissions (verbs × groups ×
// resources × names, or verbs × URLs) a role's rules spell out: escalation
// checks expand them, so an unbounded role would be a way to make the
// server work without end.
const maxRulePermissions = 100000

func validateRules(rules []rbacv1.PolicyRule, namespaced bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	total := 0
	for _, r := range rules {
		n := max(len(r.Verbs), 1) * max(len(r.APIGroups), 1) * max(len(r.Resources), 1) * max(len(r.ResourceNames), 1)
		if len(r.NonResourceURLs) > 0 {
			n = max(len(r.Verbs), 1) * len(r.NonResourceURLs)
		}
		if total += n; total > maxRulePermissions {
			errs = append(errs, field.TooMany(fld, total, maxRulePermissions))
			return errs
		}
	}
	for i, r := range rules {
		p := fld.Index(i)
		if len(r.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(r.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(r.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(r.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

func validateBinding(ref rbacv1.RoleRef, oldRef *rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	refPath := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(refPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if ref.Kind != "ClusterRole" && !(namespaced && ref.Kind == "Role") {
		errs = append(errs, field.NotSupported(refPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(refPath.Child("name"), ""))
	} else {
		for _, msg := range path.IsValidPathSegmentName(ref.Name) {
			errs = append(errs, field.Invalid(refPath.Child("name"), ref.Name, msg))
		}
	}
	if oldRef != nil && *oldRef != ref {
		errs = append(errs, field.Invalid(refPath, ref, "cannot change roleRef"))
	}
	for i, s := range subjects {
		p := field.NewPath("subjects").Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			if s.APIGroup != "" {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
			}
			if s.Name != "" {
				for _, msg := range apimachineryvalidation.ValidateServiceAccountName(s.Name, false) {
					errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
				}
			}
			if !namespaced && s.Namespace == "" {
				errs = append(errs, field.Required(p.Child("namespace"), ""))
			}
		case rbacv1.UserKind, rbacv1.GroupKind:
			if s.APIGroup != rbacv1.GroupName {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
		}
	}
	return errs
}

// ValidateObject checks obj's metadata and, through the resource, the rest
// of it. old is nil on create.
func ValidateObject(res *Resource, obj, old runtime.Object) error {
	objMeta, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(objMeta, res.Namespaced, res.NameValidator, field.NewPath("metadata"))
	if old != nil {
		oldMeta, err := meta.Accessor(old)
		if err != nil {
			return err
		}
		errs = append(errs, apimachineryvalidation.ValidateObjectMetaAccessorUpdate(objMeta, oldMeta, field.NewPath("metadata"))...)
	}
	if res.Validate != nil {
		errs = append(errs, res.Validate(obj, old)...)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(res.GVK().GroupKind(), objMeta.GetName(), errs)
	}
	return nil
}

// typed adapts a validation of objects of one Go type, whose old object is
// nil on create, to a Resource's.
func typed[T runtime.Object](validate func(obj, old T) field.ErrorList) func(obj, old runtime.Object) field.ErrorList {
	return func(obj, old runtime.Object) field.ErrorList {
		var o T
		if old != nil {
			o = old.(T)
		}
		return validate(obj.(T), o)
	}
}
