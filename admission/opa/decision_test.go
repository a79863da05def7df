package opa

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// A decision rule whose every body names other kinds, or other
// operations, is not evaluated for a request, and decides what an
// evaluation would: nothing. A rule that names them only through a helper
// rule, or not at all, is evaluated for every request.
func TestEvalOnlyRulesOfTheKindAndOperation(t *testing.T) {
	set := compile(t, map[string]string{
		"cm.rego":     "package kubernetes.admission\n\ndeny contains \"cm\" if input.request.kind.kind == \"ConfigMap\"\n\nwarn contains \"cm\" if input.request.kind.kind in {\"ConfigMap\", \"Pod\"}\n",
		"any.rego":    "package kubernetes.admission\n\ndeny contains \"any\" if input.request.name == \"x\"\n",
		"helper.rego": "package kubernetes.admission\n\ndeny contains \"helper\" if is_secret\n\nis_secret if input.request.kind.kind == \"Secret\"\n",
		"mixed.rego":  "package kubernetes.admission\n\ndeny contains \"mixed\" if input.request.kind.kind == \"ConfigMap\"\n\nwarn contains \"mixed\" if input.request.name == \"x\"\n",
		"secret.rego": "package kubernetes.admission\n\ndeny contains \"secret\" if {\n\tinput.request.namespace == \"team\"\n\tinput.request.kind.kind = \"Secret\"\n}\n",
		"ops.rego": "package kubernetes.admission\n\n" +
			"deny contains \"ops\" if {\n\tinput.request.kind.kind == \"Secret\"\n\tinput.request.operation == \"CREATE\"\n}\n\n" +
			"deny contains \"ops\" if {\n\tinput.request.operation in {\"UPDATE\", \"DELETE\"}\n\tinput.request.kind.kind == \"ConfigMap\"\n}\n\n" +
			"warn contains \"ops\" if input.request.operation == \"UPDATE\"\n",
	})
	evaluated := func(kind, op string) []string {
		var rules []string
		for _, r := range set.scoped(kind, op).results {
			rules = append(rules, set.policies[r.policy].Name+"."+r.rule)
		}
		return rules
	}
	for _, tc := range []struct {
		kind, op string
		want     []string
	}{
		{"Secret", "CREATE", []string{"any.deny", "helper.deny", "mixed.warn", "ops.deny", "secret.deny"}},
		{"Secret", "UPDATE", []string{"any.deny", "helper.deny", "mixed.warn", "ops.warn", "secret.deny"}},
		{"Secret", "DELETE", []string{"any.deny", "helper.deny", "mixed.warn", "secret.deny"}},
		{"ConfigMap", "CREATE", []string{"any.deny", "cm.deny", "cm.warn", "helper.deny", "mixed.deny", "mixed.warn"}},
		{"ConfigMap", "DELETE", []string{"any.deny", "cm.deny", "cm.warn", "helper.deny", "mixed.deny", "mixed.warn", "ops.deny"}},
		{"Pod", "CONNECT", []string{"any.deny", "cm.warn", "helper.deny", "mixed.warn"}},
		{"Widget", "UPDATE", []string{"any.deny", "helper.deny", "mixed.warn", "ops.warn"}},
		{"Widget", "", []string{"any.deny", "helper.deny", "mixed.warn"}},
	} {
		if diff := cmp.Diff(tc.want, evaluated(tc.kind, tc.op)); diff != "" {
			t.Errorf("%s %s: rules evaluated (-want +got):\n%s", tc.op, tc.kind, diff)
		}
	}

	for name, tc := range map[string]struct {
		kind string
		op   admission.Operation
		want []Decision
	}{
		"secret": {kind: "Secret", op: admission.Create, want: []Decision{
			{Policy: "any", Enforcement: Deny, Deny: []string{"any"}},
			{Policy: "cm", Enforcement: Deny, Deny: []string{}, Warn: []string{}},
			{Policy: "helper", Enforcement: Deny, Deny: []string{"helper"}},
			{Policy: "mixed", Enforcement: Deny, Deny: []string{}, Warn: []string{"mixed"}},
			{Policy: "ops", Enforcement: Deny, Deny: []string{"ops"}, Warn: []string{}},
			{Policy: "secret", Enforcement: Deny, Deny: []string{"secret"}},
		}},
		"secret update": {kind: "Secret", op: admission.Update, want: []Decision{
			{Policy: "any", Enforcement: Deny, Deny: []string{"any"}},
			{Policy: "cm", Enforcement: Deny, Deny: []string{}, Warn: []string{}},
			{Policy: "helper", Enforcement: Deny, Deny: []string{"helper"}},
			{Policy: "mixed", Enforcement: Deny, Deny: []string{}, Warn: []string{"mixed"}},
			{Policy: "ops", Enforcement: Deny, Deny: []string{}, Warn: []string{"ops"}},
			{Policy: "secret", Enforcement: Deny, Deny: []string{"secret"}},
		}},
		"configmap": {kind: "ConfigMap", op: admission.Create, want: []Decision{
			{Policy: "any", Enforcement: Deny, Deny: []string{"any"}},
			{Policy: "cm", Enforcement: Deny, Deny: []string{"cm"}, Warn: []string{"cm"}},
			{Policy: "helper", Enforcement: Deny, Deny: []string{}},
			{Policy: "mixed", Enforcement: Deny, Deny: []string{"mixed"}, Warn: []string{"mixed"}},
			{Policy: "ops", Enforcement: Deny, Deny: []string{}, Warn: []string{}},
			{Policy: "secret", Enforcement: Deny, Deny: []string{}},
		}},
		"configmap delete": {kind: "ConfigMap", op: admission.Delete, want: []Decision{
			{Policy: "any", Enforcement: Deny, Deny: []string{"any"}},
			{Policy: "cm", Enforcement: Deny, Deny: []string{"cm"}, Warn: []string{"cm"}},
			{Policy: "helper", Enforcement: Deny, Deny: []string{}},
			{Policy: "mixed", Enforcement: Deny, Deny: []string{"mixed"}, Warn: []string{"mixed"}},
			{Policy: "ops", Enforcement: Deny, Deny: []string{"ops"}, Warn: []string{}},
			{Policy: "secret", Enforcement: Deny, Deny: []string{}},
		}},
		"a kind no policy names": {kind: "Widget", op: admission.Create, want: []Decision{
			{Policy: "any", Enforcement: Deny, Deny: []string{"any"}},
			{Policy: "cm", Enforcement: Deny, Deny: []string{}, Warn: []string{}},
			{Policy: "helper", Enforcement: Deny, Deny: []string{}},
			{Policy: "mixed", Enforcement: Deny, Deny: []string{}, Warn: []string{"mixed"}},
			{Policy: "ops", Enforcement: Deny, Deny: []string{}, Warn: []string{}},
			{Policy: "secret", Enforcement: Deny, Deny: []string{}},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "team"}}
			var options runtime.Object = &metav1.CreateOptions{}
			switch tc.op {
			case admission.Update:
				options = &metav1.UpdateOptions{}
			case admission.Delete:
				options = &metav1.DeleteOptions{}
			}
			a := admission.NewAttributesRecord(obj, obj, schema.GroupVersionKind{Version: "v1", Kind: tc.kind}, "team", "x", schema.GroupVersionResource{Version: "v1", Resource: "things"}, "", tc.op, options, false, &user.DefaultInfo{Name: "alice"})
			input, got := decide(t, set, a)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
			// The query chosen for the request against the one of every
			// rule: the same decisions.
			all := *set
			all.byScope = map[[2]string]*query{}
			for k := range set.byScope {
				all.byScope[k] = set.query
			}
			every, err := all.Eval(context.Background(), input)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(every, got); diff != "" {
				t.Errorf("decisions of the chosen query against those of every rule (-every +chosen):\n%s", diff)
			}
		})
	}
}

