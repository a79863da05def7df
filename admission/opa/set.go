package opa

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Enforcement is what a policy's deny messages do.
type Enforcement string

const (
	// Deny refuses the request.
	Deny Enforcement = "deny"
	// Warn allows it with a Warning header for each message.
	Warn Enforcement = "warn"
	// DryRun allows it and only records the messages in the audit event.
	DryRun Enforcement = "dryrun"
)

// admissionPackage is the package policies are written in, as for kube-mgmt.
var admissionPackage = ast.MustParseRef("data.kubernetes.admission")

// testTimeout bounds the whole test run of a policy set.
const testTimeout = 30 * time.Second

// Policy is one policy file of a Set.
type Policy struct {
	// Name is the file's name without .rego, unique in the set.
	Name string
	// File is where it was read from.
	File        string
	Enforcement Enforcement
	// rules are the decision rules (deny, warn, patch) the policy
	// defines, the ones the decision query reads.
	rules []string
}

// Set is a compiled policy set, ready to evaluate many times, safe for
// concurrent use. Each policy file of package kubernetes.admission is
// evaluated in a package of its own, so that its decisions are its own:
// a policy file is self-contained, and shared helpers live in other
// packages.
type Set struct {
	policies []Policy
	// query evaluates every policy.
	query *query
	// byScope evaluates, for a request's kind of object and operation,
	// only the decision rules that can hold for them, by the kinds and
	// operations some rule names ("" for any other). See scopeOf.
	byScope    map[[2]string]*query
	kinds, ops map[string]bool
	// inputs are, by the same keys, what the queries of byScope may read
	// of their input: what Input builds.
	inputs map[[2]string]*fields
	// source is the digest of the files the set was compiled from.
	source [sha256.Size]byte
	// merged is how many merged modules the queries of byScope
	// evaluate (see mergedModule); unmerged, why there are none when
	// they did not compile.
	merged   int
	unmerged error
	// mutates: some policy has patch rules.
	mutates bool
	// data is what the policies read; while any of it is stale, Eval
	// refuses.
	data *Data
}

// Unmerged is why the set evaluates each decision rule on its own, not
// one merged rule for each kind and operation: nil but when the merged
// rules did not compile. The set decides the same either way.
func (s *Set) Unmerged() error { return s.unmerged }

// Policies are the set's policies, by name.
func (s *Set) Policies() []Policy { return slices.Clone(s.policies) }

// Enforced is s with every policy enforced as e, whatever its METADATA
// says: an audit evaluates a set as deny to see what its warn and dryrun
// policies would refuse once switched. It shares s's compiled query and
// data.
func (s *Set) Enforced(e Enforcement) *Set {
	out := *s
	out.policies = slices.Clone(s.policies)
	for i := range out.policies {
		out.policies[i].Enforcement = e
	}
	return &out
}

// LoadDirs reads every .rego file below dirs (files named as arguments are
// read too) and compiles them with Compile.
func LoadDirs(ctx context.Context, paths ...string) (*Set, error) {
	return NewData().LoadDirs(ctx, paths...)
}

// LoadDirs is LoadDirs for policies that read d.
func (d *Data) LoadDirs(ctx context.Context, paths ...string) (*Set, error) {
	files, err := ReadDirs(paths...)
	if err != nil {
		return nil, err
	}
	return d.Compile(ctx, files)
}

// ReadDirs reads the .rego files below paths (and those named), by path.
func ReadDirs(paths ...string) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".rego") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files[path] = data
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read policies: %w", err)
		}
	}
	return files, nil
}

// Compile parses files (path → Rego source), runs the tests among them
// (rules named test_*, as opa test does) and refuses the set if any fails,
// then compiles and prepares it, with no data. Every problem is reported
// with its file:line.
func Compile(ctx context.Context, files map[string][]byte) (*Set, error) {
	return NewData().Compile(ctx, files)
}

