package opa

import (
	"context"
	"fmt"
	"sort"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// Decision is what one policy says of a request.
type Decision struct {
	Policy      string
	Enforcement Enforcement
	Deny        []string
	Warn        []string
	// Patch is JSONPatch operations on the object.
	Patch []any
}

// Eval evaluates every policy of the set against input, an AdmissionReview
// as an AST value. A policy whose rules are not sets is an error: a caller
// must then refuse the request.
func (s *Set) Eval(ctx context.Context, input ast.Value) ([]Decision, error) {
	if s.data.stale.Load() > 0 {
		return nil, errStale
	}
	rs, err := s.query.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("policy decisions: %d results", len(rs))
	}
	all, ok := rs[0].Bindings["decisions"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("policy decisions: unexpected %T", rs[0].Bindings["decisions"])
	}
	out := make([]Decision, 0, len(s.policies))
	for _, p := range s.policies {
		rules, _ := all[p.Name].(map[string]any)
		d := Decision{Policy: p.Name, Enforcement: p.Enforcement}
		var err error
		if d.Deny, err = messages(p.Name, "deny", rules["deny"]); err != nil {
			return nil, err
		}
		if d.Warn, err = messages(p.Name, "warn", rules["warn"]); err != nil {
			return nil, err
		}
		if v, ok := rules["patch"]; ok {
			ops, isSet := v.([]any)
			if !isSet {
				return nil, notASet(p.Name, "patch")
			}
			d.Patch = ops
		}
		out = append(out, d)
	}
	return out, nil
}

// messages are a deny or warn set's strings, sorted; an element that is
// not a string is shown as OPA prints it.
func messages(policy, rule string, v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	set, ok := v.([]any)
	if !ok {
		return nil, notASet(policy, rule)
	}
	out := make([]string, 0, len(set))
	for _, m := range set {
		if s, ok := m.(string); ok {
			out = append(out, s)
		} else {
			out = append(out, fmt.Sprint(m))
		}
	}
	sort.Strings(out)
	return out, nil
}

// notASet is the error of a decision rule that is not a set, which Compile
// refuses: were one to come through, the request is refused.
func notASet(policy, rule string) error {
	return fmt.Errorf("policy %s: %s is not a set", policy, rule)
}
