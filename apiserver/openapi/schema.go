package openapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Vendor extensions kubectl and the apimachinery libraries read.
const (
	extGVK           = "x-kubernetes-group-version-kind"
	extAction        = "x-kubernetes-action"
	extPatchStrategy = "x-kubernetes-patch-strategy"
	extPatchMergeKey = "x-kubernetes-patch-merge-key"
	extPreserve      = "x-kubernetes-preserve-unknown-fields"
	extIntOrString   = "x-kubernetes-int-or-string"
)

// flavor is the OpenAPI dialect a schema is written for. The two differ in
// where definitions live and in how a $ref carries a description: swagger
// 2.0 puts siblings next to $ref, OpenAPI 3.0 ignores $ref siblings, so kube
// wraps the $ref in a one-element allOf (which kubectl explain, strategic
// merge patch and the structured-merge-diff converter all unwrap).
type flavor int

const (
	flavorV2 flavor = iota
	flavorV3
)

func (f flavor) ref(name string) spec.Ref {
	if f == flavorV3 {
		return spec.MustCreateRef("#/components/schemas/" + name)
	}
	return spec.MustCreateRef("#/definitions/" + name)
}

// Methods the k8s.io/api and apimachinery types carry for their generators.
type (
	// swaggerDocer: key "" is the type's description, the others are json
	// field names.
	swaggerDocer interface {
		SwaggerDoc() map[string]string
	}
	// schemaTyper marks a type that is serialized as a primitive
	// (metav1.Time, resource.Quantity, intstr.IntOrString, ...).
	schemaTyper interface {
		OpenAPISchemaType() []string
		OpenAPISchemaFormat() string
	}
	// oneOfTyper gives the OpenAPI v3 alternatives of such a primitive.
	oneOfTyper interface {
		OpenAPIV3OneOfTypes() []string
	}
)

// generator turns Go types into definitions of one flavor. It is used by
// one goroutine, once.
type generator struct {
	flavor flavor
	// gvks are the x-kubernetes-group-version-kind entries per Go type.
	gvks map[reflect.Type][]schema.GroupVersionKind
	// defs holds every definition made so far, by name.
	defs map[string]*spec.Schema
	// owners records the Go type behind each definition name, to catch two
	// types claiming one name.
	owners map[string]reflect.Type
	errs   []error
}

func newGenerator(f flavor, gvks map[reflect.Type][]schema.GroupVersionKind) *generator {
	return &generator{
		flavor: f,
		gvks:   gvks,
		defs:   map[string]*spec.Schema{},
		owners: map[string]reflect.Type{},
	}
}

// define makes sure the named type t has a definition and returns its name.
func (g *generator) define(t reflect.Type) string {
	name := modelName(t)
	if owner, ok := g.owners[name]; ok {
		if owner != t {
			g.errs = append(g.errs, fmt.Errorf("definition %s is claimed by both %s and %s", name, owner, t))
		}
		return name
	}
	g.owners[name] = t
	// Register before recursing so that recursive types end in a $ref.
	def := &spec.Schema{}
	g.defs[name] = def
	*def = g.definition(t, name)
	return name
}

func (g *generator) definition(t reflect.Type, name string) spec.Schema {
	docs := swaggerDoc(t, name)
	var s spec.Schema
	if st, ok := reflect.New(t).Interface().(schemaTyper); ok {
		s = g.primitive(t, st)
	} else {
		s.Type = []string{"object"}
		g.addFields(&s, t, false)
		s.Required = required(name, t, s.Properties)
	}
	s.Description = docs[""]
	if gvks := g.gvks[t]; len(gvks) > 0 {
		s.AddExtension(extGVK, gvkList(gvks))
	}
	return s
}

