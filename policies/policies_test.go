package policies

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// policyFile is one policy of the library with its test file.
type policyFile struct {
	name        string // e.g. "secrets_size.rego"
	stem        string // e.g. "secrets_size": the prefix of its rule names
	src         []byte
	module      *ast.Module
	test        *ast.Module // nil when the policy has no test file
	enforcement string
}

// library parses every .rego file of FS, the files as shipped. Test files
// are paired with their policy by name.
func library(t testing.TB) []*policyFile {
	t.Helper()
	names, err := fs.Glob(FS, "*.rego")
	if err != nil {
		t.Fatal(err)
	}
	byStem := map[string]*policyFile{}
	var tests []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.rego") {
			tests = append(tests, name)
			continue
		}
		src, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ast.ParseModuleWithOpts(name, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		stem := strings.TrimSuffix(name, ".rego")
		p := &policyFile{name: name, stem: stem, src: src, module: m}
		if a := packageAnnotation(m); a != nil {
			if e, ok := a.Custom["enforcement"].(string); ok {
				p.enforcement = e
			}
		}
		byStem[stem] = p
	}
	for _, name := range tests {
		p, ok := byStem[strings.TrimSuffix(name, "_test.rego")]
		if !ok {
			t.Errorf("%s: no policy file %s beside it", name, strings.TrimSuffix(name, "_test.rego")+".rego")
			continue
		}
		src, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ast.ParseModuleWithOpts(name, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		p.test = m
	}
	var out []*policyFile
	for _, p := range byStem {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *policyFile) int { return strings.Compare(a.name, b.name) })
	if len(out) == 0 {
		t.Fatal("the library holds no policy")
	}
	return out
}

func packageAnnotation(m *ast.Module) *ast.Annotations {
	for _, a := range m.Annotations {
		if a.Scope == "package" {
			return a
		}
	}
	return nil
}

// TestRego runs every Rego test of the library with OPA's tester twice: each
// policy with only its own test file, as the engine loads a policy in a
// namespace of its own, and the whole library as one package.
func TestRego(t *testing.T) {
	lib := library(t)
	total := 0
	for _, p := range lib {
		t.Run(p.name, func(t *testing.T) {
			if p.test == nil {
				t.Fatalf("%s has no %s_test.rego", p.name, p.stem)
			}
			n := runRegoTests(t, map[string]*ast.Module{p.name: p.module, p.test.Package.Location.File: p.test})
			total += n
		})
	}
	// OPA refuses two package-scope METADATA annotations of one package
	// ("package annotation redeclared"), so this run parses the policies
	// without their annotations; what it checks is that no file depends
	// on, or clashes with, a name of another.
	t.Run("whole library", func(t *testing.T) {
		modules := map[string]*ast.Module{}
		for _, p := range lib {
			m, err := ast.ParseModuleWithOpts(p.name, string(p.src), ast.ParserOptions{RegoVersion: ast.RegoV1})
			if err != nil {
				t.Fatalf("parse %s: %v", p.name, err)
			}
			modules[p.name] = m
			if p.test != nil {
				modules[p.test.Package.Location.File] = p.test
			}
		}
		if n := runRegoTests(t, modules); n != total {
			t.Errorf("the whole library ran %d tests, its files alone %d", n, total)
		}
	})
	t.Logf("%d Rego tests in %d policies", total, len(lib))
}

