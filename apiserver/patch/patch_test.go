package patch

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	ctJSON      = "application/json-patch+json"
	ctMerge     = "application/merge-patch+json"
	ctStrategic = "application/strategic-merge-patch+json"
	ctApply     = "application/apply-patch+yaml"

	kubectlUA = "kubectl.1.32/v1.32.5 (linux/amd64) kubernetes/9894294"
)

var (
	deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")
	configMapGVK  = corev1.SchemeGroupVersion.WithKind("ConfigMap")
)

// fixture holds what a server builds once at start-up: one scheme, one
// type converter, a Manager per kind.
type fixture struct {
	scheme      *runtime.Scheme
	deployments *Manager
	configMaps  *Manager
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	tc := NewTypeConverter(s)
	deployments, err := NewManager(s, tc, deploymentGVK, func() runtime.Object { return &appsv1.Deployment{} })
	if err != nil {
		t.Fatal(err)
	}
	configMaps, err := NewManager(s, tc, configMapGVK, func() runtime.Object { return &corev1.ConfigMap{} })
	if err != nil {
		t.Fatal(err)
	}
	return fixture{scheme: s, deployments: deployments, configMaps: configMaps}
}

// deployment is the "web" Deployment as kubectl apply -f deploy.yaml would
// have created it, before the server recorded its managed fields.
func deployment() *appsv1.Deployment {
	replicas := int32(1)
	maxSurge := intstr.FromString("25%")
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "default", UID: "2f0c1c53-0000-4000-8000-000000000001", ResourceVersion: "7",
			Labels:     map[string]string{"app": "web", "tier": "frontend"},
			Finalizers: []string{"example.com/a", "example.com/b"},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &maxSurge},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "nginx",
					Image: "nginx:1.25",
					Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				}}},
			},
		},
	}
}

func configMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default", UID: "2f0c1c53-0000-4000-8000-000000000002", ResourceVersion: "9"},
		Data:       map[string]string{"color": "blue", "size": "m"},
	}
}

// created records obj's creation, as the server's POST handler does, so
// that later writes are tracked in managedFields.
func created[T runtime.Object](t testing.TB, m *Manager, obj T) T {
	t.Helper()
	out, err := m.Update(nil, obj, "kubectl-create", "")
	if err != nil {
		t.Fatalf("Update(create): %v", err)
	}
	return out.(T)
}

// code returns the HTTP code of an API error, 0 for nil and -1 for an error
// that is not an API error.
func code(err error) int32 {
	if err == nil {
		return 0
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return -1
	}
	return status.Status().Code
}

// withoutManagedFields returns a copy of obj for comparing content alone;
// managedFields carry timestamps and are checked on their own.
func withoutManagedFields(obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj
}