// primitive is the definition of a type serialized as a scalar. kube writes
// the v3 alternatives as oneOf without a type, and the v2 form as the
// declared type and format.
func (g *generator) primitive(t reflect.Type, st schemaTyper) spec.Schema {
	var s spec.Schema
	s.Format = st.OpenAPISchemaFormat()
	oneOf, _ := reflect.New(t).Interface().(oneOfTyper)
	if g.flavor == flavorV3 && oneOf != nil && len(oneOf.OpenAPIV3OneOfTypes()) > 0 {
		s.OneOf = common.GenerateOpenAPIV3OneOfSchema(oneOf.OpenAPIV3OneOfTypes())
	} else {
		s.Type = st.OpenAPISchemaType()
	}
	if s.Format == "int-or-string" {
		s.AddExtension(extIntOrString, true)
	}
	return s
}

// addFields adds the json properties of struct t to s, following
// encoding/json: "-" is skipped, embedded structs without a name (and
// ",inline" ones) contribute their fields, and a field of the outer struct
// wins over an inlined one of the same name.
func (g *generator) addFields(s *spec.Schema, t reflect.Type, inlined bool) {
	docs := swaggerDoc(t, modelName(t))
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts := parseJSONTag(f.Tag.Get("json"))
		if name == "-" && opts == "" {
			continue
		}
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				g.addFields(s, et, true)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, exists := s.Properties[name]; exists && inlined {
			continue
		}
		prop, ok := g.schemaOf(f.Type)
		if !ok {
			continue
		}
		if hasOpt(opts, "string") {
			prop = spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}
		}
		ext := spec.Extensions{}
		if v := f.Tag.Get("patchStrategy"); v != "" {
			ext.Add(extPatchStrategy, v)
		}
		if v := f.Tag.Get("patchMergeKey"); v != "" {
			ext.Add(extPatchMergeKey, v)
		}
		s.SetProperty(name, g.decorate(prop, docs[name], ext))
	}
}

// decorate adds a description and extensions to a property schema.
func (g *generator) decorate(s spec.Schema, description string, ext spec.Extensions) spec.Schema {
	if s.Ref.String() != "" && g.flavor == flavorV3 && (description != "" || len(ext) > 0) {
		s = spec.Schema{SchemaProps: spec.SchemaProps{AllOf: []spec.Schema{s}}}
	}
	s.Description = description
	for k, v := range ext {
		s.AddExtension(k, v)
	}
	return s
}

// schemaOf is the schema of a value of type t where it is used: a $ref for
// named structs, an inline schema otherwise. ok is false for types json
// cannot encode (channels, functions, complex numbers).
func (g *generator) schemaOf(t reflect.Type) (spec.Schema, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[json.RawMessage]() || reflect.PointerTo(t).Implements(reflect.TypeFor[runtime.Unstructured]()) {
		return preserveUnknown(), true
	}
	_, primitive := reflect.New(t).Interface().(schemaTyper)
	if t.Name() != "" && (t.Kind() == reflect.Struct || primitive) {
		return spec.Schema{SchemaProps: spec.SchemaProps{Ref: g.flavor.ref(g.define(t))}}, true
	}
	switch t.Kind() {
	case reflect.Struct:
		s := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}}}
		g.addFields(&s, t, false)
		return s, true
	case reflect.Interface:
		return preserveUnknown(), true
	case reflect.Slice, reflect.Array:
		// encoding/json writes []byte as base64, but [N]byte as numbers.
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return typed("string", "byte"), true
		}
		items, ok := g.schemaOf(t.Elem())
		if !ok {
			return spec.Schema{}, false
		}
		return *spec.ArrayProperty(&items), true
	case reflect.Map:
		values, ok := g.schemaOf(t.Elem())
		if !ok {
			return spec.Schema{}, false
		}
		return *spec.MapProperty(&values), true
	}
	typ, format := common.OpenAPITypeFormat(t.Kind().String())
	if typ == "" || typ == "object" {
		return spec.Schema{}, false
	}
	return typed(typ, format), true
}

func typed(typ, format string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{typ}, Format: format}}
}

