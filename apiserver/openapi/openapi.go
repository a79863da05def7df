package openapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Resource describes one served REST resource.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string // e.g. "Deployment"
	ListKind   string // e.g. "DeploymentList"; needed with list, watch or deletecollection
	Namespaced bool
	// Verbs is a subset of get, list, watch, create, update, patch, delete,
	// deletecollection.
	Verbs []string
	// Object is a zero typed object, e.g. &appsv1.Deployment{}.
	Object runtime.Object
	// List is a zero typed list, e.g. &appsv1.DeploymentList{}; needed with
	// list, watch or deletecollection.
	List         runtime.Object
	Subresources []Subresource
}

// Subresource is a subresource of a Resource, served at
// <item path>/<Name>.
type Subresource struct {
	Name string
	// Object is what the subresource reads and writes: the parent's object
	// for status, &autoscalingv1.Scale{} for scale. Its kind is the
	// parent's when it is the parent's type, else its TypeMeta's when set,
	// else the one client-go's scheme registers for the type.
	Object runtime.Object
	// Verbs is a subset of get, update, patch, create.
	Verbs []string
}

// Builder holds the OpenAPI documents of a set of resources. New makes them
// once; they are immutable afterwards and safe for concurrent use.
type Builder struct {
	v2      document
	v2Proto []byte // v2 as a gnostic openapi_v2.Document in protobuf
	v3Index document
	v3      map[string]document // by index key, e.g. "apis/apps/v1"
	// defsV3 are the definitions of the v3 documents, for TypeConverter;
	// never modified after New.
	defsV3 map[string]*spec.Schema
}

type document struct {
	json []byte
	hash string
}

// New builds the OpenAPI v2 document and the per-group-version v3
// documents of resources. title and version fill the documents' info
// (kube: "Kubernetes", "v1.32.0"). It fails if a resource is incomplete or
// inconsistent, listing every problem.
func New(resources []Resource, title, version string) (*Builder, error) {
	var problems []error
	if title == "" {
		problems = append(problems, errors.New("title is empty"))
	}
	if version == "" {
		problems = append(problems, errors.New("version is empty"))
	}
	rs, err := resolve(resources)
	problems = append(problems, err)
	if err := errors.Join(problems...); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	gvks, err := typeGVKs(rs)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}

	var routes []route
	for i := range rs {
		routes = append(routes, resourceRoutes(&rs[i])...)
	}

	defsV2, err := definitions(flavorV2, rs, gvks)
	if err != nil {
		return nil, fmt.Errorf("openapi: v2 definitions: %w", err)
	}
	defsV3, err := definitions(flavorV3, rs, gvks)
	if err != nil {
		return nil, fmt.Errorf("openapi: v3 definitions: %w", err)
	}

	b := &Builder{v3: map[string]document{}, defsV3: defsV3}
	v2, err := renderV2(routes, defsV2, title, version)
	if err != nil {
		return nil, fmt.Errorf("openapi: encode v2: %w", err)
	}
	b.v2 = document{json: v2, hash: docHash(v2)}
	if b.v2Proto, err = toProtobuf(v2); err != nil {
		return nil, fmt.Errorf("openapi: encode v2 as protobuf: %w", err)
	}

	byGV := map[schema.GroupVersion][]route{}
	for _, rt := range routes {
		byGV[rt.gv] = append(byGV[rt.gv], rt)
	}
	index := handler3.OpenAPIV3Discovery{Paths: map[string]handler3.OpenAPIV3DiscoveryGroupVersion{}}
	for gv, gvRoutes := range byGV {
		doc, err := renderV3(gvRoutes, defsV3, title, version)
		if err != nil {
			return nil, fmt.Errorf("openapi: encode v3 %s: %w", gv, err)
		}
		// kubectl caches documents by URL, so the hash must change with the
		// document.
		hash := docHash(doc)
		key := gvKey(gv)
		b.v3[key] = document{json: doc, hash: hash}
		index.Paths[key] = handler3.OpenAPIV3DiscoveryGroupVersion{ServerRelativeURL: "/openapi/v3/" + key + "?hash=" + hash}
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return nil, fmt.Errorf("openapi: encode v3 index: %w", err)
	}
	b.v3Index = document{json: indexJSON, hash: docHash(indexJSON)}
	return b, nil
}

// TypeConverter returns the structured-merge-diff converter server-side
// apply needs, for every kind the documents define, built from their
// definitions as kube-apiserver builds its own from its OpenAPI. It knows
// kinds client-go's embedded schema lacks, such as the autoscaling/v1
// Scale of the scale subresources. Building it takes a while: do it once.
func (b *Builder) TypeConverter() (managedfields.TypeConverter, error) {
	tc, err := managedfields.NewTypeConverter(b.defsV3, false)
	if err != nil {
		return nil, fmt.Errorf("openapi: type converter: %w", err)
	}
	return tc, nil
}