// Compile is Compile for policies that read d.
func (d *Data) Compile(ctx context.Context, files map[string][]byte) (*Set, error) {
	modules := map[string]*ast.Module{}
	var errs []error
	for path, src := range files {
		m, err := ast.ParseModuleWithOpts(path, string(src), ast.ParserOptions{ProcessAnnotation: true, RegoVersion: ast.RegoV1})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		modules[path] = m
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("parse policies: %w", err)
	}
	if err := runTests(ctx, modules); err != nil {
		return nil, err
	}

	// Each policy file gets a package of its own.
	var policies []Policy
	mutates := false
	served := map[string]*ast.Module{}
	names := map[string]string{}
	for path, m := range modules {
		if isTestFile(path) {
			continue
		}
		var internal ast.Ref
		ast.WalkRefs(m, func(r ast.Ref) bool {
			if internal == nil && r.HasPrefix(mergedData) {
				internal = r
			}
			return false
		})
		if internal != nil {
			at := m.Package.Location
			if loc := internal[0].Location; loc != nil {
				at = loc
			}
			return nil, fmt.Errorf("%s: %s: data.trustplane.merged is the server's, for no policy to read", at, internal)
		}
		if !m.Package.Path.Equal(admissionPackage) {
			if m.Package.Path.HasPrefix(kubernetesData) || m.Package.Path.HasPrefix(trustplaneData) {
				return nil, fmt.Errorf("%s: package %s: only policies (package kubernetes.admission) may define rules under data.kubernetes or data.trustplane, where they would be ignored or taken for another policy's", m.Package.Location, m.Package.Path)
			}
			served[path] = m
			continue
		}
		if err := checkDecisionRules(m); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		name := strings.TrimSuffix(filepath.Base(path), ".rego")
		if other, dup := names[name]; dup {
			return nil, fmt.Errorf("policies %s and %s have the same name %q", other, path, name)
		}
		names[name] = path
		enforcement, err := enforcementOf(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var rules []string
		for _, r := range m.Rules {
			switch n := ruleName(r); n {
			case "deny", "warn", "patch":
				if !slices.Contains(rules, n) {
					rules = append(rules, n)
				}
			}
		}
		slices.Sort(rules)
		mutates = mutates || slices.Contains(rules, "patch")
		own := m.Copy()
		own.Package.Path = policyRef(name)
		served[path] = own
		policies = append(policies, Policy{Name: name, File: path, Enforcement: enforcement, rules: rules})
	}
	sort.Slice(policies, func(i, j int) bool { return policies[i].Name < policies[j].Name })

	set := &Set{policies: policies, byScope: map[[2]string]*query{}, inputs: map[[2]string]*fields{}, kinds: map[string]bool{}, ops: map[string]bool{}, source: fingerprint(files), mutates: mutates, data: d}
	var all []ruleRef
	for i, p := range policies {
		for _, r := range p.rules {
			all = append(all, ruleRef{i, r})
		}
	}
	compiler, err := d.compileModules(ctx, served)
	if err != nil {
		return nil, err
	}
	// The scopes of each decision rule's bodies, read from the modules
	// as compiled, not as parsed: the compiler renames a local variable
	// that a body names input ([input] := [...]), which the parsed body
	// would show as the request's input.
	scopes := map[ruleRef][]scope{}
	for i, p := range policies {
		m := compiler.Modules[p.File]
		if m == nil {
			return nil, fmt.Errorf("compile policies: %s is not among the compiled modules", p.File)
		}
		for _, r := range m.Rules {
			if n := ruleName(r); slices.Contains(p.rules, n) {
				sc := scopeOf(r.Body)
				scopes[ruleRef{i, n}] = append(scopes[ruleRef{i, n}], sc)
				maps.Copy(set.kinds, sc.kinds)
				maps.Copy(set.ops, sc.ops)
			}
		}
	}
	// The decision rules each kind and operation get; "" stands for the
	// kinds, and the operations, no rule names.
	those := map[[2]string][]ruleRef{}
	for _, kind := range append(slices.Collect(maps.Keys(set.kinds)), "") {
		for _, op := range append(slices.Collect(maps.Keys(set.ops)), "") {
			var rules []ruleRef
			for _, r := range all {
				if slices.ContainsFunc(scopes[r], func(sc scope) bool { return sc.holds(kind, op) }) {
					rules = append(rules, r)
				}
			}
			those[[2]string{kind, op}] = rules
		}
	}
	var merged map[string]*ast.Module
	compiler, merged, set.unmerged = d.mergeRules(ctx, compiler, served, policies, those)
	set.merged = len(merged)
	// object.get is OPA's unless a module replaces it.
	getReads := !replaced(compiler, ast.ObjectGet.Name)
	prepare := func(text string, results []result) (*query, error) {
		body, err := ast.ParseBody(text)
		if err != nil {
			return nil, fmt.Errorf("compile policies: %w", err)
		}
		qc := compiler.QueryCompiler()
		if body, err = qc.Compile(body); err != nil {
			return nil, fmt.Errorf("compile policies: %w", err)
		}
		out := &query{text: text, body: body, queryCompiler: qc, compiler: compiler, store: d.store, results: results}
		for k, v := range qc.RewrittenVars() {
			if v == decisionsVar {
				out.result = k
			}
		}
		return out, nil
	}
	if set.query, err = prepare(decisionQuery(policies, all)); err != nil {
		return nil, err
	}
	// One query for each set of decision rules some kind and operation
	// get, prepared once.
	prepared := map[string]*query{}
	for sc, rules := range those {
		key := fmt.Sprint(rules)
		q, ok := prepared[key]
		if !ok {
			if m := merged[key]; m != nil {
				_, results := decisionQuery(policies, rules)
				if q, err = prepare(fmt.Sprintf("%s := %s", decisionsVar, m.Package.Path.Append(ast.StringTerm(string(m.Rules[0].Head.Name)))), results); err == nil {
					q.merged = true
				}
			} else {
				q, err = prepare(decisionQuery(policies, rules))
			}
			if err != nil {
				return nil, err
			}
			prepared[key] = q
		}
		set.byScope[sc] = q
		set.inputs[sc] = inputFields(compiler, getReads, policies, rules, sc[0], sc[1])
	}
	return set, nil
}

// mergeRules merges the bodies of each set of decision rules of those
// with more than one into one rule (see mergedModule), and compiles them
// with served, as compiler compiled served: the compiler, and the merged
// modules by fmt.Sprint(rules). The server's query for a kind and
// operation then evaluates one rule: OPA's evaluation of a rule costs
// about 2 µs beyond its bodies' (the lookup of its bodies in the rule
// index, its cache), a fifth of a Secret create's evaluation with the
// shipped library. A body that can hold for many kinds is copied into
// many merged rules: the copies are bounded by mergeBudget times the
// decision rules' bodies, and the sets of rules past it, in the order of
// their keys, are evaluated rule by rule. The merge is a saving, not a
// need: should the merged modules not compile, there is none, and the
// error says why.
func (d *Data) mergeRules(ctx context.Context, compiler *ast.Compiler, served map[string]*ast.Module, policies []Policy, those map[[2]string][]ruleRef) (*ast.Compiler, map[string]*ast.Module, error) {
	sets := map[string][]ruleRef{}
	// The kind and the operation of every scope a set's query is for,
	// "" once two differ.
	forScope := map[string][2]string{}
	for sc, rules := range those {
		if len(rules) <= 1 {
			continue
		}
		key := fmt.Sprint(rules)
		if _, ok := sets[key]; !ok {
			sets[key], forScope[key] = rules, sc
			continue
		}
		k := forScope[key]
		if k[0] != sc[0] {
			k[0] = ""
		}
		if k[1] != sc[1] {
			k[1] = ""
		}
		forScope[key] = k
	}
	bodies := map[ruleRef]int{}
	total := 0
	for i, p := range policies {
		for _, r := range compiler.Modules[p.File].Rules {
			if n := ruleName(r); slices.Contains(p.rules, n) {
				bodies[ruleRef{i, n}]++
				total++
			}
		}
	}
	merged := map[string]*ast.Module{}
	modules := maps.Clone(served)
	copied := 0
	for _, key := range slices.Sorted(maps.Keys(sets)) {
		n := 0
		for _, r := range sets[key] {
			n += bodies[r]
		}
		if copied+n > mergeBudget*total {
			continue
		}
		copied += n
		m := mergedModule(compiler, policies, sets[key], len(merged), forScope[key][0], forScope[key][1])
		merged[key] = m
		modules[m.Package.Location.File] = m
	}
	if len(merged) == 0 {
		return compiler, nil, nil
	}
	c, err := d.compileModules(ctx, modules)
	if err != nil {
		return compiler, nil, err
	}
	return c, merged, nil
}

// mergeBudget bounds the bodies mergeRules copies, as a multiple of the
// decision rules' bodies.
const mergeBudget = 8

// compileModules compiles modules, as rego does for a query.
func (d *Data) compileModules(ctx context.Context, modules map[string]*ast.Module) (*ast.Compiler, error) {
	c := ast.NewCompiler().
		WithCapabilities(Capabilities()).
		WithDefaultRegoVersion(ast.RegoV1).
		WithUseTypeCheckAnnotations(true)
	opts := []func(*rego.Rego){rego.Query("true"), rego.Compiler(c), rego.Store(d.store), rego.Capabilities(Capabilities())}
	for _, m := range modules {
		opts = append(opts, rego.ParsedModule(m))
	}
	if _, err := rego.New(opts...).PrepareForEval(ctx); err != nil {
		return nil, fmt.Errorf("compile policies: %w", err)
	}
	return c, nil
}

// mergedRule is the name of a merged module's rule, unless a body it
// holds has a variable of that name, which the rule would then be.
const mergedRule = "decisions"

// mergedData is where the merged modules are.
var mergedData = ast.MustParseRef("data.trustplane.merged")

// mergedModule is a module of one rule, named mergedRule unless one of
// its bodies has a variable of that name, with every body of the
// decision rules which, as c compiled them: [policy, rule, value] for
// each value one of them holds, where policy is the index of its policy
// in policies. It is the n-th merged module of a set, in a package of
// its own under data.trustplane.merged, where no policy may define a
// rule or read. Its query is only for requests of kind and op, when they
// are not "" (Set.queryFor chooses it by the input's): the bodies' tests
// that the input is of them are left out (see known).
func mergedModule(c *ast.Compiler, policies []Policy, which []ruleRef, n int, kind, op string) *ast.Module {
	file := fmt.Sprintf("trustplane-merged-%d", n)
	path := ast.Ref{ast.DefaultRootDocument, ast.StringTerm("trustplane"), ast.StringTerm("merged"), ast.StringTerm(strconv.Itoa(n))}
	m := &ast.Module{Package: &ast.Package{Path: path, Location: &ast.Location{File: file}}}
	taken := map[ast.Var]bool{}
	for _, r := range which {
		for _, rule := range c.Modules[policies[r.policy].File].Rules {
			if ruleName(rule) != r.rule {
				continue
			}
			key := ast.ArrayTerm(ast.IntNumberTerm(r.policy), ast.StringTerm(r.rule), rule.Head.Key.Copy())
			body := known(rule.Body.Copy(), kind, op)
			ast.WalkVars(key, func(v ast.Var) bool { taken[v] = true; return false })
			ast.WalkVars(body, func(v ast.Var) bool { taken[v] = true; return false })
			m.Rules = append(m.Rules, &ast.Rule{Head: &ast.Head{Key: key}, Body: body, Module: m, Location: rule.Location})
		}
	}
	name := ast.Var(mergedRule)
	for i := 1; taken[name]; i++ {
		name = ast.Var(fmt.Sprintf("%s%d", mergedRule, i))
	}
	for _, r := range m.Rules {
		r.Head = ast.NewHead(name, r.Head.Key)
	}
	return m
}

// known is body without its expressions that test that the input's kind
// is kind, or its operation op, directly (input.request.kind.kind == kind,
// not negated, without with; not through a variable, as scopeOf also
// reads them): a query that evaluates body only for a request of kind
// and op need not test them again. OPA evaluates each expression of a
// body its rule index lets through, and these were a fifth of a Secret
// create's. kind or op "" leaves theirs. A body left with none holds:
// true.
func known(body ast.Body, kind, op string) ast.Body {
	kept := body[:0]
	for _, e := range body {
		if !e.Negated && len(e.With) == 0 && e.IsCall() && len(e.Operands()) == 2 {
			if kind != "" && isOnly(exprValues(e, kindRef, nil), kind) || op != "" && isOnly(exprValues(e, operationRef, nil), op) {
				continue
			}
		}
		kept = append(kept, e)
	}
	if len(kept) == 0 {
		kept = append(kept, ast.NewExpr(ast.BooleanTerm(true)))
	}
	for i, e := range kept {
		e.Index = i
	}
	return kept
}

// isOnly reports whether values is v alone.
func isOnly(values map[string]bool, v string) bool {
	return len(values) == 1 && values[v]
}

// inputFields are the parts of the input of a request of kind and op
// that the query of rules which may read: all of each rule body that can
// hold for them, of the others the expressions up to the one that
// excludes them (see excludedAt) and what the rule index reads, and the
// rules they refer to. The kind and the operation are always there, for
// Eval to choose the query by, and so are the objects' data fields, which
// the Redactor hides wherever a policy's message may show them.
func inputFields(compiler *ast.Compiler, getReads bool, policies []Policy, rules []ruleRef, kind, op string) *fields {
	u := newInputUse(compiler, getReads)
	for _, r := range rules {
		for _, rule := range compiler.Modules[policies[r.policy].File].Rules {
			if ruleName(rule) != r.rule {
				continue
			}
			if i := excludedAt(rule.Body, kind, op); i >= 0 {
				u.excluded(rule.Body, i)
			} else {
				u.rule(rule)
			}
		}
	}
	f := u.fields
	f.add("request", "kind")
	f.add("request", "operation")
	for _, obj := range []string{"object", "oldObject"} {
		for _, field := range dataFields {
			f.add("request", obj, field)
		}
	}
	return f
}

// ruleRef is one decision rule of one policy: policies[policy]'s rule.
type ruleRef struct {
	policy int
	rule   string
}

var (
	// kindRef is where the input says the kind of the object, and
	// operationRef the operation.
	kindRef      = ast.MustParseRef("input.request.kind.kind")
	operationRef = ast.MustParseRef("input.request.operation")
)

// scope is what a rule body requires of a request: one of kinds of
// object, and one of ops for its operation; nil when it requires none.
type scope struct{ kinds, ops map[string]bool }

// holds reports whether a body of scope s can hold for a request of kind
// and op; "" stands for a kind, or an operation, that no rule names.
func (s scope) holds(kind, op string) bool {
	return (s.kinds == nil || s.kinds[kind]) && (s.ops == nil || s.ops[op])
}

// scopeOf is what body, as compiled, requires of a request's kind and
// operation: the first of its expressions that is input.request.kind.kind
// == "Kind" or input.request.kind.kind in {"Kind", ...}, and likewise for
// input.request.operation. (The compiler writes the first as
// input.request.kind.kind = "Kind", and the second as __local0__ =
// input.request.kind.kind followed by internal.member_2(__local0__,
// {"Kind", ...}).) A request that a scope excludes cannot make the body
// hold, so the decision query for it leaves out a rule none of whose
// bodies can: that saves what even the rule index would cost, and most of
// a policy's rules are for one operation.
func scopeOf(body ast.Body) scope {
	var s scope
	// What variables the body set to a reference, before the expression
	// at hand.
	aliases := map[ast.Var]ast.Ref{}
	for _, e := range body {
		if e.Negated || len(e.With) > 0 || !e.IsCall() || len(e.Operands()) != 2 {
			continue
		}
		if s.kinds == nil {
			s.kinds = exprValues(e, kindRef, aliases)
		}
		if s.ops == nil {
			s.ops = exprValues(e, operationRef, aliases)
		}
		noteAlias(e, aliases)
	}
	return s
}

// excludedAt is the index of the first expression of body, as compiled,
// that a request of kind and op cannot pass: one that requires of the
// kind, or of the operation, as scopeOf reads them, values that are not
// theirs; -1 when there is none. An evaluation of body for such a request
// evaluates no expression after it, though it may evaluate those before:
// OPA's rule index leaves most such bodies out, but not every one.
func excludedAt(body ast.Body, kind, op string) int {
	aliases := map[ast.Var]ast.Ref{}
	for i, e := range body {
		if e.Negated || len(e.With) > 0 || !e.IsCall() || len(e.Operands()) != 2 {
			continue
		}
		if kinds := exprValues(e, kindRef, aliases); kinds != nil && !kinds[kind] {
			return i
		}
		if ops := exprValues(e, operationRef, aliases); ops != nil && !ops[op] {
			return i
		}
		noteAlias(e, aliases)
	}
	return -1
}

// noteAlias records in aliases the variable e, a call of two operands,
// sets to a reference: v = ref.
func noteAlias(e *ast.Expr, aliases map[ast.Var]ast.Ref) {
	if e.Operator().String() == ast.Equality.Name {
		if v, ok := e.Operand(0).Value.(ast.Var); ok {
			if r, ok := e.Operand(1).Value.(ast.Ref); ok {
				aliases[v] = r
			}
		}
	}
}

// exprValues are the values e, a call of two operands, requires of ref
// (itself, or a variable aliases says is it), nil when it is no such
// requirement.
func exprValues(e *ast.Expr, ref ast.Ref, aliases map[ast.Var]ast.Ref) map[string]bool {
	var r ast.Ref
	switch x := e.Operand(0).Value.(type) {
	case ast.Ref:
		r = x
	case ast.Var:
		r = aliases[x]
	}
	if !r.Equal(ref) {
		return nil
	}
	switch e.Operator().String() {
	case ast.Equal.Name, ast.Equality.Name:
		if s, ok := e.Operand(1).Value.(ast.String); ok {
			return map[string]bool{string(s): true}
		}
	case ast.Member.Name:
		set, ok := e.Operand(1).Value.(ast.Set)
		if !ok {
			return nil
		}
		values := map[string]bool{}
		for _, t := range set.Slice() {
			s, ok := t.Value.(ast.String)
			if !ok {
				return nil
			}
			values[string(s)] = true
		}
		return values
	}
	return nil
}

// enforcementOf reads custom.enforcement from the module's package-scope
// METADATA annotation; deny when it says none. An enforcement at any other
// scope is refused: it would seem to apply to one rule, and the
// enforcement is the whole policy's.
func enforcementOf(m *ast.Module) (Enforcement, error) {
	enforcement := Deny
	for _, a := range m.Annotations {
		v, ok := a.Custom["enforcement"]
		if !ok {
			continue
		}
		if a.Scope != "package" {
			return "", fmt.Errorf("%s: enforcement is the whole policy's: set it in the METADATA of the package, not of a %s", a.Location, a.Scope)
		}
		switch e := Enforcement(fmt.Sprint(v)); e {
		case Deny, Warn, DryRun:
			enforcement = e
		default:
			return "", fmt.Errorf("%s: enforcement %q is not deny, warn or dryrun", a.Location, v)
		}
	}
	return enforcement, nil
}

// ruleName is the first name of a rule's head: "deny" for deny contains
// msg, and for deny[msg] and deny.x contains msg too, whose Head.Name is
// empty. Were those told by Head.Name, a policy written so would load and
// never decide anything.
func ruleName(r *ast.Rule) string {
	ref := r.Head.Ref()
	if len(ref) == 0 {
		return ""
	}
	if v, ok := ref[0].Value.(ast.Var); ok {
		return string(v)
	}
	return ref[0].Value.String()
}

// checkDecisionRules refuses a policy whose deny, warn or patch is not a
// set: it could only make every request fail, or decide nothing.
func checkDecisionRules(m *ast.Module) error {
	for _, r := range m.Rules {
		switch name := ruleName(r); name {
		case "deny", "warn", "patch":
			if r.Head.RuleKind() != ast.MultiValue || len(r.Head.Ref()) != 1 {
				return fmt.Errorf("%s: %s must be a set: %s contains … if { … }", r.Location, name, name)
			}
		}
	}
	return nil
}

var (
	kubernetesData = ast.MustParseRef("data.kubernetes")
	trustplaneData = ast.MustParseRef("data.trustplane")
)

// withoutIO are the builtins policies may not call: they reach outside
// the server (a policy could send what it reads, Secret data included) or
// read its environment. The JSON schema builtins load a schema's $ref:
// from any host unless allow_net says none, and from any file the
// server can read, which nothing bounds.
var withoutIO = []string{"http.send", "net.lookup_ip_addr", "opa.runtime", "json.match_schema", "json.verify_schema"}

// Capabilities are OPA's builtins but those that reach outside the server
// or read its environment, for the policies and their tests alike, and no
// host a builtin may reach. With none left that waits on I/O, an
// evaluation is pure computation, which its cancel stops between any two
// expressions (see evalCancel).
func Capabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	c.Builtins = slices.DeleteFunc(c.Builtins, func(b *ast.Builtin) bool { return slices.Contains(withoutIO, b.Name) })
	// nil allows every host; empty, none.
	c.AllowNet = []string{}
	return c
}