// runRegoTests compiles modules strictly, runs their tests, reports each as
// a subtest (and each case of a table test as its subtest) and returns how
// many ran. A failure, an error or no test at all fails t.
func runRegoTests(t *testing.T, modules map[string]*ast.Module) int {
	t.Helper()
	// Compiling rewrites modules, and each is compiled more than once.
	copied := make(map[string]*ast.Module, len(modules))
	for name, m := range modules {
		copied[name] = m.Copy()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch, err := tester.NewRunner().
		SetCompiler(ast.NewCompiler().WithStrict(true)).
		SetModules(copied).
		RaiseBuiltinErrors(true).
		SetTimeout(10*time.Second).
		RunTests(ctx, nil)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	var results []*tester.Result
	for r := range ch {
		results = append(results, r)
	}
	slices.SortFunc(results, func(a, b *tester.Result) int { return strings.Compare(a.Name, b.Name) })
	if len(results) == 0 {
		t.Fatal("no Rego test found")
	}
	for _, r := range results {
		t.Run(r.Name, func(t *testing.T) {
			switch {
			case r.Error != nil:
				t.Errorf("%s: error: %v", r.Location, r.Error)
			case r.Skip:
				t.Errorf("%s: skipped (todo_ test); the library ships none", r.Location)
			case r.Fail:
				t.Errorf("%s: FAIL", r.Location)
			}
			for path, sr := range r.SubResults.Iter {
				t.Run(strings.Join(path, "/"), func(t *testing.T) {
					if sr.Fail {
						t.Errorf("%s: case %q: FAIL", r.Location, strings.Join(path, "/"))
					}
				})
			}
			if r.Duration > 100*time.Millisecond {
				t.Logf("%s: slow: %v", r.Location, r.Duration)
			}
			if len(r.Output) > 0 {
				t.Logf("output:\n%s", r.Output)
			}
		})
	}
	return len(results)
}

// TestMetadata checks what the engine reads of each policy: it is package
// kubernetes.admission, starts with a METADATA annotation at package scope
// with a title, a description and an enforcement (and, unless that is deny,
// says how to make it deny), and names its rules, and its tests theirs,
// with its file's name, so that the files also load as one package.
func TestMetadata(t *testing.T) {
	for _, p := range library(t) {
		t.Run(p.name, func(t *testing.T) {
			if got, want := p.module.Package.Path.String(), "data.kubernetes.admission"; got != want {
				t.Errorf("package %s, want %s", got, want)
			}
			if !strings.HasPrefix(string(p.src), "# METADATA\n") {
				t.Errorf("does not start with a # METADATA annotation")
			}
			a := packageAnnotation(p.module)
			if a == nil {
				t.Fatal("no METADATA annotation at package scope")
			}
			if strings.TrimSpace(a.Title) == "" {
				t.Error("METADATA has no title")
			}
			if len(strings.TrimSpace(a.Description)) < 40 {
				t.Errorf("METADATA description %q does not name the risk the policy guards against", a.Description)
			}
			if !slices.Contains([]string{"deny", "warn", "dryrun"}, p.enforcement) {
				t.Errorf("custom.enforcement %v, want deny, warn or dryrun", a.Custom["enforcement"])
			}
			if p.enforcement != "deny" && !strings.Contains(a.Description, "To make it deny") {
				t.Errorf("enforcement %s, and the description does not say how to make it deny (\"To make it deny: ...\")", p.enforcement)
			}
			for _, r := range p.module.Rules {
				name := r.Head.Ref()[0].String()
				if name != "deny" && name != "warn" && !strings.HasPrefix(name, p.stem+"_") {
					t.Errorf("%s: rule %s: want deny, warn or a name starting with %s_", r.Location, name, p.stem)
				}
			}
			if p.test == nil {
				return
			}
			if got, want := p.test.Package.Path.String(), "data.kubernetes.admission"; got != want {
				t.Errorf("%s: package %s, want %s", p.test.Package.Location.File, got, want)
			}
			for _, r := range p.test.Rules {
				name := r.Head.Ref()[0].String()
				if !strings.HasPrefix(name, "test_"+p.stem) && !strings.HasPrefix(name, p.stem+"_test_") {
					t.Errorf("%s: rule %s: want a name starting with test_%s or %s_test_", r.Location, name, p.stem, p.stem)
				}
			}
		})
	}
}

// TestDecisionRulesIndexed checks that every deny, warn and patch rule
// starts with a condition on input.request that OPA's rule index can use:
// a field equal to a constant, or in a set of constants (the kind, the
// operation, the namespace). A request the condition excludes then skips
// the rule at the cost of an index lookup; a rule that starts with a
// helper rule is evaluated for every request of every kind, which made
// the library several times slower.
func TestDecisionRulesIndexed(t *testing.T) {
	request := ast.MustParseRef("input.request")
	for _, p := range library(t) {
		for _, r := range p.module.Rules {
			switch r.Head.Name.String() {
			case "deny", "warn", "patch":
			default:
				continue
			}
			if !indexable(r.Body[0], request) {
				t.Errorf("%s: %s starts with %v, not a condition the rule index can use (input.request.X == \"v\" or input.request.X in {\"v\", ...})", r.Location, r.Head.Name, r.Body[0])
			}
		}
	}
}

func indexable(e *ast.Expr, request ast.Ref) bool {
	if e.Negated || len(e.With) > 0 || !e.IsCall() || len(e.Operands()) != 2 {
		return false
	}
	ref, ok := e.Operand(0).Value.(ast.Ref)
	if !ok || !ref.HasPrefix(request) || !ref.IsGround() {
		return false
	}
	switch op, v := e.Operator().String(), e.Operand(1).Value; op {
	case "equal", "eq":
		return ast.IsScalar(v)
	case "internal.member_2":
		set, ok := v.(ast.Set)
		return ok && set.Len() > 0 && !set.Until(func(t *ast.Term) bool { return !ast.IsScalar(t.Value) })
	default:
		return false
	}
}

// TestFormatted checks that every file is formatted as opa fmt would.
func TestFormatted(t *testing.T) {
	names, err := fs.Glob(FS, "*.rego")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		src, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatal(err)
		}
		out, err := format.SourceWithOpts(name, src, format.Opts{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Errorf("format %s: %v", name, err)
			continue
		}
		if !bytes.Equal(out, src) {
			t.Errorf("%s is not formatted as opa fmt formats it", name)
		}
	}
}

