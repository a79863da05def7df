package opa

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// A policy whose every decision rule names other kinds is not evaluated
// for a request, and decides what an evaluation would: nothing. A policy
// that names kinds only through a helper rule, or not at all, is
// evaluated for every kind.
func TestEvalOnlyPoliciesOfTheKind(t *testing.T) {
	set := compile(t, map[string]string{
		"cm.rego":     "package kubernetes.admission\n\ndeny contains \"cm\" if input.request.kind.kind == \"ConfigMap\"\n\nwarn contains \"cm\" if input.request.kind.kind in {\"ConfigMap\", \"Pod\"}\n",
		"any.rego":    "package kubernetes.admission\n\ndeny contains \"any\" if input.request.name == \"x\"\n",
		"helper.rego": "package kubernetes.admission\n\ndeny contains \"helper\" if is_secret\n\nis_secret if input.request.kind.kind == \"Secret\"\n",
		"mixed.rego":  "package kubernetes.admission\n\ndeny contains \"mixed\" if input.request.kind.kind == \"ConfigMap\"\n\nwarn contains \"mixed\" if input.request.name == \"x\"\n",
		"secret.rego": "package kubernetes.admission\n\ndeny contains \"secret\" if {\n\tinput.request.namespace == \"team\"\n\tinput.request.kind.kind = \"Secret\"\n}\n",
	})
	kinds := map[string]map[string]bool{}
	for _, p := range set.policies {
		kinds[p.Name] = p.kinds
	}
	wantKinds := map[string]map[string]bool{
		"any": nil, "helper": nil, "mixed": nil,
		"cm":     {"ConfigMap": true, "Pod": true},
		"secret": {"Secret": true},
	}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}

	for name, tc := range map[string]struct {
		kind string
		want []Decision
	}{
		"secret": {kind: "Secret", want: []Decision{
			{Policy: "any", Enforcement: Deny, Deny: []string{"any"}},
			{Policy: "cm", Enforcement: Deny, Deny: []string{}, Warn: []string{}},
			{Policy: "helper", Enforcement: Deny, Deny: []string{"helper"}},
			{Policy: "mixed", Enforcement: Deny, Deny: []string{}, Warn: []string{"mixed"}},
			{Policy: "secret", Enforcement: Deny, Deny: []string{"secret"}},
		}},
		"configmap": {kind: "ConfigMap", want: []Decision{
			{Policy: "any", Enforcement: Deny, Deny: []string{"any"}},
			{Policy: "cm", Enforcement: Deny, Deny: []string{"cm"}, Warn: []string{"cm"}},
			{Policy: "helper", Enforcement: Deny, Deny: []string{}},
			{Policy: "mixed", Enforcement: Deny, Deny: []string{"mixed"}, Warn: []string{"mixed"}},
			{Policy: "secret", Enforcement: Deny, Deny: []string{}},
		}},
		"a kind no policy names": {kind: "Widget", want: []Decision{
			{Policy: "any", Enforcement: Deny, Deny: []string{"any"}},
			{Policy: "cm", Enforcement: Deny, Deny: []string{}, Warn: []string{}},
			{Policy: "helper", Enforcement: Deny, Deny: []string{}},
			{Policy: "mixed", Enforcement: Deny, Deny: []string{}, Warn: []string{"mixed"}},
			{Policy: "secret", Enforcement: Deny, Deny: []string{}},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "team"}}
			a := admission.NewAttributesRecord(obj, nil, schema.GroupVersionKind{Version: "v1", Kind: tc.kind}, "team", "x", schema.GroupVersionResource{Version: "v1", Resource: "things"}, "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "alice"})
			input, err := Input(a)
			if err != nil {
				t.Fatal(err)
			}
			got, err := set.Eval(context.Background(), input)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
		})
	}
}
