package openapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/discovery"
	clientopenapi "k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/spec3"
	openapiproto "k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// testResources is a realistic served set: the core kinds kubectl's
// file-based commands touch, deployments with status and scale, and RBAC.
func testResources() []Resource {
	statusVerbs := []string{"get", "update", "patch"}
	return []Resource{
		{
			GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", ListKind: "PodList", Namespaced: true,
			Verbs: allVerbs, Object: &corev1.Pod{}, List: &corev1.PodList{},
			Subresources: []Subresource{
				{Name: "status", Object: &corev1.Pod{}, Verbs: statusVerbs},
				{Name: "binding", Object: &corev1.Binding{}, Verbs: []string{"create"}},
				{Name: "eviction", Object: &policyv1.Eviction{}, Verbs: []string{"create"}},
			},
		},
		{
			GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", ListKind: "ConfigMapList", Namespaced: true,
			Verbs: allVerbs, Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{},
		},
		{
			GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret", ListKind: "SecretList", Namespaced: true,
			Verbs: allVerbs, Object: &corev1.Secret{}, List: &corev1.SecretList{},
		},
		{
			GVR: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace", ListKind: "NamespaceList",
			Verbs:  []string{"get", "list", "watch", "create", "update", "patch", "delete"},
			Object: &corev1.Namespace{}, List: &corev1.NamespaceList{},
			Subresources: []Subresource{
				{Name: "status", Object: &corev1.Namespace{}, Verbs: statusVerbs},
				{Name: "finalize", Object: &corev1.Namespace{}, Verbs: []string{"update"}},
			},
		},
		{
			GVR: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment", ListKind: "DeploymentList", Namespaced: true,
			Verbs: allVerbs, Object: &appsv1.Deployment{}, List: &appsv1.DeploymentList{},
			Subresources: []Subresource{
				{Name: "status", Object: &appsv1.Deployment{}, Verbs: statusVerbs},
				{Name: "scale", Object: &autoscalingv1.Scale{}, Verbs: statusVerbs},
			},
		},
		{
			GVR: rbacv1.SchemeGroupVersion.WithResource("roles"), Kind: "Role", ListKind: "RoleList", Namespaced: true,
			Verbs: allVerbs, Object: &rbacv1.Role{}, List: &rbacv1.RoleList{},
		},
		{
			GVR: rbacv1.SchemeGroupVersion.WithResource("rolebindings"), Kind: "RoleBinding", ListKind: "RoleBindingList", Namespaced: true,
			Verbs: allVerbs, Object: &rbacv1.RoleBinding{}, List: &rbacv1.RoleBindingList{},
		},
		{
			GVR: rbacv1.SchemeGroupVersion.WithResource("clusterroles"), Kind: "ClusterRole", ListKind: "ClusterRoleList",
			Verbs: allVerbs, Object: &rbacv1.ClusterRole{}, List: &rbacv1.ClusterRoleList{},
		},
	}
}

func newTestBuilder(t *testing.T, resources []Resource) *Builder {
	t.Helper()
	b, err := New(resources, "Kubernetes", "v1.32.0")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// serve is a test-only /openapi server over a Builder, shaped like
// kube-apiserver's: v2 as JSON or, when asked, protobuf, and the v3 index
// and documents.
func serve(t *testing.T, b *Builder) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi/v2", func(w http.ResponseWriter, r *http.Request) {
		doc := b.V2()
		if strings.Contains(r.Header.Get("Accept"), "protobuf") {
			doc = b.V2Protobuf()
			w.Header().Set("Content-Type", "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		_, _ = w.Write(doc)
	})
	mux.HandleFunc("GET /openapi/v3", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b.V3Index())
	})
	mux.HandleFunc("GET /openapi/v3/{path...}", func(w http.ResponseWriter, r *http.Request) {
		doc, hash, ok := b.V3(r.PathValue("path"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		if got := r.URL.Query().Get("hash"); got != hash {
			t.Errorf("GET %s: hash %q, the index says %q", r.URL.Path, got, hash)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// discoveryClient is the client kubectl builds its OpenAPI clients from.
func discoveryClient(t *testing.T, b *Builder) *discovery.DiscoveryClient {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: serve(t, b).URL})
	if err != nil {
		t.Fatalf("discovery client: %v", err)
	}
	return dc
}

var testGVs = []schema.GroupVersion{
	corev1.SchemeGroupVersion,
	appsv1.SchemeGroupVersion,
	rbacv1.SchemeGroupVersion,
}

// checkRefs fails for every $ref in doc that does not name a definition
// under prefix, and returns how many refs it checked.
func checkRefs(t *testing.T, name string, doc map[string]any, prefix string, defs map[string]any) int {
	t.Helper()
	n := 0
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				n++
				target, found := strings.CutPrefix(ref, prefix)
				if _, ok := defs[target]; !found || !ok {
					t.Errorf("%s: %s: $ref %q does not resolve", name, at, ref)
				}
			}
			for k, c := range v {
				walk(at+"/"+k, c)
			}
		case []any:
			for i, c := range v {
				walk(fmt.Sprintf("%s/%d", at, i), c)
			}
		}
	}
	walk("#", doc)
	return n
}