// prepared is one policy compiled alone, ready to evaluate.
type prepared struct {
	*policyFile
	deny, warn rego.PreparedEvalQuery
	both       rego.PreparedEvalQuery // deny and warn in one evaluation, as an engine asks
}

func prepare(t testing.TB, p *policyFile, kube map[string]any) prepared {
	t.Helper()
	ctx := context.Background()
	store := inmem.NewFromObject(map[string]any{"kubernetes": kube})
	q := func(query string) rego.PreparedEvalQuery {
		pq, err := rego.New(
			rego.Query(query),
			rego.ParsedModule(p.module.Copy()),
			rego.Store(store),
			rego.Strict(true),
			rego.StrictBuiltinErrors(true),
		).PrepareForEval(ctx)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		return pq
	}
	return prepared{
		policyFile: p,
		deny:       q("data.kubernetes.admission.deny"),
		warn:       q("data.kubernetes.admission.warn"),
		both:       q("deny := data.kubernetes.admission.deny; warn := data.kubernetes.admission.warn"),
	}
}

// messages evaluates a prepared deny or warn query and returns its set.
func messages(t *testing.T, pq rego.PreparedEvalQuery, review map[string]any) []string {
	t.Helper()
	rs, err := pq.Eval(context.Background(), rego.EvalInput(review))
	if err != nil {
		t.Fatalf("eval: %v", err)
	}
	var out []string
	for _, r := range rs {
		for _, e := range r.Expressions {
			set, ok := e.Value.([]any)
			if !ok {
				t.Fatalf("%s is %T, want a set", e.Text, e.Value)
			}
			for _, m := range set {
				s, ok := m.(string)
				if !ok {
					t.Fatalf("%s holds %T %v, want strings", e.Text, m, m)
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// bootstrapKube is data.kubernetes as the engine replicates it from a
// fresh cluster: the system namespaces as apiserver/bootstrap.go creates
// them (labelled with their name, and kube-system as allowed to hold
// Secrets), and a default ServiceAccount without annotations in each.
func bootstrapKube() map[string]any {
	namespaces := map[string]any{}
	serviceaccounts := map[string]any{}
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		labels := map[string]any{"kubernetes.io/metadata.name": ns}
		if ns == "kube-system" {
			labels[SecretsNamespaceLabel] = SecretsNamespaceAllowed
		}
		namespaces[ns] = map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{
			"name": ns, "labels": labels,
		}}
		serviceaccounts[ns] = map[string]any{"default": map[string]any{
			"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": ns},
		}}
	}
	return map[string]any{"namespaces": namespaces, "serviceaccounts": serviceaccounts}
}

// adminReview is the AdmissionReview the server builds for a write by the
// README's admin (admin.conf: user admin in group trustplane:cluster-admins).
func adminReview(op string, obj, old map[string]any) map[string]any {
	meta := obj
	if meta == nil {
		meta = old
	}
	md := meta["metadata"].(map[string]any)
	kind := meta["kind"].(string)
	resource := strings.ToLower(kind) + "s"
	req := map[string]any{
		"uid":             "00000000-0000-4000-8000-000000000000",
		"kind":            map[string]any{"group": "", "version": "v1", "kind": kind},
		"resource":        map[string]any{"group": "", "version": "v1", "resource": resource},
		"requestKind":     map[string]any{"group": "", "version": "v1", "kind": kind},
		"requestResource": map[string]any{"group": "", "version": "v1", "resource": resource},
		"name":            md["name"],
		"namespace":       md["namespace"],
		"operation":       op,
		"userInfo":        map[string]any{"username": "admin", "groups": []any{"trustplane:cluster-admins", "system:authenticated"}},
		"object":          nilIfEmpty(obj),
		"oldObject":       nilIfEmpty(old),
		"dryRun":          false,
	}
	return map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}
}

func nilIfEmpty(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// readmeStep is one kubectl command of the README, as the request it sends.
type readmeStep struct {
	line   string
	review map[string]any
}

// readmeSteps reads the README's kubectl create and delete commands of
// Secrets and ConfigMaps and turns each into the AdmissionReview the
// server would build for it, so that the test follows the README.
func readmeSteps(t *testing.T) []readmeStep {
	t.Helper()
	f, err := os.Open("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	created := map[string]map[string]any{} // kind/namespace/name → object
	var steps []readmeStep
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		args := strings.Fields(line)
		if len(args) < 2 || args[0] != "kubectl" {
			continue
		}
		switch args[1] {
		case "create", "delete", "apply", "replace", "patch", "edit", "label", "annotate", "set", "run":
		default:
			continue // a read
		}
		ns := "default"
		var rest []string
		literals := map[string]any{}
		for i := 1; i < len(args); i++ {
			a := args[i]
			switch {
			case (a == "-n" || a == "--namespace") && i+1 < len(args):
				ns = args[i+1]
				i++
			case strings.HasPrefix(a, "--namespace="):
				ns = strings.TrimPrefix(a, "--namespace=")
			case strings.HasPrefix(a, "--from-literal="):
				k, v, _ := strings.Cut(strings.TrimPrefix(a, "--from-literal="), "=")
				literals[k] = v
			case strings.HasPrefix(a, "-"):
				t.Fatalf("README: %q: flag %s not understood by this test", line, a)
			default:
				rest = append(rest, a)
			}
		}
		var step readmeStep
		switch {
		case len(rest) == 4 && rest[0] == "create" && rest[1] == "secret" && rest[2] == "generic":
			data := map[string]any{}
			for k, v := range literals {
				data[k] = base64.StdEncoding.EncodeToString([]byte(v.(string)))
			}
			obj := map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": data,
				"metadata": map[string]any{"name": rest[3], "namespace": ns}}
			created["Secret/"+ns+"/"+rest[3]] = obj
			step = readmeStep{line, adminReview("CREATE", obj, nil)}
		case len(rest) == 3 && rest[0] == "create" && rest[1] == "configmap":
			obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": literals,
				"metadata": map[string]any{"name": rest[2], "namespace": ns}}
			created["ConfigMap/"+ns+"/"+rest[2]] = obj
			step = readmeStep{line, adminReview("CREATE", obj, nil)}
		case len(rest) == 3 && rest[0] == "delete" && (rest[1] == "secret" || rest[1] == "configmap"):
			kind := map[string]string{"secret": "Secret", "configmap": "ConfigMap"}[rest[1]]
			old, ok := created[kind+"/"+ns+"/"+rest[2]]
			if !ok {
				t.Fatalf("README: %q deletes what it did not create", line)
			}
			step = readmeStep{line, adminReview("DELETE", nil, old)}
		default:
			t.Fatalf("README: %q: a write this test does not turn into a request; teach it", line)
		}
		steps = append(steps, step)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var secrets, configmaps int
	for _, s := range steps {
		switch s.review["request"].(map[string]any)["kind"].(map[string]any)["kind"] {
		case "Secret":
			secrets++
		case "ConfigMap":
			configmaps++
		}
	}
	if secrets == 0 || configmaps == 0 {
		t.Fatalf("README: found %d Secret and %d ConfigMap commands, want both; has the quick start moved?", secrets, configmaps)
	}
	return steps
}

// TestREADME evaluates what the README's quick start writes against each
// policy, and checks that no policy whose enforcement is deny refuses it:
// a policy that would must ship as warn (or dryrun) and say how to make it
// deny.
func TestREADME(t *testing.T) {
	steps := readmeSteps(t)
	refused := 0
	for _, p := range library(t) {
		pq := prepare(t, p, bootstrapKube())
		for _, s := range steps {
			denies := messages(t, pq.deny, s.review)
			if len(denies) == 0 {
				continue
			}
			refused++
			if p.enforcement == "deny" {
				t.Errorf("%s (enforcement deny) refuses the README's %q: %q", p.name, s.line, denies)
			} else {
				t.Logf("%s (enforcement %s) would refuse the README's %q: %q", p.name, p.enforcement, s.line, denies)
			}
		}
	}
	// The README's Secret in "default" is what secrets_namespace.rego
	// exists to refuse; if nothing refuses it, this test evaluates
	// nothing, and its passing says nothing.
	if refused == 0 {
		t.Error("no policy refuses anything of the README's; the evaluation here is broken")
	}
}

// TestPolicyConfigMaps loads each file of the library the other way the
// engine takes policies, as a ConfigMap labelled trustplane.io/policy=rego
// in kube-system, and checks that no policy of the library refuses it
// (the tests hold credential-like fixtures).
func TestPolicyConfigMaps(t *testing.T) {
	lib := library(t)
	var prepared []prepared
	for _, p := range lib {
		prepared = append(prepared, prepare(t, p, bootstrapKube()))
	}
	names, err := fs.Glob(FS, "*.rego")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		src, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatal(err)
		}
		cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "policy-" + strings.ReplaceAll(strings.TrimSuffix(name, ".rego"), "_", "-"),
				"namespace": "kube-system", "labels": map[string]any{"trustplane.io/policy": "rego"}},
			"data": map[string]any{name: string(src)}}
		review := adminReview("CREATE", cm, nil)
		for _, p := range prepared {
			if denies := messages(t, p.deny, review); len(denies) > 0 {
				t.Errorf("%s refuses %s as a policy ConfigMap: %q", p.name, name, denies)
			}
			if warns := messages(t, p.warn, review); len(warns) > 0 {
				t.Logf("%s warns about %s as a policy ConfigMap: %q", p.name, name, warns)
			}
		}
	}
}