// V2 returns the swagger 2.0 document, as JSON, for /openapi/v2. The
// returned slice is the caller's.
func (b *Builder) V2() []byte {
	return bytes.Clone(b.v2.json)
}

// V2Protobuf returns the swagger 2.0 document as kube-apiserver serves it
// to kubectl, which asks for
// application/com.github.proto-openapi.spec.v2@v1.0+protobuf: V2 parsed
// into a gnostic openapi_v2.Document and marshalled as protobuf. The
// returned slice is the caller's.
func (b *Builder) V2Protobuf() []byte {
	return bytes.Clone(b.v2Proto)
}

// V2Hash is kube-apiserver's ETag of /openapi/v2, unquoted: the hash of the
// JSON document, which the protobuf one shares.
func (b *Builder) V2Hash() string {
	return b.v2.hash
}

// docHash is kube-openapi's hash of a document, for ETags and the v3 index:
// the uppercase hex SHA-512 of its bytes.
func docHash(doc []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(doc))
}

// toProtobuf converts a swagger 2.0 JSON document to protobuf as
// kube-openapi's handler does.
func toProtobuf(doc []byte) ([]byte, error) {
	parsed, err := openapi_v2.ParseDocument(doc)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(parsed)
}

// V3Index returns the /openapi/v3 index: {"paths": {"api/v1":
// {"serverRelativeURL": "/openapi/v3/api/v1?hash=<HASH>"}, ...}}, HASH being
// the uppercase hex SHA-512 of that document. The returned slice is the
// caller's.
func (b *Builder) V3Index() []byte {
	return bytes.Clone(b.v3Index.json)
}

// V3IndexHash is the hash of V3Index, kube-apiserver's ETag of /openapi/v3.
func (b *Builder) V3IndexHash() string {
	return b.v3Index.hash
}

// V3 returns the OpenAPI 3.0 document of one group version, addressed as in
// the index ("api/v1", "apis/apps/v1"; a leading slash is ignored), and its
// hash. ok is false if the group version is not served. The returned slice
// is the caller's.
func (b *Builder) V3(path string) (doc []byte, hash string, ok bool) {
	d, ok := b.v3[strings.TrimPrefix(path, "/")]
	if !ok {
		return nil, "", false
	}
	return bytes.Clone(d.json), d.hash, true
}

// resolved is a validated Resource with what the documents need of it.
type resolved struct {
	Resource
	verbs                  map[string]bool
	objectType, listType   reflect.Type // listType is nil without a List
	objectModel, listModel string
	subresources           []resolvedSub
}

type resolvedSub struct {
	Subresource
	objectType reflect.Type
	gvk        schema.GroupVersionKind
	model      string
}

func resourceVerbs() []string {
	return []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
}

func subresourceVerbs() []string {
	return []string{"get", "update", "patch", "create"}
}

// resolve validates resources and looks up their types, models and the
// kinds of their subresources.
func resolve(resources []Resource) ([]resolved, error) {
	var errs []error
	seen := map[schema.GroupVersionResource]bool{}
	out := make([]resolved, 0, len(resources))
	for _, r := range resources {
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("resource %q: %s", r.GVR.String(), fmt.Sprintf(format, args...)))
		}
		res := resolved{Resource: r}
		if r.GVR.Version == "" || r.GVR.Resource == "" || strings.Contains(r.GVR.Resource, "/") {
			fail("needs a version and a resource name without a slash")
		}
		if seen[r.GVR] {
			fail("is listed twice")
		}
		seen[r.GVR] = true
		if r.Kind == "" {
			fail("kind is empty")
		}
		var err error
		if res.verbs, err = verbSet(r.Verbs, resourceVerbs()); err != nil {
			fail("%v", err)
		}
		if res.objectType, err = structType(r.Object); err != nil {
			fail("object %v", err)
		} else {
			res.objectModel = modelName(res.objectType)
		}
		if res.verbs["list"] || res.verbs["watch"] || res.verbs["deletecollection"] || r.List != nil {
			if r.ListKind == "" {
				fail("list kind is empty")
			}
			if res.listType, err = structType(r.List); err != nil {
				fail("list %v", err)
			} else {
				res.listModel = modelName(res.listType)
			}
		}
		parent := r.GVR.GroupVersion().WithKind(r.Kind)
		names := map[string]bool{}
		for _, sub := range r.Subresources {
			rs := resolvedSub{Subresource: sub}
			if sub.Name == "" || strings.Contains(sub.Name, "/") || names[sub.Name] {
				fail("subresource %q: needs a unique name without a slash", sub.Name)
			}
			names[sub.Name] = true
			if _, err := verbSet(sub.Verbs, subresourceVerbs()); err != nil {
				fail("subresource %q: %v", sub.Name, err)
			}
			if rs.objectType, err = structType(sub.Object); err != nil {
				fail("subresource %q: object %v", sub.Name, err)
				continue
			}
			rs.model = modelName(rs.objectType)
			if rs.objectType == res.objectType {
				rs.gvk = parent
			} else if rs.gvk, err = kindOf(sub.Object, parent.GroupVersion()); err != nil {
				fail("subresource %q: %v", sub.Name, err)
			}
			res.subresources = append(res.subresources, rs)
		}
		out = append(out, res)
	}
	return out, errors.Join(errs...)
}