func TestV2(t *testing.T) {
	b := newTestBuilder(t, testResources())

	var sw spec.Swagger
	if err := json.Unmarshal(b.V2(), &sw); err != nil {
		t.Fatalf("v2 does not unmarshal into spec.Swagger: %v", err)
	}
	if sw.Swagger != "2.0" || sw.Info.Title != "Kubernetes" || sw.Info.Version != "v1.32.0" {
		t.Errorf("swagger %q, info %+v", sw.Swagger, sw.Info.InfoProps)
	}
	var raw map[string]any
	if err := json.Unmarshal(b.V2(), &raw); err != nil {
		t.Fatal(err)
	}
	if n := checkRefs(t, "v2", raw, "#/definitions/", raw["definitions"].(map[string]any)); n < 100 {
		t.Errorf("only %d $refs in v2", n)
	}

	// kubectl reads v2 as protobuf into gnostic and then kube-openapi's
	// proto models (client-side validation, v2 strategic merge patch).
	doc, err := discoveryClient(t, b).OpenAPISchema()
	if err != nil {
		t.Fatalf("OpenAPISchema: %v", err)
	}
	models, err := openapiproto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("NewOpenAPIData: %v", err)
	}
	podSpec, ok := models.LookupModel("io.k8s.api.core.v1.PodSpec").(*openapiproto.Kind)
	if !ok {
		t.Fatalf("PodSpec is %T, want *proto.Kind", models.LookupModel("io.k8s.api.core.v1.PodSpec"))
	}
	if !podSpec.IsRequired("containers") {
		t.Errorf("PodSpec.containers is not required")
	}
	containers, ok := podSpec.Fields["containers"].(*openapiproto.Array)
	if !ok {
		t.Fatalf("PodSpec.containers is %T, want *proto.Array", podSpec.Fields["containers"])
	}
	if ref, ok := containers.SubType.(openapiproto.Reference); !ok || ref.Reference() != "io.k8s.api.core.v1.Container" {
		t.Errorf("PodSpec.containers items = %v, want a reference to Container", containers.SubType)
	}
	if got := containers.GetExtensions()[extPatchMergeKey]; got != "name" {
		t.Errorf("PodSpec.containers patch merge key = %v, want name", got)
	}

	// The deployment's PATCH advertises strategic merge patch (v2's
	// "consumes", kubectl's GetConsumes).
	patch := sw.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"].Patch
	if patch == nil || !slices.Contains(patch.Consumes, "application/strategic-merge-patch+json") {
		t.Fatalf("v2 deployment PATCH consumes %v", patch)
	}
}

func TestV3ThroughClientGo(t *testing.T) {
	b := newTestBuilder(t, testResources())
	client := discoveryClient(t, b).OpenAPIV3()

	paths, err := client.Paths()
	if err != nil {
		t.Fatalf("Paths: %v", err)
	}
	var keys []string
	for k := range paths {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"api/v1", "apis/apps/v1", "apis/rbac.authorization.k8s.io/v1"}; !slices.Equal(keys, want) {
		t.Fatalf("index keys = %v, want %v", keys, want)
	}

	root := openapi3.NewRoot(client)
	for _, gv := range testGVs {
		doc, err := root.GVSpec(gv)
		if err != nil {
			t.Fatalf("GVSpec(%s): %v", gv, err)
		}
		if doc.Version != "3.0.0" || len(doc.Paths.Paths) == 0 || len(doc.Components.Schemas) == 0 {
			t.Errorf("%s: openapi %q, %d paths, %d schemas", gv, doc.Version, len(doc.Paths.Paths), len(doc.Components.Schemas))
		}
		prefix := gvPath(gv) + "/"
		for p := range doc.Paths.Paths {
			if !strings.HasPrefix(p, prefix) {
				t.Errorf("%s document has path %s of another group version", gv, p)
			}
		}

		raw, err := root.GVSpecAsMap(gv)
		if err != nil {
			t.Fatal(err)
		}
		schemas := raw["components"].(map[string]any)["schemas"].(map[string]any)
		if n := checkRefs(t, gv.String(), raw, "#/components/schemas/", schemas); n < 50 {
			t.Errorf("%s: only %d $refs", gv, n)
		}

		// kube-openapi's v3 proto models parse it too.
		bytes, _, _ := b.V3(gvKey(gv))
		gdoc, err := openapi_v3.ParseDocument(bytes)
		if err != nil {
			t.Fatalf("gnostic v3 %s: %v", gv, err)
		}
		if _, err := openapiproto.NewOpenAPIV3Data(gdoc); err != nil {
			t.Errorf("NewOpenAPIV3Data(%s): %v", gv, err)
		}
	}

	// A document holds only the schemas its paths reach: rbac has no Pod.
	rbac, _ := root.GVSpec(rbacv1.SchemeGroupVersion)
	if _, ok := rbac.Components.Schemas["io.k8s.api.core.v1.Pod"]; ok {
		t.Errorf("rbac document carries io.k8s.api.core.v1.Pod")
	}
	if _, ok := rbac.Components.Schemas["io.k8s.api.rbac.v1.PolicyRule"]; !ok {
		t.Errorf("rbac document lacks io.k8s.api.rbac.v1.PolicyRule")
	}
}

// TestTypeConverter builds the structured-merge-diff converter server-side
// apply uses from the v3 schemas, through client-go, and converts real
// objects with it: any field the schemas miss or mistype fails here.
func TestTypeConverter(t *testing.T) {
	b := newTestBuilder(t, testResources())
	tc, err := clientopenapi.NewTypeConverter(discoveryClient(t, b).OpenAPIV3(), false)
	if err != nil {
		t.Fatalf("NewTypeConverter: %v", err)
	}
	objects := []runtime.Object{
		testDeployment(),
		testPod(),
		&corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"},
			Data:       map[string][]byte{"password": []byte("hunter2")},
			Type:       corev1.SecretTypeOpaque,
		},
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default", Labels: map[string]string{"a": "b"}},
			Data:       map[string]string{"k": "v"},
		},
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: "rb", Namespace: "default"},
			Subjects:   []rbacv1.Subject{{Kind: "User", Name: "alice"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "r"},
		},
		&autoscalingv1.Scale{
			TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
			Spec:     autoscalingv1.ScaleSpec{Replicas: 3},
			Status:   autoscalingv1.ScaleStatus{Replicas: 2, Selector: "app=web"},
		},
	}
	for _, obj := range objects {
		gvk := obj.GetObjectKind().GroupVersionKind()
		typed, err := tc.ObjectToTyped(obj)
		if err != nil {
			t.Errorf("ObjectToTyped(%s): %v", gvk, err)
			continue
		}
		if _, err := tc.TypedToObject(typed); err != nil {
			t.Errorf("TypedToObject(%s): %v", gvk, err)
		}
	}
}