func entry(obj runtime.Object, manager string, op metav1.ManagedFieldsOperationType) (metav1.ManagedFieldsEntry, bool) {
	for _, e := range obj.(metav1.Object).GetManagedFields() {
		if e.Manager == manager && e.Operation == op {
			return e, true
		}
	}
	return metav1.ManagedFieldsEntry{}, false
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// fields returns the entry's field set as JSON, for messages.
func fields(e metav1.ManagedFieldsEntry) string {
	if e.FieldsV1 == nil {
		return "<none>"
	}
	return string(e.FieldsV1.Raw)
}

func managers(obj runtime.Object) []string {
	var out []string
	for _, e := range obj.(metav1.Object).GetManagedFields() {
		out = append(out, fmt.Sprintf("%s/%s", e.Manager, e.Operation))
	}
	return out
}

// owns reports whether the entry's field set mentions path, given as its
// FieldsV1 JSON keys, e.g. `"f:spec":{"f:replicas":{}` is checked as the
// substring `"f:replicas"` after `"f:spec"`.
func owns(e metav1.ManagedFieldsEntry, keys ...string) bool {
	if e.FieldsV1 == nil {
		return false
	}
	raw := string(fields(e))
	for _, k := range keys {
		i := strings.Index(raw, `"`+k+`"`)
		if i < 0 {
			return false
		}
		raw = raw[i+len(k)+2:]
	}
	return true
}

func TestApplyDeployment(t *testing.T) {
	f := newFixture(t)
	stored := created(t, f.deployments, deployment())

	twoContainers := stored.DeepCopy()
	twoContainers.Spec.Template.Spec.Containers = append(twoContainers.Spec.Template.Spec.Containers,
		corev1.Container{Name: "sidecar", Image: "busybox:1.36"})
	noContainers := stored.DeepCopy()
	noContainers.Spec.Template.Spec.Containers = []corev1.Container{}

	tooMany := make([]string, maxJSONPatchOperations+1)
	for i := range tooMany {
		tooMany[i] = `{"op":"test","path":"/kind","value":"Deployment"}`
	}
	// Every copy of the annotations into themselves doubles the document:
	// 40 of them would need a terabyte.
	doubling := []string{`{"op":"add","path":"/metadata/annotations","value":{"k":"` + strings.Repeat("x", 1024) + `"}}`}
	for i := range 40 {
		doubling = append(doubling, fmt.Sprintf(`{"op":"copy","from":"/metadata/annotations","path":"/metadata/annotations/c%d"}`, i))
	}

	tests := []struct {
		name         string
		current      *appsv1.Deployment // stored when nil
		contentType  string
		body         string
		fieldManager string
		force        bool
		// want edits a copy of current into the expected result; for a
		// failure, wantCode is the HTTP code.
		want     func(d *appsv1.Deployment)
		wantCode int32
	}{
		// Strategic merge patch, with the bodies kubectl sends.
		{
			name:        "strategic: kubectl apply with $setElementOrder, container merged by name",
			contentType: ctStrategic,
			body:        `{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"kind\":\"Deployment\"}\n"}},"spec":{"replicas":2,"template":{"spec":{"$setElementOrder/containers":[{"name":"nginx"}],"containers":[{"image":"nginx:1.26","name":"nginx"}]}}}}`,
			want: func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{\"kind\":\"Deployment\"}\n"}
				*d.Spec.Replicas = 2
				d.Spec.Template.Spec.Containers[0].Image = "nginx:1.26" // ports kept: merged, not replaced
			},
		},
		{
			name:        "strategic: kubectl edit",
			contentType: ctStrategic,
			body:        `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"nginx"}],"containers":[{"image":"nginx:1.27","name":"nginx"}]}}}}`,
			want:        func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.27" },
		},
		{
			name:        "strategic: $setElementOrder reorders",
			current:     twoContainers,
			contentType: ctStrategic,
			body:        `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"sidecar"},{"name":"nginx"}],"containers":[{"image":"busybox:1.37","name":"sidecar"}]}}}}`,
			want: func(d *appsv1.Deployment) {
				c := d.Spec.Template.Spec.Containers
				c[0], c[1] = c[1], c[0]
				c[0].Image = "busybox:1.37"
			},
		},
		{
			// Without $setElementOrder, new elements come first.
			name:        "strategic: a new container is added, not replacing the list",
			contentType: ctStrategic,
			body:        `{"spec":{"template":{"spec":{"containers":[{"image":"busybox:1.36","name":"sidecar"}]}}}}`,
			want: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers = append([]corev1.Container{{Name: "sidecar", Image: "busybox:1.36"}}, d.Spec.Template.Spec.Containers...)
			},
		},
		{
			name:        "strategic: $patch delete removes a container by name",
			current:     twoContainers,
			contentType: ctStrategic,
			body:        `{"spec":{"template":{"spec":{"containers":[{"$patch":"delete","name":"sidecar"}]}}}}`,
			want:        func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers = d.Spec.Template.Spec.Containers[:1] },
		},
		{
			name:        "strategic: null deletes a map key",
			contentType: ctStrategic,
			body:        `{"metadata":{"labels":{"tier":null}}}`,
			want:        func(d *appsv1.Deployment) { delete(d.Labels, "tier") },
		},
		{
			name:        "strategic: $retainKeys drops the rolling update parameters",
			contentType: ctStrategic,
			body:        `{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}`,
			want: func(d *appsv1.Deployment) {
				d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
			},
		},
		{
			name:        "strategic: $deleteFromPrimitiveList",
			contentType: ctStrategic,
			body:        `{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/a"]}}`,
			want:        func(d *appsv1.Deployment) { d.Finalizers = []string{"example.com/b"} },
		},
		{
			name:        "strategic: charset parameter",
			contentType: ctStrategic + "; charset=utf-8",
			body:        `{"spec":{"replicas":4}}`,
			want:        func(d *appsv1.Deployment) { *d.Spec.Replicas = 4 },
		},

		// JSON merge patch.
		{
			name:         "merge: kubectl label",
			contentType:  ctMerge,
			body:         `{"metadata":{"labels":{"a":"b"}}}`,
			fieldManager: "kubectl-label",
			want:         func(d *appsv1.Deployment) { d.Labels["a"] = "b" },
		},
		{
			name:        "merge: null deletes a key",
			contentType: ctMerge,
			body:        `{"metadata":{"labels":{"tier":null}}}`,
			want:        func(d *appsv1.Deployment) { delete(d.Labels, "tier") },
		},
		{
			name:        "merge: a list is replaced whole",
			contentType: ctMerge,
			body:        `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"app:2"}]}}}}`,
			want: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "app:2"}}
			},
		},
		{
			name:        "merge: resourceVersion is left for the caller's precondition",
			contentType: ctMerge,
			body:        `{"metadata":{"resourceVersion":"3"},"spec":{"replicas":3}}`,
			want: func(d *appsv1.Deployment) {
				d.ResourceVersion = "3"
				*d.Spec.Replicas = 3
			},
		},
		{
			name:        "merge: dropping the namespace keeps it",
			contentType: ctMerge,
			body:        `{"metadata":{"namespace":null}}`,
			want:        func(d *appsv1.Deployment) {},
		},

		// JSON patch.
		{
			name:        "json: add and replace",
			contentType: ctJSON,
			body:        `[{"op":"add","path":"/metadata/labels/a","value":"b"},{"op":"replace","path":"/spec/replicas","value":5}]`,
			want: func(d *appsv1.Deployment) {
				d.Labels["a"] = "b"
				*d.Spec.Replicas = 5
			},
		},
		{
			name:        "json: test passes, remove, copy",
			contentType: ctJSON,
			body:        `[{"op":"test","path":"/spec/replicas","value":1},{"op":"remove","path":"/metadata/labels/tier"},{"op":"copy","from":"/metadata/labels/app","path":"/metadata/labels/name"}]`,
			want: func(d *appsv1.Deployment) {
				delete(d.Labels, "tier")
				d.Labels["name"] = "web"
			},
		},
		{
			name:        "json: dropping kind keeps it",
			contentType: ctJSON,
			body:        `[{"op":"remove","path":"/kind"}]`,
			want:        func(d *appsv1.Deployment) {},
		},
		{
			name:        "json: empty patch",
			contentType: ctJSON,
			body:        `[]`,
			want:        func(d *appsv1.Deployment) {},
		},

		// Failures: a JSON patch that does not apply is unprocessable.
		{name: "json: test fails", contentType: ctJSON, body: `[{"op":"test","path":"/spec/replicas","value":9}]`, wantCode: 422},
		{name: "json: replace at a missing path", contentType: ctJSON, body: `[{"op":"replace","path":"/spec/nope/x","value":1}]`, wantCode: 422},
		{name: "json: remove a missing key", contentType: ctJSON, body: `[{"op":"remove","path":"/metadata/annotations/x"}]`, wantCode: 422},
		{name: "json: test on the root without a value (json-patch panics)", contentType: ctJSON, body: `[{"op":"test","path":""}]`, wantCode: 422},
		{name: "json: test on a list holding null (json-patch panics)", contentType: ctJSON, body: `[{"op":"add","path":"/metadata/annotations","value":{"x":[null]}},{"op":"test","path":"/metadata/annotations/x","value":[null]}]`, wantCode: 422},
		{name: "json: unknown op", contentType: ctJSON, body: `[{"op":"frobnicate","path":"/spec"}]`, wantCode: 422},
		{name: "json: copies beyond the limit", contentType: ctJSON, body: "[" + strings.Join(doubling, ",") + "]", wantCode: 422},
		{name: "json: result is not a Deployment", contentType: ctJSON, body: `[{"op":"replace","path":"/spec/replicas","value":"three"}]`, wantCode: 422},
		{name: "json: too many operations", contentType: ctJSON, body: "[" + strings.Join(tooMany, ",") + "]", wantCode: 413},
		{name: "json: an object, not a list of operations", contentType: ctJSON, body: `{"op":"add"}`, wantCode: 400},
		{name: "json: malformed", contentType: ctJSON, body: `[{"op":"add",`, wantCode: 400},
		{name: "json: binary", contentType: ctJSON, body: "\x00\xff\xfe\x01", wantCode: 400},
		{name: "json: empty body", contentType: ctJSON, body: "", wantCode: 400},
		{name: "json: changes kind", contentType: ctJSON, body: `[{"op":"replace","path":"/kind","value":"StatefulSet"}]`, wantCode: 400},
		{name: "json: changes apiVersion", contentType: ctJSON, body: `[{"op":"replace","path":"/apiVersion","value":"apps/v1beta2"}]`, wantCode: 400},
		{name: "json: apiVersion that does not parse", contentType: ctJSON, body: `[{"op":"replace","path":"/apiVersion","value":"apps/v1/x"}]`, wantCode: 400},
		{name: "json: renames", contentType: ctJSON, body: `[{"op":"replace","path":"/metadata/name","value":"other"}]`, wantCode: 400},
		{name: "json: removes the name", contentType: ctJSON, body: `[{"op":"remove","path":"/metadata/name"}]`, wantCode: 400},

		{name: "merge: malformed", contentType: ctMerge, body: `{"metadata":`, wantCode: 400},
		{name: "merge: binary", contentType: ctMerge, body: "\x89PNG\r\n\x1a\n", wantCode: 400},
		{name: "merge: null", contentType: ctMerge, body: `null`, wantCode: 400},
		{name: "merge: a list", contentType: ctMerge, body: `[1,2]`, wantCode: 422},
		{name: "merge: wrong type", contentType: ctMerge, body: `{"spec":{"replicas":"three"}}`, wantCode: 422},
		{name: "merge: moves namespace", contentType: ctMerge, body: `{"metadata":{"namespace":"kube-system"}}`, wantCode: 400},
		{name: "merge: changes kind", contentType: ctMerge, body: `{"kind":"Pod"}`, wantCode: 400},

		{name: "strategic: malformed", contentType: ctStrategic, body: `{"spec":`, wantCode: 400},
		{name: "strategic: binary", contentType: ctStrategic, body: "\xff\xd8\xff\xe0", wantCode: 400},
		{name: "strategic: a list", contentType: ctStrategic, body: `[{"spec":{}}]`, wantCode: 400},
		{name: "strategic: bad $setElementOrder", contentType: ctStrategic, body: `{"spec":{"template":{"spec":{"$setElementOrder/containers":"nginx"}}}}`, wantCode: 400},
		{name: "strategic: bad $patch", contentType: ctStrategic, body: `{"spec":{"template":{"spec":{"containers":[{"name":"nginx","$patch":"bogus"}]}}}}`, wantCode: 400},
		{name: "strategic: bad $retainKeys", contentType: ctStrategic, body: `{"spec":{"strategy":{"$retainKeys":"type"}}}`, wantCode: 400},
		{name: "strategic: content outside $retainKeys", contentType: ctStrategic, body: `{"spec":{"strategy":{"$retainKeys":["type"],"rollingUpdate":{"maxSurge":1}}}}`, wantCode: 400},
		{name: "strategic: element without merge key", contentType: ctStrategic, body: `{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}`, wantCode: 400},
		{name: "strategic: list of lists", current: noContainers, contentType: ctStrategic, body: `{"spec":{"template":{"spec":{"containers":[["a"]]}}}}`, wantCode: 422},
		{name: "strategic: null list element (strategicpatch panics)", current: noContainers, contentType: ctStrategic, body: `{"spec":{"template":{"spec":{"containers":[null]}}}}`, wantCode: 400},
		{name: "strategic: wrong type", contentType: ctStrategic, body: `{"metadata":{"labels":{"a":["b"]}}}`, wantCode: 422},
		{name: "strategic: changes apiVersion", contentType: ctStrategic, body: `{"apiVersion":"apps/v1beta1"}`, wantCode: 400},
		{name: "strategic: renames", contentType: ctStrategic, body: `{"metadata":{"name":"other"}}`, wantCode: 400},

		// Request parameters.
		{name: "force on a non-apply patch", contentType: ctMerge, body: `{}`, force: true, wantCode: 422},
		{name: "fieldManager too long", contentType: ctMerge, body: `{}`, fieldManager: strings.Repeat("m", 129), wantCode: 422},
		{name: "fieldManager not printable", contentType: ctMerge, body: `{}`, fieldManager: "bad\x00name", wantCode: 422},
		{name: "unknown content type", contentType: "application/json", body: `{}`, wantCode: 415},
		{name: "empty content type", contentType: "", body: `{}`, wantCode: 415},
		{name: "protobuf content type", contentType: "application/vnd.kubernetes.protobuf", body: "k8s\x00", wantCode: 415},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := tt.current
			if current == nil {
				current = stored
			}
			before := current.DeepCopy()
			got, err := applyIgnoring(f.deployments, current, tt.contentType, []byte(tt.body), tt.fieldManager, kubectlUA, tt.force)
			if !equality.Semantic.DeepEqual(before, current) {
				t.Errorf("Apply modified current:\n%s", diff.Diff(before, current))
			}
			if tt.want == nil {
				if c := code(err); c != tt.wantCode {
					t.Fatalf("Apply() error = %v (code %d), want code %d", err, c, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply() error = %v (code %d), want none", err, code(err))
			}
			want := current.DeepCopy()
			want.APIVersion, want.Kind = deploymentGVK.ToAPIVersionAndKind()
			tt.want(want)
			gotD, ok := got.(*appsv1.Deployment)
			if !ok {
				t.Fatalf("Apply() = %T, want *appsv1.Deployment", got)
			}
			if g, w := withoutManagedFields(gotD), withoutManagedFields(want); !equality.Semantic.DeepEqual(g, w) {
				t.Errorf("Apply() got/want differ:\n%s", diff.Diff(w, g))
			}
		})
	}
}