// preserveUnknown is the schema of free-form JSON.
func preserveUnknown() spec.Schema {
	s := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}}}
	s.AddExtension(extPreserve, true)
	return s
}

func parseJSONTag(tag string) (name, opts string) {
	name, opts, _ = strings.Cut(tag, ",")
	return name, opts
}

func hasOpt(opts, opt string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

// gvkList is the value of x-kubernetes-group-version-kind on a definition:
// a list, in the JSON shape kubectl compares against (group, kind, version).
func gvkList(gvks []schema.GroupVersionKind) []any {
	sorted := append([]schema.GroupVersionKind(nil), gvks...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].String() < sorted[j].String() })
	out := make([]any, 0, len(sorted))
	for _, gvk := range sorted {
		out = append(out, gvkObject(gvk))
	}
	return out
}

// gvkObject is the value of x-kubernetes-group-version-kind on an
// operation: a single object.
func gvkObject(gvk schema.GroupVersionKind) map[string]any {
	return map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

// swaggerDoc returns the type's own SwaggerDoc (not one promoted from an
// embedded field), or a description of our own for the few apimachinery
// types that have none.
func swaggerDoc(t reflect.Type, name string) map[string]string {
	if d, ok := reflect.New(t).Interface().(swaggerDocer); ok {
		docs := d.SwaggerDoc()
		promoted := false
		for _, et := range embeddedTypes(t) {
			if ed, ok := reflect.New(et).Interface().(swaggerDocer); ok && reflect.DeepEqual(ed.SwaggerDoc(), docs) {
				promoted = true
			}
		}
		if !promoted {
			return docs
		}
	}
	return fallbackDocs(name)
}

func fallbackDocs(name string) map[string]string {
	switch name {
	case "io.k8s.apimachinery.pkg.apis.meta.v1.Time":
		return map[string]string{"": "Time is a timestamp in RFC 3339 form with second precision, e.g. \"2006-01-02T15:04:05Z\"."}
	case "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime":
		return map[string]string{"": "MicroTime is a timestamp in RFC 3339 form with microsecond precision, e.g. \"2006-01-02T15:04:05.000000Z\"."}
	case "io.k8s.apimachinery.pkg.apis.meta.v1.Duration":
		return map[string]string{"": "Duration is a length of time written the way Go's time.ParseDuration reads it, e.g. \"1h30m\"."}
	case "io.k8s.apimachinery.pkg.api.resource.Quantity":
		return map[string]string{"": "Quantity is a fixed-point number with an optional suffix, written as a string: a binary SI suffix (Ki, Mi, Gi, Ti, Pi, Ei), a decimal SI suffix (n, u, m, \"\", k, M, G, T, P, E) or a decimal exponent (e3, E6). Examples: \"100m\", \"1.5Gi\", \"2\"."}
	case "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
		return map[string]string{"": "IntOrString holds either an integer or a string, e.g. a port number or a port name, and is written as the one it holds."}
	case "io.k8s.apimachinery.pkg.runtime.RawExtension":
		return map[string]string{"": "RawExtension holds an embedded object of any kind, with its own apiVersion and kind."}
	case "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent":
		return map[string]string{
			"":       "Event represents a single event to a watched resource.",
			"type":   "Type is the kind of change: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.",
			"object": "Object is the object as it is after the change, or for ERROR a Status, or for BOOKMARK an object of the watched kind carrying only its resourceVersion.",
		}
	}
	return nil
}

// required lists the properties kube marks required. kube derives them from
// +required/+optional markers that do not survive compilation, so this is a
// table of the well-known ones, plus "items" of every list kind. Leaving a
// field out only loses kubectl explain's "-required-" marker; listing one
// wrongly would make client-side validation reject valid objects, so the
// table errs on the side of listing less.
func required(name string, t reflect.Type, props map[string]spec.Schema) []string {
	var out []string
	for _, p := range knownRequired(name) {
		if _, ok := props[p]; ok {
			out = append(out, p)
		}
	}
	if _, ok := props["items"]; ok && hasField(t, reflect.TypeFor[metav1.ListMeta]()) {
		out = append(out, "items")
	}
	return out
}

func hasField(t reflect.Type, ft reflect.Type) bool {
	for i := range t.NumField() {
		if t.Field(i).Type == ft {
			return true
		}
	}
	return false
}

func knownRequired(name string) []string {
	const (
		core = "io.k8s.api.core.v1."
		apps = "io.k8s.api.apps.v1."
		rbac = "io.k8s.api.rbac.v1."
		meta = "io.k8s.apimachinery.pkg.apis.meta.v1."
	)
	switch name {
	case core + "PodSpec":
		return []string{"containers"}
	case core + "Container", core + "EphemeralContainer", core + "EnvVar", core + "Volume",
		core + "PodResourceClaim", core + "PodSchedulingGate", core + "ResourceClaim":
		return []string{"name"}
	case core + "ContainerPort":
		return []string{"containerPort"}
	case core + "VolumeMount":
		return []string{"name", "mountPath"}
	case core + "KeyToPath":
		return []string{"key", "path"}
	case core + "ConfigMapKeySelector", core + "SecretKeySelector":
		return []string{"key"}
	case core + "ObjectFieldSelector":
		return []string{"fieldPath"}
	case core + "ResourceFieldSelector":
		return []string{"resource"}
	case core + "HTTPGetAction", core + "TCPSocketAction", core + "GRPCAction", core + "ServicePort":
		return []string{"port"}
	case core + "HTTPHeader", core + "Sysctl":
		return []string{"name", "value"}
	case core + "PodCondition", core + "NamespaceCondition", core + "NodeCondition",
		apps + "DeploymentCondition", apps + "ReplicaSetCondition", apps + "StatefulSetCondition", apps + "DaemonSetCondition":
		return []string{"type", "status"}
	case core + "ContainerStatus":
		return []string{"name", "ready", "restartCount", "image", "imageID"}
	case core + "NodeSelector":
		return []string{"nodeSelectorTerms"}
	case core + "NodeSelectorRequirement", meta + "LabelSelectorRequirement":
		return []string{"key", "operator"}
	case core + "Taint":
		return []string{"key", "effect"}
	case core + "NodeAddress":
		return []string{"type", "address"}
	case core + "HostPathVolumeSource", core + "ServiceAccountTokenProjection":
		return []string{"path"}
	case core + "PersistentVolumeClaimVolumeSource":
		return []string{"claimName"}
	case core + "PodAffinityTerm":
		return []string{"topologyKey"}
	case core + "WeightedPodAffinityTerm":
		return []string{"weight", "podAffinityTerm"}
	case core + "PreferredSchedulingTerm":
		return []string{"weight", "preference"}
	case core + "TopologySpreadConstraint":
		return []string{"maxSkew", "topologyKey", "whenUnsatisfiable"}
	case core + "ContainerStateTerminated":
		return []string{"exitCode"}
	case core + "Binding":
		return []string{"target"}
	case apps + "DeploymentSpec", apps + "StatefulSetSpec", apps + "DaemonSetSpec":
		return []string{"selector", "template"}
	case apps + "ReplicaSetSpec":
		return []string{"selector"}
	case rbac + "RoleBinding", rbac + "ClusterRoleBinding":
		return []string{"roleRef"}
	case rbac + "RoleRef":
		return []string{"apiGroup", "kind", "name"}
	case rbac + "Subject":
		return []string{"kind", "name"}
	case rbac + "PolicyRule":
		return []string{"verbs"}
	case meta + "OwnerReference":
		return []string{"apiVersion", "kind", "name", "uid"}
	case meta + "Condition":
		return []string{"type", "status", "lastTransitionTime", "reason", "message"}
	case meta + "WatchEvent":
		return []string{"type", "object"}
	}
	return nil
}