// The Builder's own converter, for the server's field managers, reads the
// same definitions: the kinds convert, and a field a kind lacks is refused
// as the converter kube-apiserver builds from its OpenAPI refuses it.
func TestBuilderTypeConverter(t *testing.T) {
	tc, err := newTestBuilder(t, testResources()).TypeConverter()
	if err != nil {
		t.Fatalf("TypeConverter: %v", err)
	}
	scale := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "autoscaling/v1", "kind": "Scale",
			"metadata": map[string]any{"name": "web", "labels": map[string]any{"a": "b"}},
			"spec":     spec,
		}}
	}
	tests := []struct {
		name    string
		obj     runtime.Object
		wantErr string
	}{
		{"typed Deployment", testDeployment(), ""},
		{"typed Scale", &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}, ""},
		{"applied Scale", scale(map[string]any{"replicas": int64(3)}), ""},
		{"unknown field", scale(map[string]any{"replicas": int64(3), "bogus": int64(1)}), `.spec.bogus: field not declared in schema`},
		{"wrong type", scale(map[string]any{"replicas": "three"}), `.spec.replicas: expected numeric (int or float), got string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tc.ObjectToTyped(tt.obj)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("ObjectToTyped: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("ObjectToTyped: %v, want an error with %q", err, tt.wantErr)
			}
		})
	}
}

func testDeployment() *appsv1.Deployment {
	replicas := int32(2)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge:       &intstr.IntOrString{Type: intstr.String, StrVal: "25%"},
					MaxUnavailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 1},
				},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       testPod().Spec,
			},
		},
	}
}

func testPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", CreationTimestamp: metav1.Unix(1700000000, 0)},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "nginx",
				Image: "nginx:1.27",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				Env:   []corev1.EnvVar{{Name: "MODE", Value: "prod"}},
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")},
				}},
				VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}},
			}},
			Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}},
			}}},
			Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: metav1.Unix(1700000001, 0).Time}},
	}
}

// gvkIn reports whether the x-kubernetes-group-version-kind extension (a
// list on definitions) names gvk.
func gvkIn(ext spec.Extensions, gvk schema.GroupVersionKind) bool {
	var list []map[string]string
	if err := ext.GetObject(extGVK, &list); err != nil {
		return false
	}
	for _, e := range list {
		if e["group"] == gvk.Group && e["version"] == gvk.Version && e["kind"] == gvk.Kind {
			return true
		}
	}
	return false
}

// gvkIs reports whether the x-kubernetes-group-version-kind extension (an
// object on operations) is gvk.
func gvkIs(ext spec.Extensions, gvk schema.GroupVersionKind) bool {
	var e map[string]string
	if err := ext.GetObject(extGVK, &e); err != nil {
		return false
	}
	return e["group"] == gvk.Group && e["version"] == gvk.Version && e["kind"] == gvk.Kind
}

// TestKubectlV3Decisions replays how kubectl reads a GV document to decide
// on server-side field validation (cli-runtime's query param verifier) and
// on a schema-based strategic merge patch (apply's patcher): every PATCH of
// a kind must carry fieldValidation and the strategic merge patch body.
func TestKubectlV3Decisions(t *testing.T) {
	b := newTestBuilder(t, testResources())
	root := openapi3.NewRoot(discoveryClient(t, b).OpenAPIV3())
	for _, r := range testResources() {
		gv := r.GVR.GroupVersion()
		doc, err := root.GVSpec(gv)
		if err != nil {
			t.Fatal(err)
		}
		gvk := gv.WithKind(r.Kind)
		patches := 0
		for path, item := range doc.Paths.Paths {
			op := item.Patch
			if op == nil || !gvkIs(op.Extensions, gvk) {
				continue
			}
			patches++
			if !slices.ContainsFunc(op.Parameters, func(p *spec3.Parameter) bool { return p.Name == "fieldValidation" }) {
				t.Errorf("PATCH %s (%s) lacks the fieldValidation parameter", path, gvk)
			}
			if op.RequestBody == nil || op.RequestBody.Content["application/strategic-merge-patch+json"] == nil {
				t.Errorf("PATCH %s (%s) lacks a strategic-merge-patch request body", path, gvk)
			}
		}
		if patches == 0 {
			t.Errorf("no PATCH operation for %s", gvk)
		}
		defs := 0
		for _, s := range doc.Components.Schemas {
			if gvkIn(s.Extensions, gvk) {
				defs++
			}
		}
		if defs != 1 {
			t.Errorf("%d definitions carry %s, want 1", defs, gvk)
		}
	}

	// The operation the kubectl-protocol reference names, in full.
	doc, _ := root.GVSpec(appsv1.SchemeGroupVersion)
	item := doc.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
	if item == nil || item.Patch == nil {
		t.Fatal("no PATCH /apis/apps/v1/namespaces/{namespace}/deployments/{name}")
	}
	op := item.Patch
	if op.OperationId != "patchAppsV1NamespacedDeployment" || op.Extensions[extAction] != "patch" {
		t.Errorf("operationId %q, action %v", op.OperationId, op.Extensions[extAction])
	}
	var params []string
	for _, p := range op.Parameters {
		params = append(params, p.Name)
	}
	if want := []string{"dryRun", "fieldManager", "fieldValidation", "force"}; !slices.Equal(params, want) {
		t.Errorf("PATCH parameters = %v, want %v", params, want)
	}
	for _, ct := range patchMediaTypes() {
		mt := op.RequestBody.Content[ct]
		if mt == nil || mt.Schema.Ref.String() != "#/components/schemas/"+patchModel {
			t.Errorf("PATCH request body %s = %+v, want the Patch schema", ct, mt)
		}
	}
	if resp := op.Responses.StatusCodeResponses[http.StatusOK]; resp == nil || resp.Content[mediaJSON] == nil ||
		resp.Content[mediaJSON].Schema.Ref.String() != "#/components/schemas/io.k8s.api.apps.v1.Deployment" {
		t.Errorf("PATCH 200 response = %+v", resp)
	}
	scale := doc.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
	if scale == nil || scale.Get == nil || !gvkIs(scale.Get.Extensions, schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}) {
		t.Errorf("scale subresource GET = %+v, want kind autoscaling/v1 Scale", scale)
	}
}

// TestStrategicMergePatch computes kubectl apply's three-way patch
// (overwriting changes made on the server, as apply does by default) from
// the v3 and v2 schemas and from the Go structs' tags; they must agree.
func TestStrategicMergePatch(t *testing.T) {
	b := newTestBuilder(t, testResources())
	dc := discoveryClient(t, b)
	doc, err := openapi3.NewRoot(dc.OpenAPIV3()).GVSpec(appsv1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	var v3meta strategicpatch.LookupPatchMeta
	for _, s := range doc.Components.Schemas {
		if gvkIn(s.Extensions, gvk) {
			v3meta = strategicpatch.PatchMetaFromOpenAPIV3{Schema: s, SchemaList: doc.Components.Schemas}
		}
	}
	if v3meta == nil {
		t.Fatal("no v3 definition for Deployment")
	}
	v2doc, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	models, err := openapiproto.NewOpenAPIData(v2doc)
	if err != nil {
		t.Fatal(err)
	}
	v2meta := strategicpatch.NewPatchMetaFromOpenAPI(models.LookupModel("io.k8s.api.apps.v1.Deployment"))
	structMeta, err := strategicpatch.NewPatchMetaFromStruct(&appsv1.Deployment{})
	if err != nil {
		t.Fatal(err)
	}

	original := testDeployment()
	modified := testDeployment()
	c := &modified.Spec.Template.Spec.Containers[0]
	c.Image = "nginx:1.28"
	c.Env = append(c.Env, corev1.EnvVar{Name: "EXTRA", Value: "1"})
	c.Ports = nil
	modified.Spec.Template.Spec.Containers = append(modified.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox"})
	modified.Spec.Template.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	modified.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	current := testDeployment()
	current.Spec.Template.Spec.Containers[0].Image = "nginx:1.27-live"

	enc := func(o runtime.Object) []byte {
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	want, err := strategicpatch.CreateThreeWayMergePatch(enc(original), enc(modified), enc(current), structMeta, true)
	if err != nil {
		t.Fatalf("patch from structs: %v", err)
	}
	for _, c := range []struct {
		name string
		meta strategicpatch.LookupPatchMeta
	}{{"v3", v3meta}, {"v2", v2meta}} {
		got, err := strategicpatch.CreateThreeWayMergePatch(enc(original), enc(modified), enc(current), c.meta, true)
		if err != nil {
			t.Errorf("patch from %s schemas: %v", c.name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("patch from %s schemas:\n%s\nwant (from structs):\n%s", c.name, got, want)
		}
	}
	for _, directive := range []string{"$setElementOrder/containers", "$setElementOrder/env", "$retainKeys"} {
		if !bytes.Contains(want, []byte(directive)) {
			t.Errorf("patch %s lacks %s: the test does not exercise it", want, directive)
		}
	}
}

// resolveV3 follows a schema's $ref, directly or through kube's
// one-element allOf, as kubectl explain does.
func resolveV3(t *testing.T, schemas map[string]any, s map[string]any) map[string]any {
	t.Helper()
	if all, ok := s["allOf"].([]any); ok && len(all) == 1 {
		s = all[0].(map[string]any)
	}
	ref, ok := s["$ref"].(string)
	if !ok {
		return s
	}
	target, ok := schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
	if !ok {
		t.Fatalf("$ref %s does not resolve", ref)
	}
	return target
}

func property(t *testing.T, s map[string]any, name string) map[string]any {
	t.Helper()
	props, _ := s["properties"].(map[string]any)
	p, ok := props[name].(map[string]any)
	if !ok {
		t.Fatalf("no property %q in %v", name, s["description"])
	}
	return p
}

// TestExplain walks the v3 document the way kubectl explain's template
// does: the GVK from the resource's operations, the definition carrying
// that GVK, then fields through $ref and allOf.
func TestExplain(t *testing.T) {
	b := newTestBuilder(t, testResources())
	doc, err := openapi3.NewRoot(discoveryClient(t, b).OpenAPIV3()).GVSpecAsMap(corev1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	paths := doc["paths"].(map[string]any)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)

	find := func(resource string) map[string]any {
		t.Helper()
		for _, p := range []string{"/api/v1/" + resource, "/api/v1/" + resource + "/{name}",
			"/api/v1/namespaces/{namespace}/" + resource, "/api/v1/namespaces/{namespace}/" + resource + "/{name}"} {
			item, _ := paths[p].(map[string]any)
			for _, method := range []string{"get", "post", "put", "patch", "delete"} {
				op, _ := item[method].(map[string]any)
				gvk, ok := op[extGVK]
				if !ok {
					continue
				}
				for _, s := range schemas {
					s := s.(map[string]any)
					list, _ := s[extGVK].([]any)
					if slices.ContainsFunc(list, func(e any) bool { return reflect.DeepEqual(e, gvk) }) {
						return s
					}
				}
				t.Fatalf("%s: no definition with %s %v", resource, extGVK, gvk)
			}
		}
		t.Fatalf("%s: no operation with %s", resource, extGVK)
		return nil
	}

	pod := find("pods")
	if d, _ := pod["description"].(string); !strings.HasPrefix(d, "Pod is a collection of containers") {
		t.Errorf("Pod description = %q", d)
	}
	podSpec := resolveV3(t, schemas, property(t, pod, "spec"))
	if req, _ := podSpec["required"].([]any); !slices.Contains(req, any("containers")) {
		t.Errorf("PodSpec required = %v, want containers", podSpec["required"])
	}
	containers := property(t, podSpec, "containers")
	if containers["type"] != "array" || containers[extPatchMergeKey] != "name" || containers[extPatchStrategy] != "merge" {
		t.Errorf("PodSpec.containers = %v", containers)
	}
	if d, _ := containers["description"].(string); d == "" {
		t.Errorf("PodSpec.containers has no description")
	}
	container := resolveV3(t, schemas, containers["items"].(map[string]any))
	if d, _ := container["description"].(string); !strings.Contains(d, "container") {
		t.Errorf("Container description = %q", d)
	}
	if req, _ := container["required"].([]any); !slices.Contains(req, any("name")) {
		t.Errorf("Container required = %v, want name", container["required"])
	}
	image := property(t, container, "image")
	if image["type"] != "string" || image["description"] == "" {
		t.Errorf("Container.image = %v", image)
	}
	created := property(t, resolveV3(t, schemas, property(t, pod, "metadata")), "creationTimestamp")
	if created["description"] == "" {
		t.Errorf("ObjectMeta.creationTimestamp has no description")
	}
	if ts := resolveV3(t, schemas, created); ts["type"] != "string" || ts["format"] != "date-time" {
		t.Errorf("ObjectMeta.creationTimestamp = %v, want string date-time", ts)
	}

	secret := find("secrets")
	data := property(t, secret, "data")
	want := map[string]any{"type": "string", "format": "byte"}
	if data["type"] != "object" || !reflect.DeepEqual(data["additionalProperties"], want) {
		t.Errorf("Secret.data = %v, want a map of %v", data, want)
	}
	if find("namespaces")[extGVK] == nil {
		t.Errorf("Namespace has no %s", extGVK)
	}
}

func TestIndexAndHashes(t *testing.T) {
	b := newTestBuilder(t, testResources())
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b.V3Index(), &index); err != nil {
		t.Fatal(err)
	}
	for _, gv := range testGVs {
		key := gvKey(gv)
		doc, hash, ok := b.V3(key)
		if !ok {
			t.Fatalf("V3(%q) not served", key)
		}
		if want := fmt.Sprintf("%X", sha512.Sum512(doc)); hash != want {
			t.Errorf("%s: hash %s, want SHA-512 %s", key, hash, want)
		}
		if got, want := index.Paths[key].ServerRelativeURL, "/openapi/v3/"+key+"?hash="+hash; got != want {
			t.Errorf("index[%s] = %q, want %q", key, got, want)
		}
		if again, _, _ := b.V3("/" + key); !bytes.Equal(again, doc) {
			t.Errorf("V3(/%s) differs from V3(%s)", key, key)
		}
	}
	if _, _, ok := b.V3("apis/batch/v1"); ok {
		t.Errorf("V3(apis/batch/v1) served")
	}

	// Same input, same documents: the hash is stable across restarts, so
	// kubectl's cache keeps working.
	same := newTestBuilder(t, testResources())
	if !bytes.Equal(same.V2(), b.V2()) || !bytes.Equal(same.V3Index(), b.V3Index()) {
		t.Errorf("two builds of the same resources differ")
	}

	// A changed resource set changes the hash of its group version only.
	fewer := slices.DeleteFunc(testResources(), func(r Resource) bool { return r.GVR.Resource == "secrets" })
	changed := newTestBuilder(t, fewer)
	_, oldCore, _ := b.V3("api/v1")
	_, newCore, _ := changed.V3("api/v1")
	if oldCore == newCore {
		t.Errorf("api/v1 hash did not change when secrets were dropped")
	}
	_, oldApps, _ := b.V3("apis/apps/v1")
	_, newApps, _ := changed.V3("apis/apps/v1")
	if oldApps != newApps {
		t.Errorf("apis/apps/v1 hash changed when core secrets were dropped")
	}

	// v2 and the index have their hashes too, for ETags; the protobuf
	// form is the JSON one, parsed as kube-openapi's handler parses it.
	if want := fmt.Sprintf("%X", sha512.Sum512(b.V2())); b.V2Hash() != want {
		t.Errorf("V2Hash %s, want SHA-512 %s", b.V2Hash(), want)
	}
	if want := fmt.Sprintf("%X", sha512.Sum512(b.V3Index())); b.V3IndexHash() != want {
		t.Errorf("V3IndexHash %s, want SHA-512 %s", b.V3IndexHash(), want)
	}
	fromJSON, err := openapi_v2.ParseDocument(b.V2())
	if err != nil {
		t.Fatalf("gnostic cannot parse the v2 document: %v", err)
	}
	pb := &openapi_v2.Document{}
	if err := proto.Unmarshal(b.V2Protobuf(), pb); err != nil {
		t.Fatalf("V2Protobuf is not a gnostic Document: %v", err)
	}
	if !proto.Equal(pb, fromJSON) {
		t.Errorf("V2Protobuf is not the V2 document")
	}

	// The returned slices are the caller's.
	v2 := b.V2()
	v2[0] = 'X'
	if b.V2()[0] == 'X' {
		t.Errorf("V2 hands out its own buffer")
	}
	v2pb := b.V2Protobuf()
	v2pb[0] ^= 0xff
	if b.V2Protobuf()[0] == v2pb[0] {
		t.Errorf("V2Protobuf hands out its own buffer")
	}
}

func TestOperations(t *testing.T) {
	b := newTestBuilder(t, testResources())
	var sw spec.Swagger
	if err := json.Unmarshal(b.V2(), &sw); err != nil {
		t.Fatal(err)
	}
	core := gvPath(corev1.SchemeGroupVersion)
	tests := []struct {
		path, method, id, action string
		kind                     schema.GroupVersionKind
	}{
		{core + "/namespaces/{namespace}/configmaps/{name}", "get", "readCoreV1NamespacedConfigMap", "get", corev1.SchemeGroupVersion.WithKind("ConfigMap")},
		{core + "/namespaces/{namespace}/configmaps", "get", "listCoreV1NamespacedConfigMap", "list", corev1.SchemeGroupVersion.WithKind("ConfigMap")},
		{core + "/configmaps", "get", "listCoreV1ConfigMapForAllNamespaces", "list", corev1.SchemeGroupVersion.WithKind("ConfigMap")},
		{core + "/namespaces/{namespace}/configmaps", "post", "createCoreV1NamespacedConfigMap", "post", corev1.SchemeGroupVersion.WithKind("ConfigMap")},
		{core + "/namespaces/{namespace}/configmaps", "delete", "deleteCoreV1CollectionNamespacedConfigMap", "deletecollection", corev1.SchemeGroupVersion.WithKind("ConfigMap")},
		{core + "/namespaces/{namespace}/configmaps/{name}", "put", "replaceCoreV1NamespacedConfigMap", "put", corev1.SchemeGroupVersion.WithKind("ConfigMap")},
		{core + "/namespaces/{namespace}/configmaps/{name}", "delete", "deleteCoreV1NamespacedConfigMap", "delete", corev1.SchemeGroupVersion.WithKind("ConfigMap")},
		{core + "/watch/namespaces/{namespace}/configmaps/{name}", "get", "watchCoreV1NamespacedConfigMap", "watch", corev1.SchemeGroupVersion.WithKind("ConfigMap")},
		{core + "/watch/namespaces/{namespace}/configmaps", "get", "watchCoreV1NamespacedConfigMapList", "watchlist", corev1.SchemeGroupVersion.WithKind("ConfigMap")},
		{core + "/watch/configmaps", "get", "watchCoreV1ConfigMapListForAllNamespaces", "watchlist", corev1.SchemeGroupVersion.WithKind("ConfigMap")},
		{core + "/namespaces/{namespace}/pods/{name}/status", "patch", "patchCoreV1NamespacedPodStatus", "patch", corev1.SchemeGroupVersion.WithKind("Pod")},
		{core + "/namespaces/{namespace}/pods/{name}/binding", "post", "createCoreV1NamespacedPodBinding", "post", corev1.SchemeGroupVersion.WithKind("Binding")},
		{core + "/namespaces/{namespace}/pods/{name}/eviction", "post", "createCoreV1NamespacedPodEviction", "post", policyv1.SchemeGroupVersion.WithKind("Eviction")},
		{core + "/namespaces/{name}", "get", "readCoreV1Namespace", "get", corev1.SchemeGroupVersion.WithKind("Namespace")},
		{core + "/namespaces/{name}/finalize", "put", "replaceCoreV1NamespaceFinalize", "put", corev1.SchemeGroupVersion.WithKind("Namespace")},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "put", "replaceAppsV1NamespacedDeploymentScale", "put", autoscalingv1.SchemeGroupVersion.WithKind("Scale")},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", "get", "listRbacAuthorizationV1ClusterRole", "list", rbacv1.SchemeGroupVersion.WithKind("ClusterRole")},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles/{name}", "patch", "patchRbacAuthorizationV1NamespacedRole", "patch", rbacv1.SchemeGroupVersion.WithKind("Role")},
	}
	for _, tc := range tests {
		item, ok := sw.Paths.Paths[tc.path]
		if !ok {
			t.Errorf("no path %s", tc.path)
			continue
		}
		op := map[string]*spec.Operation{"get": item.Get, "put": item.Put, "post": item.Post, "patch": item.Patch, "delete": item.Delete}[tc.method]
		if op == nil {
			t.Errorf("%s has no %s", tc.path, tc.method)
			continue
		}
		if op.ID != tc.id || op.Extensions[extAction] != tc.action || !gvkIs(op.Extensions, tc.kind) {
			t.Errorf("%s %s: id %q action %v gvk %v, want %q %q %v", tc.method, tc.path, op.ID, op.Extensions[extAction], op.Extensions[extGVK], tc.id, tc.action, tc.kind)
		}
	}
	for _, p := range []string{core + "/namespaces", core + "/namespaces/{namespace}/namespaces", core + "/namespaces/{namespace}/configmaps/{name}/status"} {
		if item, ok := sw.Paths.Paths[p]; ok && p != core+"/namespaces" {
			t.Errorf("unexpected path %s: %+v", p, item)
		} else if ok && item.Delete != nil {
			t.Errorf("namespaces without deletecollection has DELETE %s", p)
		}
	}

	// Lists carry the list parameters and may answer with a watch stream.
	list := sw.Paths.Paths[core+"/namespaces/{namespace}/configmaps"].Get
	var names []string
	for _, p := range list.Parameters {
		names = append(names, p.Name)
	}
	for _, want := range []string{"labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch", "allowWatchBookmarks"} {
		if !slices.Contains(names, want) {
			t.Errorf("list parameters %v lack %s", names, want)
		}
	}
	if !slices.Contains(list.Produces, "application/json;stream=watch") {
		t.Errorf("list produces %v", list.Produces)
	}
	if r := list.Responses.StatusCodeResponses[http.StatusOK]; r.Schema == nil || r.Schema.Ref.String() != "#/definitions/io.k8s.api.core.v1.ConfigMapList" {
		t.Errorf("list 200 = %+v, want ConfigMapList", r)
	}
	del := sw.Paths.Paths[core+"/namespaces/{namespace}/configmaps/{name}"].Delete
	if body := del.Parameters[len(del.Parameters)-1]; body.In != "body" || body.Schema.Ref.String() != "#/definitions/"+deleteOptionsModel {
		t.Errorf("delete body = %+v, want DeleteOptions", body)
	}
}

// widget and its parts exercise the generator on Go types outside
// k8s.io/api.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              widgetSpec `json:"spec"`
}

func (w *widget) DeepCopyObject() runtime.Object { c := *w; return &c }

type widgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []widget `json:"items"`
}

func (w *widgetList) DeepCopyObject() runtime.Object { c := *w; return &c }

type widgetSpec struct {
	Any    any                  `json:"any,omitempty"`
	Raw    json.RawMessage      `json:"raw,omitempty"`
	Data   []byte               `json:"data,omitempty"`
	Digest [2]byte              `json:"digest"`
	Ratio  float64              `json:"ratio"`
	Count  *int64               `json:"count,omitempty"`
	Port   intstr.IntOrString   `json:"port"`
	Size   resource.Quantity    `json:"size"`
	Since  metav1.Time          `json:"since"`
	Every  metav1.Duration      `json:"every"`
	Ext    runtime.RawExtension `json:"ext"`
	Labels map[string]string    `json:"labels,omitempty"`
	Parts  []widgetPart         `json:"parts,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
	Quoted int64                `json:"quoted,string"`
	Next   *widgetSpec          `json:"next,omitempty"`
	Hidden string               `json:"-"`
	widgetExtra
	unexported string
}