func TestApplyConfigMap(t *testing.T) {
	f := newFixture(t)
	stored := created(t, f.configMaps, configMap())

	tests := []struct {
		name        string
		contentType string
		body        string
		want        map[string]string // the result's data; nil for a failure
		wantCode    int32
		// removes is set when the patch only removes fields: that gives its
		// manager nothing to own, so no managedFields entry.
		removes bool
	}{
		{name: "merge: add a key", contentType: ctMerge, body: `{"data":{"shape":"round"}}`, want: map[string]string{"color": "blue", "size": "m", "shape": "round"}},
		{name: "merge: null deletes a key", contentType: ctMerge, body: `{"data":{"size":null}}`, want: map[string]string{"color": "blue"}, removes: true},
		{name: "strategic: change and delete", contentType: ctStrategic, body: `{"data":{"color":"red","size":null}}`, want: map[string]string{"color": "red"}},
		{name: "strategic: $patch replace", contentType: ctStrategic, body: `{"data":{"$patch":"replace","only":"this"}}`, want: map[string]string{"only": "this"}},
		{name: "json: replace and remove", contentType: ctJSON, body: `[{"op":"replace","path":"/data/color","value":"green"},{"op":"remove","path":"/data/size"}]`, want: map[string]string{"color": "green"}},
		{name: "json: key with a slash", contentType: ctJSON, body: `[{"op":"add","path":"/data/a~1b","value":"c"}]`, want: map[string]string{"color": "blue", "size": "m", "a/b": "c"}},
		{name: "json: test fails", contentType: ctJSON, body: `[{"op":"test","path":"/data/color","value":"red"}]`, wantCode: 422},
		{name: "json: bad path", contentType: ctJSON, body: `[{"op":"add","path":"/data/x/y","value":"z"}]`, wantCode: 422},
		{name: "merge: value not a string", contentType: ctMerge, body: `{"data":{"n":1}}`, wantCode: 422},
		{name: "strategic: value not a string", contentType: ctStrategic, body: `{"data":{"n":{"a":1}}}`, wantCode: 422},
		{name: "merge: changes kind", contentType: ctMerge, body: `{"kind":"Secret"}`, wantCode: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := applyIgnoring(f.configMaps, stored, tt.contentType, []byte(tt.body), "test", "", false)
			if tt.want == nil {
				if c := code(err); c != tt.wantCode {
					t.Fatalf("Apply() error = %v (code %d), want code %d", err, c, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply() error = %v, want none", err)
			}
			cm := got.(*corev1.ConfigMap)
			if !equality.Semantic.DeepEqual(cm.Data, tt.want) {
				t.Errorf("data = %v, want %v", cm.Data, tt.want)
			}
			if cm.Name != stored.Name || cm.UID != stored.UID || cm.ResourceVersion != stored.ResourceVersion {
				t.Errorf("identity = %s/%s rv %s, want %s/%s rv %s", cm.Name, cm.UID, cm.ResourceVersion, stored.Name, stored.UID, stored.ResourceVersion)
			}
			if _, ok := entry(cm, "test", metav1.ManagedFieldsOperationUpdate); ok == tt.removes {
				t.Errorf("managers = %v, want test/Update among them: %v", managers(cm), !tt.removes)
			}
		})
	}
}

func TestApplyNothingStored(t *testing.T) {
	f := newFixture(t)
	for _, ct := range []string{ctJSON, ctMerge, ctStrategic} {
		t.Run(ct, func(t *testing.T) {
			_, err := applyIgnoring(f.deployments, nil, ct, []byte(`{}`), "", kubectlUA, false)
			if c := code(err); c != 404 {
				t.Errorf("Apply(nil) error = %v (code %d), want 404", err, c)
			}
		})
	}
	t.Run("typed nil current", func(t *testing.T) {
		_, err := applyIgnoring(f.deployments, (*appsv1.Deployment)(nil), ctMerge, []byte(`{}`), "", kubectlUA, false)
		if c := code(err); c != 404 {
			t.Errorf("Apply(nil) error = %v (code %d), want 404", err, c)
		}
		obj, err := applyIgnoring(f.configMaps, (*corev1.ConfigMap)(nil), ctApply, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`), "m", "", false)
		if err != nil || obj.(*corev1.ConfigMap).Name != "x" {
			t.Errorf("Apply(nil) = %v, %v; want the ConfigMap x", obj, err)
		}
	})
	t.Run("current of another kind", func(t *testing.T) {
		_, err := applyIgnoring(f.deployments, configMap(), ctMerge, []byte(`{}`), "", kubectlUA, false)
		if c := code(err); c != 400 {
			t.Errorf("Apply(ConfigMap) error = %v (code %d), want 400", err, c)
		}
	})
}

// TestApplyResultIsFresh checks that the result shares no memory with
// current, for each type.
func TestApplyResultIsFresh(t *testing.T) {
	f := newFixture(t)
	stored := created(t, f.deployments, deployment())
	bodies := map[string]string{
		ctJSON:      `[]`,
		ctMerge:     `{}`,
		ctStrategic: `{}`,
		ctApply:     `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}`,
	}
	for ct, body := range bodies {
		t.Run(ct, func(t *testing.T) {
			before := stored.DeepCopy()
			got, err := applyIgnoring(f.deployments, stored, ct, []byte(body), "m", "", false)
			if err != nil {
				t.Fatal(err)
			}
			d := got.(*appsv1.Deployment)
			d.Labels["mutated"] = "yes"
			*d.Spec.Replicas = 42
			d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort = 1
			d.ManagedFields[0].Manager = "mutated"
			if !equality.Semantic.DeepEqual(before, stored) {
				t.Errorf("changing the result changed current:\n%s", diff.Diff(before, stored))
			}
		})
	}
}

// manifest is what kubectl apply --server-side sends for the web
// Deployment: JSON, the full object without status.
func manifest(replicas int, labels string) string {
	return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","labels":{%s}},`+
		`"spec":{"replicas":%d,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},`+
		`"spec":{"containers":[{"name":"nginx","image":"nginx:1.25"}]}}}}`, labels, replicas)
}

// TestServerSideApply walks one object through the life kubectl and a
// controller give it, checking values and managedFields at each step.
func TestServerSideApply(t *testing.T) {
	f := newFixture(t)
	m := f.deployments

	// 1. Create: the apply patch against nothing.
	obj, err := applyIgnoring(m, nil, ctApply, []byte(manifest(1, `"app":"web","tier":"frontend"`)), "kubectl", kubectlUA, false)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	d := obj.(*appsv1.Deployment)
	if d.Name != "web" || d.Namespace != "default" || *d.Spec.Replicas != 1 || d.Labels["tier"] != "frontend" {
		t.Fatalf("create: got %s/%s replicas %d labels %v, want default/web replicas 1 with tier", d.Namespace, d.Name, *d.Spec.Replicas, d.Labels)
	}
	if got, want := managers(d), []string{"kubectl/Apply"}; !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("create: managers = %v, want %v", got, want)
	}
	if e, _ := entry(d, "kubectl", metav1.ManagedFieldsOperationApply); !owns(e, "f:spec", "f:replicas") || e.APIVersion != "apps/v1" {
		t.Errorf("create: kubectl entry = %s %s, want apps/v1 owning spec.replicas", e.APIVersion, fields(e))
	}
	// The caller stores it: uid and resourceVersion are assigned.
	d.UID, d.ResourceVersion = "2f0c1c53-0000-4000-8000-0000000000aa", "1"

	// 2. The same manager applies again, without the tier label: owned
	// fields left out of the manifest are removed.
	obj, err = applyIgnoring(m, d, ctApply, []byte(manifest(2, `"app":"web"`)), "kubectl", kubectlUA, false)
	if err != nil {
		t.Fatalf("re-apply: %v", err)
	}
	d = obj.(*appsv1.Deployment)
	if _, ok := d.Labels["tier"]; ok || *d.Spec.Replicas != 2 || d.UID == "" {
		t.Fatalf("re-apply: labels %v replicas %d uid %q, want no tier, replicas 2, uid kept", d.Labels, *d.Spec.Replicas, d.UID)
	}

	// 3. Another manager applies a different replicas: a conflict.
	_, err = applyIgnoring(m, d, ctApply, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":5}}`), "autoscaler", "", false)
	if c := code(err); c != 409 || !apierrors.IsConflict(err) {
		t.Fatalf("conflict: error = %v (code %d), want a 409 Conflict", err, c)
	}
	var status apierrors.APIStatus
	errors.As(err, &status)
	causes := status.Status().Details.Causes
	wantCause := metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl"`, Field: ".spec.replicas"}
	if len(causes) != 1 || causes[0] != wantCause {
		t.Errorf("conflict: causes = %+v, want [%+v]", causes, wantCause)
	}

	// 3b. The same value is no conflict: both managers then own it.
	if _, err := applyIgnoring(m, d, ctApply, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2}}`), "autoscaler", "", false); err != nil {
		t.Errorf("same value: %v, want no conflict", err)
	}

	// 4. force=true takes the field over.
	obj, err = applyIgnoring(m, d, ctApply, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":5}}`), "autoscaler", "", true)
	if err != nil {
		t.Fatalf("force: %v", err)
	}
	d = obj.(*appsv1.Deployment)
	if *d.Spec.Replicas != 5 {
		t.Errorf("force: replicas = %d, want 5", *d.Spec.Replicas)
	}
	if e, ok := entry(d, "autoscaler", metav1.ManagedFieldsOperationApply); !ok || !owns(e, "f:spec", "f:replicas") {
		t.Errorf("force: autoscaler entry = %s (found %v), want it to own spec.replicas", fields(e), ok)
	}
	if e, _ := entry(d, "kubectl", metav1.ManagedFieldsOperationApply); owns(e, "f:spec", "f:replicas") {
		t.Errorf("force: kubectl still owns spec.replicas: %s", fields(e))
	}

	// 5. Non-apply patches are recorded as Update, under the fieldManager,
	// else the User-Agent's product name, else "unknown" (the field
	// manager's name for nobody).
	obj, err = applyIgnoring(m, d, ctMerge, []byte(`{"metadata":{"labels":{"a":"b"}}}`), "kubectl-label", kubectlUA, false)
	if err != nil {
		t.Fatalf("label: %v", err)
	}
	obj, err = applyIgnoring(m, obj, ctStrategic, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}}}}`), "", kubectlUA, false)
	if err != nil {
		t.Fatalf("edit: %v", err)
	}
	obj, err = applyIgnoring(m, obj, ctJSON, []byte(`[{"op":"add","path":"/metadata/annotations","value":{"note":"x"}}]`), "", "", false)
	if err != nil {
		t.Fatalf("json patch: %v", err)
	}
	d = obj.(*appsv1.Deployment)
	for _, want := range []struct {
		manager string
		keys    []string
	}{
		{"kubectl-label", []string{"f:metadata", "f:labels", "f:a"}},
		{"kubectl.1.32", []string{"f:containers", "f:image"}},
		{"unknown", []string{"f:metadata", "f:annotations", "f:note"}},
	} {
		e, ok := entry(d, want.manager, metav1.ManagedFieldsOperationUpdate)
		if !ok || !owns(e, want.keys...) {
			t.Errorf("manager %q: entry %s (found %v), want an Update entry owning %v; managers %v", want.manager, fields(e), ok, want.keys, managers(d))
		}
	}

	// 6. Applying to an object that predates managedFields: its fields go
	// to "before-first-apply", so changing one of them is a conflict.
	legacy := deployment()
	obj, err = applyIgnoring(m, legacy, ctApply, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":1}}`), "kubectl", "", false)
	if err != nil {
		t.Fatalf("legacy: %v", err)
	}
	if _, ok := entry(obj, "before-first-apply", metav1.ManagedFieldsOperationUpdate); !ok {
		t.Errorf("legacy: managers = %v, want before-first-apply/Update", managers(obj))
	}
	_, err = applyIgnoring(m, legacy, ctApply, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":3}}`), "kubectl", "", false)
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "before-first-apply") {
		t.Errorf("legacy change: error = %v, want a conflict with before-first-apply", err)
	}
}

