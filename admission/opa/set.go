package opa

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
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
	// kinds are the kinds of object (input.request.kind.kind) the
	// policy's decision rules can apply to; nil when any.
	kinds map[string]bool
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
	// byKind evaluates, for a kind of object some policy names, only
	// the policies that can apply to it; other the policies that can
	// apply to any kind, for every other kind. See kindsOf.
	byKind map[string]*query
	other  *query
	// source is the digest of the files the set was compiled from.
	source [sha256.Size]byte
	// mutates: some policy has patch rules.
	mutates bool
	// data is what the policies read; while any of it is stale, Eval
	// refuses.
	data *Data
}

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
		policies = append(policies, Policy{Name: name, File: path, Enforcement: enforcement, rules: rules, kinds: kindsOf(m)})
	}
	sort.Slice(policies, func(i, j int) bool { return policies[i].Name < policies[j].Name })

	prepare := func(which []int) (*query, error) {
		text, results := decisionQuery(policies, which)
		opts := []func(*rego.Rego){
			rego.Query(text),
			rego.Store(d.store),
			rego.Capabilities(Capabilities()),
			// A builtin that fails fails the evaluation, which refuses
			// the request, instead of leaving a deny undefined.
			rego.StrictBuiltinErrors(true),
		}
		for _, m := range served {
			opts = append(opts, rego.ParsedModule(m))
		}
		q, err := rego.New(opts...).PrepareForEval(ctx)
		if err != nil {
			return nil, fmt.Errorf("compile policies: %w", err)
		}
		return &query{prepared: q, results: results}, nil
	}
	set := &Set{policies: policies, byKind: map[string]*query{}, source: fingerprint(files), mutates: mutates, data: d}
	all := make([]int, len(policies))
	for i := range policies {
		all[i] = i
	}
	var err error
	if set.query, err = prepare(all); err != nil {
		return nil, err
	}
	// One query for each set of policies some kind gets, prepared once.
	byPolicies := map[string]*query{}
	kinds := []string{""} // "": a kind no policy names
	for _, p := range policies {
		for k := range p.kinds {
			kinds = append(kinds, k)
		}
	}
	for _, kind := range kinds {
		var those []int
		for i, p := range policies {
			if p.kinds == nil || p.kinds[kind] {
				those = append(those, i)
			}
		}
		key := fmt.Sprint(those)
		q, ok := byPolicies[key]
		if !ok {
			if q, err = prepare(those); err != nil {
				return nil, err
			}
			byPolicies[key] = q
		}
		if kind == "" {
			set.other = q
		} else {
			set.byKind[kind] = q
		}
	}
	return set, nil
}

// kindRef is where the input says the kind of the object.
var kindRef = ast.MustParseRef("input.request.kind.kind")

// kindsOf are the kinds of object m's decision rules can apply to, nil
// when any: each deny, warn and patch rule must have, among the
// expressions of its body, input.request.kind.kind == "Kind" or
// input.request.kind.kind in {"Kind", ...}, or the policy applies to
// every kind. A request of another kind then skips the policy
// altogether, which saves what the rule index would still cost.
func kindsOf(m *ast.Module) map[string]bool {
	kinds := map[string]bool{}
	for _, r := range m.Rules {
		switch ruleName(r) {
		case "deny", "warn", "patch":
		default:
			continue
		}
		found := false
		for _, e := range r.Body {
			if ks := exprKinds(e); ks != nil {
				for _, k := range ks {
					kinds[k] = true
				}
				found = true
				break
			}
		}
		if !found {
			return nil
		}
	}
	return kinds
}

// exprKinds are the kinds e requires of input.request.kind.kind, nil when
// it is no such requirement.
func exprKinds(e *ast.Expr) []string {
	if e.Negated || len(e.With) > 0 || !e.IsCall() || len(e.Operands()) != 2 {
		return nil
	}
	if ref, ok := e.Operand(0).Value.(ast.Ref); !ok || !ref.Equal(kindRef) {
		return nil
	}
	switch e.Operator().String() {
	case ast.Equal.Name, ast.Equality.Name:
		if s, ok := e.Operand(1).Value.(ast.String); ok {
			return []string{string(s)}
		}
	case ast.Member.Name:
		set, ok := e.Operand(1).Value.(ast.Set)
		if !ok {
			return nil
		}
		var kinds []string
		for _, t := range set.Slice() {
			s, ok := t.Value.(ast.String)
			if !ok {
				return nil
			}
			kinds = append(kinds, string(s))
		}
		return kinds
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
// read its environment.
var withoutIO = []string{"http.send", "net.lookup_ip_addr", "opa.runtime"}

// Capabilities are OPA's builtins but those that reach outside the server
// or read its environment, for the policies and their tests alike.
func Capabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	c.Builtins = slices.DeleteFunc(c.Builtins, func(b *ast.Builtin) bool { return slices.Contains(withoutIO, b.Name) })
	return c
}

func policyRef(name string) ast.Ref {
	return ast.Ref{ast.DefaultRootDocument, ast.StringTerm("trustplane"), ast.StringTerm("policies"), ast.StringTerm(name)}
}

// query is a prepared decision query and where its results are.
type query struct {
	prepared rego.PreparedEvalQuery
	results  []result
}

// result is a variable of a decision query: the value of one decision
// rule of one policy.
type result struct {
	name   string
	policy int // in Set.policies
	rule   string
}

// decisionQuery collects, in one evaluation, the deny, warn and patch sets
// of policies[i] for each i of which, each in a variable of its own. It
// names each rule a policy defines, rather than iterating over policies
// and rule names: a ground reference is looked up directly, where an
// iteration costs several microseconds per policy; and a set rule is
// always defined (empty when no rule body holds). The sets are not put
// together in one object: OPA would build it, then copy it into the
// result.
func decisionQuery(policies []Policy, which []int) (string, []result) {
	var exprs []string
	var results []result
	for _, i := range which {
		p := policies[i]
		for _, r := range p.rules {
			name := fmt.Sprintf("d%d", len(results))
			exprs = append(exprs, fmt.Sprintf("%s := data.trustplane.policies[%q].%s", name, p.Name, r))
			results = append(results, result{name: name, policy: i, rule: r})
		}
	}
	if len(exprs) == 0 {
		return "true", nil
	}
	return strings.Join(exprs, "; "), results
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