func (widgetSpec) SwaggerDoc() map[string]string {
	return map[string]string{"": "widgetSpec is a test type.", "size": "Size of the widget."}
}

type widgetExtra struct {
	Extra string `json:"extra"`
}

type widgetPart struct {
	Name string `json:"name"`
}

// widgetScale is a subresource type outside client-go's scheme; its
// TypeMeta names its kind.
type widgetScale struct {
	metav1.TypeMeta `json:",inline"`
	Replicas        int32 `json:"replicas"`
}

func (w *widgetScale) DeepCopyObject() runtime.Object { c := *w; return &c }

func TestSchemas(t *testing.T) {
	gv := schema.GroupVersion{Group: "example.com", Version: "v1"}
	b := newTestBuilder(t, []Resource{{
		GVR: gv.WithResource("widgets"), Kind: "Widget", ListKind: "WidgetList", Namespaced: true,
		Verbs: allVerbs, Object: &widget{}, List: &widgetList{},
		Subresources: []Subresource{{
			Name:   "scale",
			Object: &widgetScale{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "WidgetScale"}},
			Verbs:  []string{"get", "patch"},
		}},
	}})
	const pkg = "com.github.trustplane.trustplane.apiserver.openapi."
	const meta = "io.k8s.apimachinery.pkg.apis.meta.v1."

	v3doc, _, ok := b.V3("apis/example.com/v1")
	if !ok {
		t.Fatal("apis/example.com/v1 not served")
	}
	docs := map[string]struct {
		raw    []byte
		prefix string
		defs   func(map[string]any) map[string]any
	}{
		"v2": {b.V2(), "#/definitions/", func(d map[string]any) map[string]any { return d["definitions"].(map[string]any) }},
		"v3": {v3doc, "#/components/schemas/", func(d map[string]any) map[string]any {
			return d["components"].(map[string]any)["schemas"].(map[string]any)
		}},
	}
	ref := func(prefix, name string) map[string]any { return map[string]any{"$ref": prefix + name} }
	preserve := map[string]any{"type": "object", extPreserve: true}

	for flavor, d := range docs {
		var doc map[string]any
		if err := json.Unmarshal(d.raw, &doc); err != nil {
			t.Fatal(err)
		}
		defs := d.defs(doc)
		spec, _ := defs[pkg+"widgetSpec"].(map[string]any)
		if spec == nil {
			t.Fatalf("%s: no %swidgetSpec definition", flavor, pkg)
		}
		if spec["description"] != "widgetSpec is a test type." {
			t.Errorf("%s: widgetSpec description = %v", flavor, spec["description"])
		}
		sizeWant := map[string]any{"description": "Size of the widget.", "$ref": d.prefix + "io.k8s.apimachinery.pkg.api.resource.Quantity"}
		if flavor == "v3" {
			sizeWant = map[string]any{"description": "Size of the widget.", "allOf": []any{ref(d.prefix, "io.k8s.apimachinery.pkg.api.resource.Quantity")}}
		}
		props := map[string]any{
			"any":    preserve,
			"raw":    preserve,
			"data":   map[string]any{"type": "string", "format": "byte"},
			"digest": map[string]any{"type": "array", "items": map[string]any{"type": "integer", "format": "byte"}},
			"ratio":  map[string]any{"type": "number", "format": "double"},
			"count":  map[string]any{"type": "integer", "format": "int64"},
			"port":   ref(d.prefix, "io.k8s.apimachinery.pkg.util.intstr.IntOrString"),
			"size":   sizeWant,
			"since":  ref(d.prefix, meta+"Time"),
			"every":  ref(d.prefix, meta+"Duration"),
			"ext":    ref(d.prefix, "io.k8s.apimachinery.pkg.runtime.RawExtension"),
			"labels": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
			"parts": map[string]any{"type": "array", "items": ref(d.prefix, pkg+"widgetPart"),
				extPatchStrategy: "merge", extPatchMergeKey: "name"},
			"quoted": map[string]any{"type": "string"},
			"next":   ref(d.prefix, pkg+"widgetSpec"),
			"extra":  map[string]any{"type": "string"},
		}
		if !reflect.DeepEqual(spec["properties"], props) {
			got, _ := json.MarshalIndent(spec["properties"], "", " ")
			want, _ := json.MarshalIndent(props, "", " ")
			t.Errorf("%s: widgetSpec properties:\n%s\nwant:\n%s", flavor, got, want)
		}

		primitives := map[string]map[string]any{
			meta + "Time":     {"type": "string", "format": "date-time"},
			meta + "Duration": {"type": "string"},
			"io.k8s.apimachinery.pkg.api.resource.Quantity":   {"type": "string"},
			"io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string", extIntOrString: true},
			"io.k8s.apimachinery.pkg.runtime.RawExtension":    {"type": "object"},
		}
		if flavor == "v3" {
			primitives["io.k8s.apimachinery.pkg.api.resource.Quantity"] = map[string]any{
				"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}}
			primitives["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = map[string]any{"format": "int-or-string", extIntOrString: true,
				"oneOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}}
		}
		for name, want := range primitives {
			got, _ := defs[name].(map[string]any)
			if got["description"] == "" || got["description"] == nil {
				t.Errorf("%s: %s has no description", flavor, name)
			}
			delete(got, "description")
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s = %v, want %v", flavor, name, got, want)
			}
		}

		w, _ := defs[pkg+"widget"].(map[string]any)
		wantGVK := []any{map[string]any{"group": "example.com", "version": "v1", "kind": "Widget"}}
		if !reflect.DeepEqual(w[extGVK], wantGVK) {
			t.Errorf("%s: widget %s = %v, want %v", flavor, extGVK, w[extGVK], wantGVK)
		}
		wprops, _ := w["properties"].(map[string]any)
		for _, p := range []string{"apiVersion", "kind", "metadata", "spec"} {
			if _, ok := wprops[p]; !ok {
				t.Errorf("%s: widget lacks property %s (inline TypeMeta)", flavor, p)
			}
		}
		list, _ := defs[pkg+"widgetList"].(map[string]any)
		if !reflect.DeepEqual(list["required"], []any{"items"}) {
			t.Errorf("%s: widgetList required = %v, want [items]", flavor, list["required"])
		}
		// widgetScale embeds only TypeMeta: TypeMeta's OpenAPIModelName and
		// SwaggerDoc are promoted to it but are not its own.
		scale, _ := defs[pkg+"widgetScale"].(map[string]any)
		if !reflect.DeepEqual(scale[extGVK], []any{map[string]any{"group": "example.com", "version": "v1", "kind": "WidgetScale"}}) {
			t.Errorf("%s: widgetScale %s = %v", flavor, extGVK, scale[extGVK])
		}
		if scale["description"] != nil {
			t.Errorf("%s: widgetScale has TypeMeta's description %q", flavor, scale["description"])
		}
		if typeMeta, ok := defs["io.k8s.apimachinery.pkg.runtime.TypeMeta"]; ok {
			t.Errorf("%s: definition io.k8s.apimachinery.pkg.runtime.TypeMeta = %v: a type took TypeMeta's name", flavor, typeMeta)
		}
	}
}