func verbSet(verbs, allowed []string) (map[string]bool, error) {
	set := map[string]bool{}
	var unknown []string
	for _, v := range verbs {
		if !slices.Contains(allowed, v) {
			unknown = append(unknown, v)
		}
		set[v] = true
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown verbs %q (allowed: %q)", unknown, allowed)
	}
	return set, nil
}

func structType(obj runtime.Object) (reflect.Type, error) {
	if obj == nil {
		return nil, errors.New("is nil")
	}
	t := reflect.TypeOf(obj)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("is a %s, not a pointer to a struct", t)
	}
	if reflect.ValueOf(obj).IsNil() {
		return nil, fmt.Errorf("is a nil %s", t)
	}
	return t.Elem(), nil
}

// kindOf finds the kind of a subresource's object: from its TypeMeta, else
// from client-go's scheme of the built-in types, preferring the parent's
// group version when the type is registered under several.
func kindOf(obj runtime.Object, parent schema.GroupVersion) (schema.GroupVersionKind, error) {
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" && gvk.Version != "" {
		return gvk, nil
	}
	gvks, _, err := clientgoscheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of %T is unknown: set its apiVersion and kind", obj)
	}
	sort.Slice(gvks, func(i, j int) bool { return gvks[i].String() < gvks[j].String() })
	for _, gvk := range gvks {
		if gvk.GroupVersion() == parent {
			return gvk, nil
		}
	}
	return gvks[0], nil
}

// typeGVKs gives each Go type the kinds it is served as, for the
// x-kubernetes-group-version-kind of its definition, and checks that no
// kind is served as two types (kubectl would pick either).
func typeGVKs(rs []resolved) (map[reflect.Type][]schema.GroupVersionKind, error) {
	out := map[reflect.Type][]schema.GroupVersionKind{}
	owner := map[schema.GroupVersionKind]reflect.Type{}
	var errs []error
	add := func(t reflect.Type, gvk schema.GroupVersionKind) {
		if o, ok := owner[gvk]; ok {
			if o != t {
				errs = append(errs, fmt.Errorf("kind %s is served as both %s and %s", gvk, o, t))
			}
			return
		}
		owner[gvk] = t
		out[t] = append(out[t], gvk)
	}
	gvs := map[schema.GroupVersion]bool{{Version: "v1"}: true}
	for _, r := range rs {
		gv := r.GVR.GroupVersion()
		gvs[gv] = true
		add(r.objectType, gv.WithKind(r.Kind))
		if r.listType != nil {
			add(r.listType, gv.WithKind(r.ListKind))
		}
		for _, sub := range r.subresources {
			add(sub.objectType, sub.gvk)
		}
	}
	// As in kube: Status is core/v1's; DeleteOptions and WatchEvent are
	// every group version's.
	add(reflect.TypeFor[metav1.Status](), schema.GroupVersionKind{Version: "v1", Kind: "Status"})
	for gv := range gvs {
		add(reflect.TypeFor[metav1.DeleteOptions](), gv.WithKind("DeleteOptions"))
		add(reflect.TypeFor[metav1.WatchEvent](), gv.WithKind("WatchEvent"))
	}
	return out, errors.Join(errs...)
}

// definitions generates the definitions of every type the resources'
// operations use, in one flavor.
func definitions(f flavor, rs []resolved, gvks map[reflect.Type][]schema.GroupVersionKind) (map[string]*spec.Schema, error) {
	g := newGenerator(f, gvks)
	for _, r := range rs {
		g.define(r.objectType)
		if r.listType != nil {
			g.define(r.listType)
		}
		for _, sub := range r.subresources {
			g.define(sub.objectType)
		}
	}
	for _, t := range []reflect.Type{
		reflect.TypeFor[metav1.Status](),
		reflect.TypeFor[metav1.DeleteOptions](),
		reflect.TypeFor[metav1.WatchEvent](),
		reflect.TypeFor[metav1.Patch](),
	} {
		g.define(t)
	}
	return g.defs, errors.Join(g.errs...)
}
