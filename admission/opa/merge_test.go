package opa

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
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
					want, wantErr := set.eval(ctx, set.query, in, 0, nil)
					what := fmt.Sprintf("%s %s %s/%s", op, kind, ns, name)
					if (gotErr != nil) != (wantErr != nil) {
						t.Errorf("%s: error %v, each rule on its own: %v", what, gotErr, wantErr)
						continue
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s: decisions (-each rule +merged):\n%s", what, diff)
					}
					for _, q := range []*query{q, set.query} {
						checkRunAsRego(t, what, q, in)
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
	if c, merged, err := d.mergeRules(ctx, compiler, served, policies, those); c == compiler || len(merged) != 1 || err != nil {
		t.Fatalf("two rules: %d merged modules, %v", len(merged), err)
	}
	served["conflict.rego"] = parse("conflict.rego", "package trustplane\n\nmerged[\"0\"] := 1\n")
	if compiler, err = d.compileModules(ctx, served); err != nil {
		t.Fatal(err)
	}
	if c, merged, err := d.mergeRules(ctx, compiler, served, policies, those); c != compiler || merged != nil || err == nil {
		t.Errorf("a merge that does not compile: %d merged modules, %v", len(merged), err)
	}
}

// A body with a variable named as the merged rule would be, bound by =
// (which the compiler does not rename), is merged all the same, under
// another name.
func TestMergedRuleNamedApartFromVariables(t *testing.T) {
	set := compile(t, map[string]string{
		"a.rego": "package kubernetes.admission\n\ndeny contains msg if {\n\tdecisions = [\"a\", input.request.name]\n\tmsg := concat(\" \", decisions)\n}\n",
		"b.rego": "package kubernetes.admission\n\ndeny contains msg if {\n\tdecisions1 = \"b\"\n\tmsg := decisions1\n}\n",
	})
	if set.merged == 0 || set.Unmerged() != nil {
		t.Fatalf("%d merged modules: %v", set.merged, set.Unmerged())
	}
	in := ast.MustInterfaceToValue(map[string]any{"request": map[string]any{"kind": map[string]any{"kind": "Secret"}, "operation": "CREATE", "name": "x"}})
	got, err := set.Eval(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := []Decision{{Policy: "a", Enforcement: Deny, Deny: []string{"a x"}}, {Policy: "b", Enforcement: Deny, Deny: []string{"b"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

// A policy may not read the merged modules: what it read would change
// with the policies around it.
func TestMergedModulesNotForPolicies(t *testing.T) {
	for name, src := range map[string]string{
		"ref":    "package kubernetes.admission\n\ndeny contains \"x\" if data.trustplane.merged[_]\n",
		"import": "package kubernetes.admission\n\nimport data.trustplane.merged\n\ndeny contains \"x\" if merged\n",
		"helper": "package lib\n\nm := data.trustplane.merged\n",
	} {
		_, err := Compile(context.Background(), map[string][]byte{name + ".rego": []byte(src)})
		if err == nil || !strings.Contains(err.Error(), "data.trustplane.merged is the server's") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A body that can hold for every kind is copied into the merged rule of
// each: past a bound, the kinds left are evaluated rule by rule, and
// decide the same.
func TestMergedBodiesBounded(t *testing.T) {
	files := map[string]string{}
	for i := range 60 {
		files[fmt.Sprintf("k%d.rego", i)] = fmt.Sprintf("package kubernetes.admission\n\ndeny contains \"k%d\" if input.request.kind.kind == \"K%d\"\n", i, i)
	}
	for i := range 20 {
		files[fmt.Sprintf("u%d.rego", i)] = fmt.Sprintf("package kubernetes.admission\n\ndeny contains \"u%d\" if input.request.name == \"n%d\"\n", i, i)
	}
	set := compile(t, files)
	copied := 0
	merged := map[*query]bool{}
	for _, q := range set.byScope {
		if q.merged && !merged[q] {
			merged[q] = true
			copied += len(q.results)
		}
	}
	if len(merged) == 0 || len(merged) == len(set.byScope) || copied > mergeBudget*80 {
		t.Errorf("%d of %d queries merged, %d bodies copied", len(merged), len(set.byScope), copied)
	}
	for i := range 60 {
		in := ast.MustInterfaceToValue(map[string]any{"request": map[string]any{"kind": map[string]any{"kind": fmt.Sprintf("K%d", i)}, "operation": "CREATE", "name": fmt.Sprintf("n%d", i%20)}})
		got, gotErr := set.Eval(context.Background(), in)
		want, wantErr := set.eval(context.Background(), set.query, in, 0, nil)
		if gotErr != nil || wantErr != nil {
			t.Fatal(gotErr, wantErr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("K%d: decisions (-each rule +scoped):\n%s", i, diff)
		}
	}
}

// checkRunAsRego checks that q.run, through topdown, gives what rego's
// prepared query gives for input.
func checkRunAsRego(t *testing.T, what string, q *query, input ast.Value) {
	t.Helper()
	ctx := context.Background()
	cache := getVirtualCache()
	got, gotErr := q.run(ctx, input, topdown.NewCancel(), cache, nil)
	putVirtualCache(cache)
	prepared, err := rego.New(rego.Query(q.text), rego.Compiler(q.compiler), rego.Store(q.store), rego.Capabilities(Capabilities()), rego.StrictBuiltinErrors(true)).PrepareForEval(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want *ast.Term
	rs, wantErr := prepared.Eval(ctx, rego.EvalParsedInput(input), rego.EvalGenerateJSON(func(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil }))
	if wantErr == nil && len(rs) == 1 {
		want, _ = rs[0].Bindings[decisionsVar].(*ast.Term)
	}
	if (gotErr != nil) != (wantErr != nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Errorf("%s: error %v, through rego %v", what, gotErr, wantErr)
		return
	}
	if (got == nil) != (want == nil) || got != nil && !got.Equal(want) {
		t.Errorf("%s: decisions %v, through rego %v", what, got, want)
	}
}

// A merged rule's bodies leave out their tests of the kind and the
// operation that every request its query is for passes; where the query
// is for several kinds, the kind's tests stay. Each request is decided
// as each rule decides it on its own.
func TestMergedBodiesLeaveOutWhatTheQueryKnows(t *testing.T) {
	set := compile(t, map[string]string{
		"create.rego": `package kubernetes.admission

deny contains "create" if input.request.operation == "CREATE"

deny contains "create x" if {
	input.request.operation == "CREATE"
	input.request.name == "x"
}
`,
		"create-z.rego": `package kubernetes.admission

deny contains "create z" if {
	input.request.name == "z"
	input.request.operation == "CREATE"
}
`,
		"secret.rego": `package kubernetes.admission

deny contains "secret" if {
	input.request.kind.kind == "Secret"
	input.request.operation == "CREATE"
	input.request.name == "y"
}

deny contains "not created" if {
	input.request.kind.kind == "Secret"
	not input.request.operation == "CREATE"
}
`,
		"pod.rego": `package kubernetes.admission

deny contains "pod deleted" if {
	input.request.kind.kind == "Pod"
	input.request.operation == "DELETE"
}
`,
	})
	tests := func(kinds, ops map[string]bool, m *ast.Module) {
		t.Helper()
		for _, r := range m.Rules {
			for _, e := range r.Body {
				if e.Negated || !e.IsCall() || len(e.Operands()) != 2 {
					continue
				}
				for v := range exprValues(e, kindRef, nil) {
					kinds[v] = true
				}
				for v := range exprValues(e, operationRef, nil) {
					ops[v] = true
				}
			}
		}
	}
	merged := func(kind, op string) *ast.Module {
		t.Helper()
		q := set.scoped(kind, op)
		if !q.merged {
			t.Fatalf("%s %s: not merged", kind, op)
		}
		ref := q.body[0].Operand(1).Value.(ast.Ref)
		for _, m := range q.compiler.Modules {
			if ref.HasPrefix(m.Package.Path) {
				return m
			}
		}
		t.Fatalf("%s %s: no merged module %v", kind, op, ref)
		return nil
	}
	kinds, ops := map[string]bool{}, map[string]bool{}
	tests(kinds, ops, merged("Secret", "CREATE"))
	if len(kinds) > 0 || len(ops) > 0 {
		t.Errorf("Secret CREATE's merged rule tests the kind %v and the operation %v", kinds, ops)
	}
	// Pod and other kinds' CREATE share a query: its bodies test no
	// operation, and no kind was there to test.
	if set.scoped("Pod", "CREATE") != set.scoped("ConfigMap", "CREATE") {
		t.Fatal("Pod and ConfigMap creates do not share a query")
	}
	kinds, ops = map[string]bool{}, map[string]bool{}
	tests(kinds, ops, merged("Pod", "CREATE"))
	if len(ops) > 0 {
		t.Errorf("CREATE's merged rule tests the operation %v", ops)
	}
	for _, kind := range []string{"Secret", "Pod", "ConfigMap"} {
		for _, op := range []string{"CREATE", "UPDATE", "DELETE"} {
			for _, name := range []string{"x", "y", "z"} {
				in := ast.MustInterfaceToValue(map[string]any{"request": map[string]any{
					"kind": map[string]any{"group": "", "version": "v1", "kind": kind}, "operation": op, "name": name,
				}})
				got, gotErr := set.Eval(context.Background(), in)
				want, wantErr := set.eval(context.Background(), set.query, in, 0, nil)
				what := fmt.Sprintf("%s %s %s", op, kind, name)
				if gotErr != nil || wantErr != nil {
					t.Fatalf("%s: %v, each rule on its own: %v", what, gotErr, wantErr)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: decisions (-each rule +merged):\n%s", what, diff)
				}
			}
		}
	}
}