// TestBootstrapToken: the Secret `trustplane token create` writes, a
// bootstrap token in kube-system, written by the README's admin, is
// neither refused nor warned about by any policy of the library on a fresh
// cluster, whose kube-system the API server labels as allowed to hold
// Secrets. The same Secret in an unlabelled namespace is warned about,
// so that the policies are seen to run.
func TestBootstrapToken(t *testing.T) {
	token := func(ns string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
			"metadata": map[string]any{"name": "bootstrap-token-abcdef", "namespace": ns},
			"data": map[string]any{
				"token-id":                       base64.StdEncoding.EncodeToString([]byte("abcdef")),
				"token-secret":                   base64.StdEncoding.EncodeToString([]byte("0123456789abcdef")),
				"usage-bootstrap-authentication": base64.StdEncoding.EncodeToString([]byte("true")),
			}}
	}
	var elsewhere []string
	for _, p := range library(t) {
		pq := prepare(t, p, bootstrapKube())
		if got := append(messages(t, pq.deny, adminReview("CREATE", token("kube-system"), nil)), messages(t, pq.warn, adminReview("CREATE", token("kube-system"), nil))...); len(got) > 0 {
			t.Errorf("%s (enforcement %s) refuses or warns about a bootstrap token in kube-system: %q", p.name, p.enforcement, got)
		}
		elsewhere = append(elsewhere, messages(t, pq.deny, adminReview("CREATE", token("kube-public"), nil))...)
	}
	if len(elsewhere) == 0 {
		t.Error("no policy refuses a Secret in the unlabelled kube-public; the evaluation here is broken")
	}
}

