package opa

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
)

// The decision rules a kind and operation get are evaluated as one merged
// rule (see mergedModule), which decides as each rule does on its own:
// the same messages, warnings and patches for each policy, in the same
// order, and an error wherever one of them errs.
func TestMergedRulesDecideAsEachRule(t *testing.T) {
	set := compile(t, map[string]string{
		"a.rego": `package kubernetes.admission

deny contains msg if {
	input.request.kind.kind == "Secret"
	msg := sprintf("a: %s", [input.request.name])
}

deny contains "same" if input.request.kind.kind == "Secret"

deny contains "same" if input.request.namespace == "team"

warn contains {"not": "a string"} if input.request.kind.kind == "Secret"

warn contains 3 if input.request.operation == "CREATE"
`,
		"b.rego": `package kubernetes.admission

deny contains "same" if input.request.kind.kind == "Secret"

deny contains msg if {
	input.request.operation in {"CREATE", "UPDATE"}
	some k, v in input.request.object.data
	every c in ["x"] { c != k }
	msg := concat(" ", ["b:", k, size(v)])
}

size(x) := "long" if count(x) > 3
else := "short"

patch contains {"op": "add", "path": "/metadata/labels", "value": {}} if input.request.operation == "CREATE"

patch contains {"op": "add", "path": "/metadata/labels/b", "value": "1"} if {
	input.request.operation == "CREATE"
	input.request.kind.kind == "ConfigMap"
}
`,
		"c.rego": `package kubernetes.admission

deny contains msg if {
	input.request.kind.kind == "ConfigMap"
	total := sum([n | some n in input.request.object.numbers])
	msg := sprintf("c: %d", [total])
}

deny contains "c: with" if {
	input.request.kind.kind == "Secret"
	team with input.request.namespace as "team"
}

team if input.request.namespace == "team"

deny contains "c: error" if {
	input.request.name == "boom"
	to_number("x")
}

patch contains {"op": "add", "path": "/metadata/labels/c", "value": input.request.name} if input.request.operation == "CREATE"
`,
		"d.rego": `package kubernetes.admission

deny contains "d" if input.request.kind.kind == "Pod"
`,
	})
	if set.merged == 0 {
		t.Fatal("no kind and operation is evaluated with a merged rule")
	}
	ctx := context.Background()
	merged := 0
	for _, kind := range []string{"Secret", "ConfigMap", "Pod"} {
		for _, op := range []string{"CREATE", "UPDATE", "DELETE"} {
			for _, name := range []string{"db", "boom"} {
				for _, ns := range []string{"team", "other"} {
					in := ast.MustInterfaceToValue(map[string]any{"request": map[string]any{
						"kind": map[string]any{"group": "", "version": "v1", "kind": kind}, "operation": op, "name": name, "namespace": ns,
						"object": map[string]any{"data": map[string]any{"k": "dmFsdWU=", "x": "eA=="}, "numbers": []any{1, 2}},
					}})
					q := set.queryFor(in)
					if q.merged {
						merged++
					}
					got, gotErr := set.Eval(ctx, in)
					want, wantErr := set.eval(ctx, set.query, in)
					what := fmt.Sprintf("%s %s %s/%s", op, kind, ns, name)
					if (gotErr != nil) != (wantErr != nil) {
						t.Errorf("%s: error %v, each rule on its own: %v", what, gotErr, wantErr)
						continue
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s: decisions (-each rule +merged):\n%s", what, diff)
					}
				}
			}
		}
	}
	if merged == 0 {
		t.Error("no request was evaluated with a merged rule")
	}
}

// Should the merged rule not compile, the rules are not merged, and the
// set evaluates each: the merge is a saving, never a reason to refuse
// policies that compile. (No policy can make it fail: this one defines a
// rule where the merged modules are, which Compile refuses of a policy.)
func TestMergeThatDoesNotCompileIsLeftOut(t *testing.T) {
	ctx := context.Background()
	parse := func(file, src string) *ast.Module {
		m, err := ast.ParseModuleWithOpts(file, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	served := map[string]*ast.Module{
		"a.rego": parse("a.rego", "package trustplane.policies.a\n\ndeny contains \"a\" if input.x\n"),
		"b.rego": parse("b.rego", "package trustplane.policies.b\n\ndeny contains \"b\" if input.x\n"),
	}
	policies := []Policy{{Name: "a", File: "a.rego", rules: []string{"deny"}}, {Name: "b", File: "b.rego", rules: []string{"deny"}}}
	those := map[[2]string][]ruleRef{{"", ""}: {{0, "deny"}, {1, "deny"}}}
	d := NewData()
	compiler, err := d.compileModules(ctx, served)
	if err != nil {
		t.Fatal(err)
	}
	if c, merged := d.mergeRules(ctx, compiler, served, policies, those); c == compiler || len(merged) != 1 {
		t.Fatalf("two rules: %d merged modules", len(merged))
	}
	served["conflict.rego"] = parse("conflict.rego", "package trustplane\n\nmerged[\"0\"] := 1\n")
	if compiler, err = d.compileModules(ctx, served); err != nil {
		t.Fatal(err)
	}
	if c, merged := d.mergeRules(ctx, compiler, served, policies, those); c != compiler || merged != nil {
		t.Errorf("a merge that does not compile: %d merged modules", len(merged))
	}
}