// TestMigrateToServerSideApply replays kubectl's upgrade from client-side
// to server-side apply (csaupgrade): a JSON patch that rewrites
// managedFields, turning the client-side-apply Update entry into an Apply
// entry. The field manager takes managedFields from the patched object.
func TestMigrateToServerSideApply(t *testing.T) {
	f := newFixture(t)
	m := f.configMaps
	obj, err := m.Update(nil, configMap(), "kubectl-client-side-apply", "")
	if err != nil {
		t.Fatal(err)
	}
	cm := obj.(*corev1.ConfigMap)
	e := cm.ManagedFields[0]
	e.Manager, e.Operation = "kubectl", metav1.ManagedFieldsOperationApply
	value, err := json.Marshal([]metav1.ManagedFieldsEntry{e})
	if err != nil {
		t.Fatal(err)
	}
	body := `[{"op":"replace","path":"/metadata/managedFields","value":` + string(value) + `},{"op":"replace","path":"/metadata/resourceVersion","value":"9"}]`
	obj, err = applyIgnoring(m, cm, ctJSON, []byte(body), "", kubectlUA, false)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if got, want := managers(obj), []string{"kubectl/Apply"}; !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("migrate: managers = %v, want %v", got, want)
	}
	// kubectl can now drop a key by leaving it out of its manifest.
	obj, err = applyIgnoring(m, obj, ctApply, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"color":"blue"}}`), "kubectl", kubectlUA, false)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got, want := obj.(*corev1.ConfigMap).Data, map[string]string{"color": "blue"}; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("apply: data = %v, want %v", got, want)
	}
}

func TestServerSideApplyConfigMapYAML(t *testing.T) {
	f := newFixture(t)
	body := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  color: blue\n  count: \"3\"\n"
	obj, err := applyIgnoring(f.configMaps, nil, ctApply, []byte(body), "helm", "", false)
	if err != nil {
		t.Fatal(err)
	}
	cm := obj.(*corev1.ConfigMap)
	if want := map[string]string{"color": "blue", "count": "3"}; !equality.Semantic.DeepEqual(cm.Data, want) {
		t.Errorf("data = %v, want %v", cm.Data, want)
	}
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" {
		t.Errorf("type = %s %s, want v1 ConfigMap", cm.APIVersion, cm.Kind)
	}
	if e, ok := entry(cm, "helm", metav1.ManagedFieldsOperationApply); !ok || !owns(e, "f:data", "f:color") {
		t.Errorf("managedFields = %v, want helm/Apply owning data.color", cm.ManagedFields)
	}
}

func TestServerSideApplyErrors(t *testing.T) {
	f := newFixture(t)
	stored := created(t, f.deployments, deployment())
	const head = `"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}`

	tests := []struct {
		name         string
		current      runtime.Object
		body         string
		fieldManager string
		wantCode     int32
		wantMessage  string
	}{
		{name: "no fieldManager", body: `{` + head + `}`, wantCode: 422, wantMessage: "fieldManager: Required value: is required for apply patch"},
		{name: "no fieldManager on create", current: (*appsv1.Deployment)(nil), body: `{` + head + `}`, wantCode: 422},
		{name: "other kind", body: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"web"}}`, wantCode: 400},
		{name: "other version", body: `{"apiVersion":"apps/v1beta1","kind":"Deployment","metadata":{"name":"web"}}`, wantCode: 400},
		{name: "no apiVersion or kind", body: `{"metadata":{"name":"web"}}`, wantCode: 400},
		{name: "apiVersion not a string", body: `{"apiVersion":1,"kind":"Deployment"}`, wantCode: 400},
		{name: "other name", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"db"}}`, wantCode: 400},
		{name: "other namespace", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"prod"}}`, wantCode: 400},
		{name: "managedFields set", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","managedFields":[{"manager":"x"}]}}`, wantCode: 400},
		{name: "field not in schema", body: `{` + head + `,"spec":{"replica":3}}`, wantCode: 400},
		{name: "wrong type", body: `{` + head + `,"spec":{"replicas":"three"}}`, wantCode: 400},
		{name: "duplicate keys in a keyed list", body: `{` + head + `,"spec":{"template":{"spec":{"containers":[{"name":"a","env":[{"name":"X","value":"1"},{"name":"X","value":"2"}]}]}}}}`, wantCode: 400},
		{name: "quantity that does not parse", body: `{` + head + `,"spec":{"template":{"spec":{"containers":[{"name":"nginx","resources":{"limits":{"cpu":"lots"}}}]}}}}`, wantCode: 422},
		{name: "uid on create", current: (*appsv1.Deployment)(nil), body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","uid":"1234"}}`, wantCode: 409},
		{name: "not YAML", body: "{\x00\xff", wantCode: 400},
		{name: "a YAML list", body: "- a\n- b\n", wantCode: 400},
		{name: "a scalar", body: "42", wantCode: 400},
		{name: "empty", body: "", wantCode: 400},
		{name: "tabs", body: "apiVersion: apps/v1\n\tkind: Deployment\n", wantCode: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := tt.current
			if current == nil {
				current = stored
			} else if d, ok := current.(*appsv1.Deployment); ok && d == nil {
				current = nil
			}
			fm := tt.fieldManager
			if fm == "" && !strings.HasPrefix(tt.name, "no fieldManager") {
				fm = "kubectl"
			}
			_, err := applyIgnoring(f.deployments, current, ctApply, []byte(tt.body), fm, kubectlUA, false)
			if c := code(err); c != tt.wantCode {
				t.Fatalf("Apply() error = %v (code %d), want code %d", err, c, tt.wantCode)
			}
			if tt.wantMessage != "" && !strings.Contains(err.Error(), tt.wantMessage) {
				t.Errorf("Apply() error = %q, want it to contain %q", err, tt.wantMessage)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	f := newFixture(t)
	m := f.configMaps

	newCM := configMap()
	newCM.UID, newCM.ResourceVersion = "", ""
	before := newCM.DeepCopy()
	obj, err := m.Update(nil, newCM, "kubectl-create", kubectlUA)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if !equality.Semantic.DeepEqual(before, newCM) {
		t.Errorf("Update modified newObj:\n%s", diff.Diff(before, newCM))
	}
	cm := obj.(*corev1.ConfigMap)
	if got, want := managers(cm), []string{"kubectl-create/Update"}; !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("create: managers = %v, want %v", got, want)
	}
	if e := cm.ManagedFields[0]; !owns(e, "f:data", "f:color") || e.APIVersion != "v1" || e.Time == nil {
		t.Errorf("create: entry = %+v, want v1 owning data.color with a time", e)
	}
	cm.UID, cm.ResourceVersion = "2f0c1c53-0000-4000-8000-0000000000bb", "1"

	// A PUT without fieldManager, from kubectl: recorded under "kubectl".
	changed := cm.DeepCopy()
	changed.Data["color"] = "red"
	changed.Data["shape"] = "round"
	obj, err = m.Update(cm, changed, "", "kubectl/v1.32.5 (linux/amd64) kubernetes/9894294")
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if got, want := sorted(managers(obj)), []string{"kubectl-create/Update", "kubectl/Update"}; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("update: managers = %v, want %v", got, want)
	}
	if e, _ := entry(obj, "kubectl", metav1.ManagedFieldsOperationUpdate); !owns(e, "f:data", "f:shape") {
		t.Errorf("update: kubectl entry = %s, want it to own data.shape", fields(e))
	}
	// Updates never conflict: the field changed moves to its new manager.
	if e, _ := entry(obj, "kubectl-create", metav1.ManagedFieldsOperationUpdate); owns(e, "f:data", "f:color") || !owns(e, "f:data", "f:size") {
		t.Errorf("update: kubectl-create entry = %s, want data.size without data.color", fields(e))
	}

	// An apply after updates keeps the update managers and adds its own.
	obj, err = applyIgnoring(m, obj, ctApply, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"size":"l"}}`), "kubectl", "", true)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got, want := sorted(managers(obj)), []string{"kubectl-create/Update", "kubectl/Apply", "kubectl/Update"}; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("apply: managers = %v, want %v", got, want)
	}

	// An empty managedFields list resets tracking (kube's way to strip it):
	// the object has a uid and no managed fields, so nothing is recorded.
	reset := obj.DeepCopyObject().(*corev1.ConfigMap)
	reset.ManagedFields = []metav1.ManagedFieldsEntry{}
	obj, err = m.Update(obj, reset, "kubectl", "")
	if err != nil {
		t.Fatalf("reset: %v", err)
	}
	if got := managers(obj); len(got) != 0 {
		t.Errorf("reset: managers = %v, want none", got)
	}

	errTests := []struct {
		name         string
		live, newObj runtime.Object
		fieldManager string
		wantCode     int32
	}{
		{name: "fieldManager too long", newObj: configMap(), fieldManager: strings.Repeat("x", 129), wantCode: 422},
		{name: "fieldManager not printable", live: configMap(), newObj: configMap(), fieldManager: "a\tb", wantCode: 422},
		{name: "no new object", wantCode: 400},
		{name: "new object of another kind", newObj: deployment(), wantCode: 400},
		{name: "live object of another kind", live: deployment(), newObj: configMap(), wantCode: 400},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Update(tt.live, tt.newObj, tt.fieldManager, "")
			if c := code(err); c != tt.wantCode {
				t.Errorf("Update() error = %v (code %d), want code %d", err, c, tt.wantCode)
			}
		})
	}
}

func TestManagerName(t *testing.T) {
	tests := []struct {
		fieldManager, userAgent, want string
	}{
		{"kubectl-edit", kubectlUA, "kubectl-edit"},
		{"", kubectlUA, "kubectl.1.32"},
		{"", "kube-controller-manager/v1.32.0 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:deployment-controller", "kube-controller-manager"},
		{"", "no-slash", "no-slash"},
		{"", "", ""},
		{"", "tab\there/1", "tabhere"},
		{"", strings.Repeat("a", 200) + "/1", strings.Repeat("a", 128)},
		{"", strings.Repeat("a", 127) + "é/1", strings.Repeat("a", 127)}, // é does not fit whole
	}
	for _, tt := range tests {
		if got := managerName(tt.fieldManager, tt.userAgent); got != tt.want {
			t.Errorf("managerName(%q, %q) = %q, want %q", tt.fieldManager, tt.userAgent, got, tt.want)
		}
	}
}

func TestNewManager(t *testing.T) {
	f := newFixture(t)
	tc := NewTypeConverter(f.scheme)
	newDeployment := func() runtime.Object { return &appsv1.Deployment{} }
	tests := []struct {
		name      string
		scheme    *runtime.Scheme
		tc        bool
		gvk       schema.GroupVersionKind
		newObject func() runtime.Object
		wantErr   string
	}{
		{name: "ok", scheme: f.scheme, tc: true, gvk: deploymentGVK, newObject: newDeployment},
		{name: "nil scheme and converter", gvk: deploymentGVK, newObject: newDeployment, wantErr: "scheme is nil"},
		{name: "empty kind", scheme: f.scheme, tc: true, newObject: newDeployment, wantErr: "version and kind are required"},
		{name: "nil newObject", scheme: f.scheme, tc: true, gvk: deploymentGVK, wantErr: "newObject is nil"},
		{name: "newObject returns nil", scheme: f.scheme, tc: true, gvk: deploymentGVK, newObject: func() runtime.Object { return (*appsv1.Deployment)(nil) }, wantErr: "returned nil"},
		{name: "kind not in scheme", scheme: f.scheme, tc: true, gvk: appsv1.SchemeGroupVersion.WithKind("Nope"), newObject: newDeployment, wantErr: "scheme"},
		{name: "newObject of another type", scheme: f.scheme, tc: true, gvk: deploymentGVK, newObject: func() runtime.Object { return &corev1.ConfigMap{} }, wantErr: "newObject returns a *v1.ConfigMap"},
		{name: "no metadata", scheme: f.scheme, tc: true, gvk: appsv1.SchemeGroupVersion.WithKind("DeploymentList"), newObject: func() runtime.Object { return &appsv1.DeploymentList{} }, wantErr: "metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var conv = tc
			if !tt.tc {
				conv = nil
			}
			m, err := NewManager(tt.scheme, conv, tt.gvk, tt.newObject)
			if tt.wantErr == "" {
				if err != nil || m == nil {
					t.Fatalf("NewManager() = %v, %v; want a manager", m, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewManager() error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// A subresource's manager names the subresource in what it records, and
// keeps the current managed fields whatever the request's object carries,
// as kube-apiserver's field manager does for a subresource.
func TestSubresourceManager(t *testing.T) {
	f := newFixture(t)
	tc := NewTypeConverter(f.scheme)
	newConfigMap := func() runtime.Object { return &corev1.ConfigMap{} }
	if _, err := NewSubresourceManager(f.scheme, tc, configMapGVK, "", newConfigMap); err == nil || !strings.Contains(err.Error(), "subresource is empty") {
		t.Errorf("NewSubresourceManager without a subresource: %v, want an error", err)
	}
	m, err := NewSubresourceManager(f.scheme, tc, configMapGVK, "status", newConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	live := created(t, f.configMaps, configMap())

	forged := live.DeepCopy()
	forged.Data["color"] = "red"
	forged.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "forger", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{}}`)}}}
	tests := []struct {
		name  string
		write func() (runtime.Object, error)
		want  []string // managers, operation and subresource
	}{
		{"update", func() (runtime.Object, error) { return m.Update(live, forged, "writer", "") }, []string{"kubectl-create/Update/", "writer/Update/status"}},
		{"merge patch", func() (runtime.Object, error) {
			obj, _, err := m.Patch(live, Request{ContentType: ctMerge, Body: []byte(`{"data":{"color":"red"},"metadata":{"managedFields":[]}}`), FieldManager: "writer"})
			return obj, err
		}, []string{"kubectl-create/Update/", "writer/Update/status"}},
		{"apply", func() (runtime.Object, error) {
			return applyIgnoring(m, live, ctApply, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"color":"red"}}`), "writer", "", true)
		}, []string{"kubectl-create/Update/", "writer/Apply/status"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := tt.write()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range obj.(metav1.Object).GetManagedFields() {
				got = append(got, fmt.Sprintf("%s/%s/%s", e.Manager, e.Operation, e.Subresource))
				if e.Manager == "writer" && !owns(e, "f:data", "f:color") {
					t.Errorf("writer's entry %s, want data.color", fields(e))
				}
			}
			if !slices.Equal(sorted(got), tt.want) {
				t.Errorf("managed fields %v, want %v", got, tt.want)
			}
		})
	}
}

// TestHostileBodies sends bodies nested just under, at and far beyond the
// JSON decoders' depth limit of 10,000, and a YAML alias bomb, with every
// content type: each must come back, as a result or a 4xx, without
// exhausting the stack, the memory or the clock.
func TestHostileBodies(t *testing.T) {
	f := newFixture(t)
	stored := created(t, f.deployments, deployment())

	type body struct{ name, contentType, body string }
	var bodies []body
	for _, depth := range []int{9_990, 10_000, 100_000} {
		arrays := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		objects := strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
		bodies = append(bodies,
			body{"operation value", ctJSON, `[{"op":"add","path":"/metadata/annotations","value":{"x":` + arrays + `}}]`},
			body{"patch", ctJSON, arrays},
			body{"annotation", ctMerge, `{"metadata":{"annotations":{"x":` + objects + `}}}`},
			body{"spec", ctMerge, `{"spec":` + objects + `}`},
			body{"labels", ctStrategic, `{"metadata":{"labels":` + objects + `}}`},
			body{"containers", ctStrategic, `{"spec":{"template":{"spec":{"containers":` + arrays + `}}}}`},
			body{"annotation", ctApply, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","annotations":{"x":` + objects + `}}}`},
			body{"flow", ctApply, "a: " + arrays + "\n"},
		)
		for i := range bodies[len(bodies)-8:] {
			bodies[len(bodies)-8+i].name += fmt.Sprintf("/%d", depth)
		}
	}
	// Deep and wide: 1,000 levels over 3 MiB. jsonpatch.MergePatch took a
	// minute over this one.
	wide := strings.Repeat(`{"a":`, 1000) + `"` + strings.Repeat("x", 3<<20) + `"` + strings.Repeat("}", 1000)
	bodies = append(bodies,
		body{"wide", ctMerge, `{"metadata":{"annotations":{"x":` + wide + `}}}`},
		body{"wide", ctStrategic, `{"metadata":{"annotations":{"x":` + wide + `}}}`},
		body{"wide", ctJSON, `[{"op":"add","path":"/metadata/annotations","value":{"x":` + wide + `}}]`},
		body{"wide", ctApply, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","annotations":{"x":` + wide + `}}}`},
	)
	var block strings.Builder
	for i := range 1000 {
		block.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	block.WriteString(strings.Repeat(" ", 1000) + "b: 1\n")
	bodies = append(bodies, body{"block/1000", ctApply, block.String()})
	bomb := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	for i, prev := 'b', 'a'; i <= 'i'; i, prev = i+1, i {
		bomb += fmt.Sprintf("%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n", i, i, prev, prev, prev, prev, prev, prev, prev, prev, prev)
	}
	bodies = append(bodies, body{"alias bomb", ctApply, bomb})

	for _, b := range bodies {
		t.Run(b.contentType+"/"+b.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := applyIgnoring(f.deployments, stored, b.contentType, []byte(b.body), "m", "", false)
				done <- err
			}()
			select {
			case err := <-done:
				t.Logf("code %d: %.100v", code(err), err)
				if c := code(err); c != 0 && (c < 400 || c > 499) {
					t.Errorf("Apply() error = %v (code %d), want a result or a 4xx", err, c)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Apply() did not return within 20s")
			}
		})
	}
}