func policyRef(name string) ast.Ref {
	return ast.Ref{ast.DefaultRootDocument, ast.StringTerm("trustplane"), ast.StringTerm("policies"), ast.StringTerm(name)}
}

// query is a decision query, compiled, and where its results are.
type query struct {
	// body is the query compiled by queryCompiler, against compiler's
	// policies and store's data, from text; result is the variable its
	// decisions are bound to.
	text          string
	body          ast.Body
	queryCompiler ast.QueryCompiler
	compiler      *ast.Compiler
	store         storage.Store
	result        ast.Var
	results       []result
	// merged: the query's value is the set of a merged module's rule,
	// not an array of each rule's set.
	merged bool
}

// run evaluates q against input, as rego's prepared query does, through
// OPA's topdown itself: rego's layer makes an evaluation context and a
// result set around each evaluation, a kilobyte and ten allocations of a
// Secret create's. tracer, if not nil, is told each step (see Explain).
// Its value is the query's decisions variable.
func (q *query) run(ctx context.Context, input ast.Value, cancel topdown.Cancel, cache *virtualCache, tracer topdown.QueryTracer) (*ast.Term, error) {
	txn, err := q.store.NewTransaction(ctx)
	if err != nil {
		return nil, err
	}
	defer q.store.Abort(ctx, txn)
	var value *ast.Term
	results := 0
	tq := topdown.NewQuery(q.body)
	if tracer != nil {
		tq = tq.WithQueryTracer(tracer)
	}
	err = tq.WithQueryCompiler(q.queryCompiler).
		WithCompiler(q.compiler).
		WithStore(q.store).
		WithTransaction(txn).
		WithInput(ast.NewTerm(input)).
		WithCancel(cancel).
		// Nothing reads the evaluation's metrics.
		WithMetrics(metrics.NoOp()).
		WithVirtualCache(cache).
		WithBaseCache(&cache.base).
		// A builtin that fails fails the evaluation, which refuses the
		// request, instead of leaving a deny undefined.
		WithStrictBuiltinErrors(true).
		Iter(ctx, func(qr topdown.QueryResult) error {
			results++
			value = qr[q.result]
			return nil
		})
	if err != nil {
		return nil, err
	}
	if results != 1 {
		return nil, fmt.Errorf("policy decisions: %d results", results)
	}
	return value, nil
}