// BenchmarkLibrary evaluates the deny and warn rules of every policy, each
// compiled alone as the engine loads it, in one query per policy, for one
// request: what the library costs a request of each kind, and what each
// policy does of that.
func BenchmarkLibrary(b *testing.B) {
	var lib []prepared
	for _, p := range library(b) {
		lib = append(lib, prepare(b, p, bootstrapKube()))
	}
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": "db", "namespace": "default"},
		"data":     map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("s3cret"))}}
	configmap := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "default"},
		"data": map[string]any{"mode": "strict", "app.yaml": strings.Repeat("key: value\n", 90),
			"ca.crt": "-----BEGIN CERTIFICATE-----\n" + strings.Repeat("MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n", 10) + "-----END CERTIFICATE-----\n"}}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app",
			"env": []any{map[string]any{"name": "MODE", "valueFrom": map[string]any{"configMapKeyRef": map[string]any{"name": "settings", "key": "mode"}}}}}},
			"volumes": []any{map[string]any{"name": "c", "configMap": map[string]any{"name": "settings"}}}}}
	podReview := adminReview("CREATE", pod, nil)
	podReview["request"].(map[string]any)["kind"] = map[string]any{"group": "", "version": "v1", "kind": "Pod"}
	for _, bc := range []struct {
		name   string
		review map[string]any
	}{
		{"Secret", adminReview("CREATE", secret, nil)},
		{"ConfigMap 1KiB", adminReview("CREATE", configmap, nil)},
		{"Pod", podReview},
	} {
		in, err := ast.InterfaceToValue(bc.review)
		if err != nil {
			b.Fatal(err)
		}
		eval := func(b *testing.B, lib []prepared) {
			ctx := context.Background()
			for b.Loop() {
				for _, p := range lib {
					if _, err := p.both.Eval(ctx, rego.EvalParsedInput(in)); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		b.Run(bc.name+"/library", func(b *testing.B) { eval(b, lib) })
		for _, p := range lib {
			b.Run(bc.name+"/"+p.stem, func(b *testing.B) { eval(b, []prepared{p}) })
		}
	}
}
