package opa

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// explainInput is the admission input of creating obj, a core/v1 object
// of kind and resource.
func explainInput(t *testing.T, obj runtime.Object, kind, resource string) ast.Value {
	t.Helper()
	meta, err := apimeta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	a := admission.NewAttributesRecord(obj, nil, corev1.SchemeGroupVersion.WithKind(kind), meta.GetNamespace(), meta.GetName(), corev1.SchemeGroupVersion.WithResource(resource), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "alice"})
	input, err := Input(a)
	if err != nil {
		t.Fatal(err)
	}
	return input
}

// Explain decides as Eval does, and traces the evaluation; where the
// input holds no data, the trace shows the values it bound.
func TestExplain(t *testing.T) {
	set := compile(t, map[string]string{"pods.rego": `package kubernetes.admission

deny contains msg if {
	input.request.kind.kind == "Pod"
	some c in input.request.object.spec.containers
	not startswith(c.image, "registry.example/")
	msg := sprintf("image %s is from another registry", [c.image])
}
`})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "docker.io/nginx"}}}}
	input := explainInput(t, pod, "Pod", "pods")
	want, err := set.Eval(context.Background(), input)
	if err != nil {
		t.Fatal(err)
	}
	got, trace, err := set.Explain(context.Background(), input)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Explain's decisions differ from Eval's (-Eval +Explain):\n%s", diff)
	}
	for _, s := range []string{"pods.rego:3", "Enter data.trustplane.policies.pods.deny", `"docker.io/nginx"`, `"image docker.io/nginx is from another registry"`} {
		if !strings.Contains(trace, s) {
			t.Errorf("the trace does not show %q:\n%s", s, trace)
		}
	}
	if strings.Contains(trace, Redacted) {
		t.Errorf("the trace of an input without data redacts:\n%s", trace)
	}
}

// An evaluation error is Explain's error, with the trace up to it.
func TestExplainError(t *testing.T) {
	set := compile(t, map[string]string{"conflict.rego": `package kubernetes.admission

x := 1 if input.request
x := 2 if input.request

deny contains "x" if x == 1
`})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod"}}
	_, trace, err := set.Explain(context.Background(), explainInput(t, pod, "Pod", "pods"))
	if err == nil {
		t.Fatal("Explain of a conflicting rule: no error")
	}
	if !strings.Contains(trace, "Enter data.trustplane.policies.conflict.deny") {
		t.Errorf("no trace up to the error:\n%s", trace)
	}
}

// Whatever a policy does with a Secret's data (copy it, decode it, take
// it apart, trace it, build a message of it), the trace shows none of
// it; what the input holds besides shows.
func TestExplainRedactsSecretData(t *testing.T) {
	const value = `s3cr"et-wörd<9>`
	set := compile(t, map[string]string{"peek.rego": `package kubernetes.admission

deny contains msg if {
	input.request.kind.kind == "Secret"
	input.request.namespace == "prod"
	encoded := input.request.object.data.password
	v := base64.decode(encoded)
	copy := v
	copy != "guess"
	parts := split(copy, "-")
	trace(parts[1])
	trace(sprintf("%s %s", [upper(v), base64url.encode(v)]))
	whole := input.request.object.data
	count(whole) == 1
	msg := sprintf("Secret %s has a password", [input.request.name])
}
`})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "prod"}, Data: map[string][]byte{"password": []byte(value)}}
	_, trace, err := set.Explain(context.Background(), explainInput(t, secret, "Secret", "secrets"))
	if err != nil {
		t.Fatal(err)
	}
	encoded := base64.StdEncoding.EncodeToString([]byte(value))
	for _, leak := range []string{value, encoded, base64.URLEncoding.EncodeToString([]byte(value)), "s3cr", "wörd", `w\u00f6rd`, "WÖRD", "S3CR"} {
		if strings.Contains(trace, leak) {
			t.Errorf("the trace shows %q:\n%s", leak, trace)
		}
	}
	for _, shown := range []string{`"db"`, `"prod"`, `"guess"`, `"Secret"`, Redacted} {
		if !strings.Contains(trace, shown) {
			t.Errorf("the trace does not show %s:\n%s", shown, trace)
		}
	}
}