// result is one element of a decision query's array: the value of one
// decision rule of one policy.
type result struct {
	policy int // in Set.policies
	rule   string
}

// decisionsVar is the variable of a decision query's array.
const decisionsVar = "decisions"

// decisionQuery collects, in one evaluation, the sets of the decision
// rules which, in one array: decisions := [data.trustplane.policies["p"].deny,
// ...]. It names each rule, rather than iterating over policies and rule
// names: a ground reference is looked up directly, where an iteration
// costs several microseconds per policy; and a set rule is always defined
// (empty when no rule body holds). One expression, not one per rule: the
// evaluation binds one variable, which query.run reads.
func decisionQuery(policies []Policy, which []ruleRef) (string, []result) {
	if len(which) == 0 {
		return "true", nil
	}
	refs := make([]string, len(which))
	results := make([]result, len(which))
	for i, r := range which {
		refs[i] = fmt.Sprintf("data.trustplane.policies[%q].%s", policies[r.policy].Name, r.rule)
		results[i] = result{policy: r.policy, rule: r.rule}
	}
	return fmt.Sprintf("%s := [%s]", decisionsVar, strings.Join(refs, ", ")), results
}

// fingerprint is a digest of the policy files' names and contents.
func fingerprint(files map[string][]byte) [sha256.Size]byte {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	h := sha256.New()
	for _, p := range paths {
		h.Write([]byte(p))
		h.Write([]byte{0})
		h.Write(files[p])
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