// TestConcurrentApply runs every patch type on one Manager and one stored
// object from many goroutines; run it with -race.
func TestConcurrentApply(t *testing.T) {
	f := newFixture(t)
	stored := created(t, f.deployments, deployment())
	bodies := map[string]string{
		ctJSON:      `[{"op":"replace","path":"/spec/replicas","value":2}]`,
		ctMerge:     `{"spec":{"replicas":3}}`,
		ctStrategic: `{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}}}}`,
		ctApply:     `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":4}}`,
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(bodies))
	for i := range 8 {
		for ct, body := range bodies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := applyIgnoring(f.deployments, stored, ct, []byte(body), fmt.Sprintf("m%d", i), "", ct == ctApply); err != nil {
					errs <- fmt.Errorf("%s: %w", ct, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// FuzzApply feeds random bodies to every content type and fieldValidation
// value, with and without a stored object: Patch must never panic, must
// answer with an API error of a 4xx code or a typed object, and must leave
// current alone. typ's low two bits pick the content type, bit 2 the kind,
// bit 3 wrapping, and the high four bits fieldValidation.
func FuzzApply(f *testing.F) {
	fx := newFixture(f)
	storedD := created(f, fx.deployments, deployment())
	storedCM := created(f, fx.configMaps, configMap())
	pristineD, pristineCM := storedD.DeepCopy(), storedCM.DeepCopy()

	seeds := []struct {
		typ  uint8
		body string
	}{
		{0, `[{"op":"add","path":"/metadata/labels/a","value":"b"}]`},
		{0, `[{"op":"copy","from":"/spec","path":"/spec/x"},{"op":"move","from":"/metadata/labels","path":"/metadata/annotations"}]`},
		{0, `[{"op":"test","path":"/data/color","value":"blue"},{"op":"remove","path":"/data/size"}]`},
		{1, `{"metadata":{"labels":{"a":"b"}}}`},
		{1, `{"data":{"color":null},"spec":{"replicas":null}}`},
		{2, `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"nginx"}],"containers":[{"image":"nginx:1.26","name":"nginx"}]}}}}`},
		{2, `{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}},"metadata":{"$deleteFromPrimitiveList/finalizers":["x"]}}`},
		{2, `{"data":{"$patch":"replace"},"spec":{"template":{"spec":{"containers":[{"name":"nginx","$patch":"delete"}]}}}}`},
		{3, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":3}}`},
		{3, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n"},
		{3, "a: &a [*a]\n"},
	}
	for _, s := range seeds {
		for _, withCurrent := range []bool{true, false} {
			f.Add(s.typ, []byte(s.body), false, withCurrent)
			f.Add(s.typ|4, []byte(s.body), true, withCurrent)
		}
	}
	for typ := range uint8(4) {
		f.Add(typ|8, []byte(`[{"name":"nginx","image":"nginx:1.27","env":[{"name":"A","value":"1"}]}]`), false, true)
		f.Add(typ|8|4, []byte(`{"color":"red","size":null}`), false, true)
		// Warn and Strict, with unknown and duplicate fields.
		f.Add(typ|8|16, []byte(`[{"name":"nginx","nope":1,"image":"a","image":"b"}]`), false, true)
		f.Add(typ|8|4|32, []byte(`{"color":"red","color":"blue"}`), false, true)
	}
	validations := []string{metav1.FieldValidationIgnore, metav1.FieldValidationWarn, metav1.FieldValidationStrict}
	f.Fuzz(func(t *testing.T, typ uint8, body []byte, force, withCurrent bool) {
		contentType := Types[int(typ)%len(Types)]
		validation := validations[int(typ>>4)%len(validations)]
		if contentType != ctApply {
			force = false // only a 422 otherwise, which hides the rest
		}
		m, current, pristine := fx.deployments, runtime.Object(storedD), runtime.Object(pristineD)
		if typ&4 != 0 {
			m, current, pristine = fx.configMaps, storedCM, pristineCM
		}
		if typ&8 != 0 {
			// Put the random bytes where the kind's schema and merge keys
			// apply, past the checks a random document rarely gets through.
			body = wrap(contentType, m == fx.configMaps, body)
		}
		if !withCurrent {
			current = nil
		}
		got, _, err := m.Patch(current, Request{ContentType: contentType, Body: body, FieldManager: "fuzz", Force: force, FieldValidation: validation, UserAgent: "fuzzer/1.0"})
		if err != nil {
			if c := code(err); c < 400 || c > 499 {
				t.Fatalf("Patch(%s, %s, %q) error = %v (code %d), want a 4xx API error", contentType, validation, body, err, c)
			}
		} else if got == nil || got.GetObjectKind().GroupVersionKind() != m.gvk {
			t.Fatalf("Apply(%s, %q) = %#v, want a %s", contentType, body, got, m.gvk)
		}
		if withCurrent && !equality.Semantic.DeepEqual(current, pristine) {
			t.Fatalf("Apply(%s, %q) modified current", contentType, body)
		}
	})
}

// wrap embeds body in a patch of contentType that puts it in the
// containers of a Deployment or the data of a ConfigMap.
func wrap(contentType string, configMap bool, body []byte) []byte {
	b := string(body)
	switch {
	case contentType == ctJSON && configMap:
		b = `[{"op":"add","path":"/data","value":` + b + `}]`
	case contentType == ctJSON:
		b = `[{"op":"replace","path":"/spec/template/spec/containers","value":` + b + `}]`
	case configMap:
		b = `{"data":` + b + `}`
	default:
		b = `{"spec":{"template":{"spec":{"containers":` + b + `}}}}`
	}
	if contentType == ctApply {
		kind := `"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},`
		if configMap {
			kind = `"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},`
		}
		b = "{" + kind + b[1:]
	}
	return []byte(b)
}

// applyIgnoring is Patch with FieldValidation Ignore, as most tests want:
// unknown fields are dropped and the last of duplicate keys wins.
func applyIgnoring(m *Manager, current runtime.Object, contentType string, body []byte, fieldManager, userAgent string, force bool) (runtime.Object, error) {
	obj, _, err := m.Patch(current, Request{
		ContentType:     contentType,
		Body:            body,
		FieldManager:    fieldManager,
		Force:           force,
		FieldValidation: metav1.FieldValidationIgnore,
		UserAgent:       userAgent,
	})
	return obj, err
}