func TestMetaModelNames(t *testing.T) {
	for want, typ := range map[string]reflect.Type{
		statusModel:        reflect.TypeFor[metav1.Status](),
		deleteOptionsModel: reflect.TypeFor[metav1.DeleteOptions](),
		watchEventModel:    reflect.TypeFor[metav1.WatchEvent](),
		patchModel:         reflect.TypeFor[metav1.Patch](),
	} {
		if got := modelName(typ); got != want {
			t.Errorf("modelName(%s) = %q, want %q", typ, got, want)
		}
	}
}

func TestNewRejects(t *testing.T) {
	cm := func() Resource {
		return Resource{
			GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", ListKind: "ConfigMapList", Namespaced: true,
			Verbs: allVerbs, Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{},
		}
	}
	with := func(edit func(*Resource)) []Resource {
		r := cm()
		edit(&r)
		return []Resource{r}
	}
	tests := []struct {
		name      string
		resources []Resource
		title     string
		want      []string
	}{
		{"empty title", []Resource{cm()}, "", []string{"title is empty"}},
		{"unknown verb", with(func(r *Resource) { r.Verbs = []string{"get", "frobnicate"} }), "K", []string{`unknown verbs ["frobnicate"]`}},
		{"nil object", with(func(r *Resource) { r.Object = nil }), "K", []string{"object is nil"}},
		{"typed nil object", with(func(r *Resource) { r.Object = (*corev1.ConfigMap)(nil) }), "K", []string{"object is a nil *v1.ConfigMap"}},
		{"list without List", with(func(r *Resource) { r.List = nil }), "K", []string{"list is nil"}},
		{"no kind", with(func(r *Resource) { r.Kind, r.ListKind = "", "" }), "K", []string{"kind is empty", "list kind is empty"}},
		{"twice", []Resource{cm(), cm()}, "K", []string{"is listed twice"}},
		{"subresource of unknown kind", with(func(r *Resource) {
			r.Subresources = []Subresource{{Name: "scale", Object: &widgetScale{}, Verbs: []string{"get"}}}
		}), "K", []string{`subresource "scale": kind of *openapi.widgetScale is unknown`}},
		{"subresource verb", with(func(r *Resource) {
			r.Subresources = []Subresource{{Name: "status", Object: &corev1.ConfigMap{}, Verbs: []string{"list"}}}
		}), "K", []string{`subresource "status": unknown verbs ["list"]`}},
		{"kind served as two types", []Resource{cm(), {
			GVR: corev1.SchemeGroupVersion.WithResource("widgets"), Kind: "ConfigMap",
			Verbs: []string{"get"}, Object: &widget{},
		}}, "K", []string{"kind /v1, Kind=ConfigMap is served as both"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.resources, tc.title, "v1")
			if err == nil {
				t.Fatalf("New succeeded, want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