// A body that names a local variable input ([input] := [...]) reads it,
// not the request: its checks on "input" are no scope, and the rule is
// evaluated for every request.
func TestScopeOfShadowedInput(t *testing.T) {
	set := compile(t, map[string]string{
		"shadow.rego": "package kubernetes.admission\n\ndeny contains \"shadow\" if {\n\t[input] := [{\"request\": {\"operation\": \"CREATE\", \"kind\": {\"kind\": \"Secret\"}}}]\n\tinput.request.operation == \"CREATE\"\n\tinput.request.kind.kind == \"Secret\"\n}\n",
	})
	if !set.appliesTo("ConfigMap", "UPDATE") {
		t.Fatal("the shadowing rule is left out of a ConfigMap update's query")
	}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "team"}}
	a := admission.NewAttributesRecord(obj, obj, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "team", "x", corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Update, &metav1.UpdateOptions{}, false, &user.DefaultInfo{Name: "alice"})
	_, got := decide(t, set, a)
	want := []Decision{{Policy: "shadow", Enforcement: Deny, Deny: []string{"shadow"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

// decide is set's decisions for a, with the input they were made of.
func decide(t *testing.T, set *Set, a admission.Attributes) (ast.Value, []Decision) {
	t.Helper()
	input, err := Input(a)
	if err != nil {
		t.Fatal(err)
	}
	got, err := set.Eval(context.Background(), input)
	if err != nil {
		t.Fatal(err)
	}
	return input, got
}
