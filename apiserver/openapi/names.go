package openapi

import (
	"reflect"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/util"
)

// modelNamer is implemented by the k8s.io/api and apimachinery types
// (zz_generated.model_name.go); it is the name kube-apiserver uses.
type modelNamer interface {
	OpenAPIModelName() string
}

// modelName is the definition name of a named Go type: the type's own
// OpenAPIModelName when it has one, else kube's rule of reversing the domain
// of the package path ("k8s.io/api/apps/v1.Deployment" →
// "io.k8s.api.apps.v1.Deployment").
func modelName(t reflect.Type) string {
	if name := ownModelName(t); name != "" {
		return name
	}
	path := t.PkgPath()
	if i := strings.LastIndex(path, "/vendor/"); i >= 0 {
		path = path[i+len("/vendor/"):]
	}
	if path == "" {
		return t.Name()
	}
	return util.ToRESTFriendlyName(path + "." + t.Name())
}

// gvPath is the URL prefix of a group version: /api/v1 or /apis/<g>/<v>.
func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// gvKey is the /openapi/v3 index key of a group version: gvPath without
// the leading slash, as client-go's openapi3 root expects.
func gvKey(gv schema.GroupVersion) string {
	return strings.TrimPrefix(gvPath(gv), "/")
}

// groupWords splits an API group into the words kube builds operation ids
// and tags from: "" → [core], "rbac.authorization.k8s.io" →
// [rbac authorization], "example.com" → [example com].
func groupWords(group string) []string {
	if group == "" {
		return []string{"core"}
	}
	group = strings.TrimSuffix(group, ".k8s.io")
	return strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' })
}

// opGroupVersion is the group-version part of an operation id:
// "CoreV1", "AppsV1", "RbacAuthorizationV1".
func opGroupVersion(gv schema.GroupVersion) string {
	var b strings.Builder
	for _, w := range groupWords(gv.Group) {
		b.WriteString(upperFirst(w))
	}
	b.WriteString(upperFirst(gv.Version))
	return b.String()
}

// tag is the operation tag kube uses: "core_v1", "apps_v1",
// "rbacAuthorization_v1".
func tag(gv schema.GroupVersion) string {
	words := groupWords(gv.Group)
	var b strings.Builder
	b.WriteString(words[0])
	for _, w := range words[1:] {
		b.WriteString(upperFirst(w))
	}
	return b.String() + "_" + gv.Version
}

func upperFirst(s string) string {
	for i, r := range s {
		return string(unicode.ToUpper(r)) + s[i+len(string(r)):]
	}
	return s
}

// ownModelName is t's OpenAPIModelName, unless t merely inherits it from
// an embedded field: a struct embedding only metav1.TypeMeta would
// otherwise be named "io.k8s.apimachinery.pkg.runtime.TypeMeta".
func ownModelName(t reflect.Type) string {
	n, ok := reflect.New(t).Interface().(modelNamer)
	if !ok {
		return ""
	}
	name := n.OpenAPIModelName()
	for _, et := range embeddedTypes(t) {
		if en, ok := reflect.New(et).Interface().(modelNamer); ok && en.OpenAPIModelName() == name {
			return ""
		}
	}
	return name
}

// embeddedTypes are the types of t's embedded fields, pointers removed.
// A method of t that returns what the same method of one of these returns
// is taken to be promoted from it.
func embeddedTypes(t reflect.Type) []reflect.Type {
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []reflect.Type
	for i := range t.NumField() {
		if f := t.Field(i); f.Anonymous {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			out = append(out, et)
		}
	}
	return out
}
