package opa

import (
	"context"
	"fmt"
	"sort"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
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
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	growStack()
	// The evaluation stops when ctx is done. OPA would otherwise start a
	// goroutine per evaluation to watch ctx.
	cancel := topdown.NewCancel()
	stop := context.AfterFunc(ctx, cancel.Cancel)
	defer stop()
	rs, err := s.queryFor(input).Eval(ctx,
		rego.EvalParsedInput(input),
		rego.EvalExternalCancel(cancel),
		// Nothing reads the evaluation's metrics.
		rego.EvalMetrics(metrics.NoOp()),
		rego.EvalVirtualCache(newVirtualCache()),
		// The decisions are read as AST values, not converted to Go
		// values first.
		rego.EvalGenerateJSON(func(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil }),
	)
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("policy decisions: %d results", len(rs))
	}
	t, _ := rs[0].Bindings["decisions"].(*ast.Term)
	if t == nil {
		return nil, fmt.Errorf("policy decisions: unexpected %T", rs[0].Bindings["decisions"])
	}
	all, ok := t.Value.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("policy decisions: unexpected %v", ast.ValueName(t.Value))
	}
	out := make([]Decision, 0, len(s.policies))
	for _, p := range s.policies {
		d := Decision{Policy: p.Name, Enforcement: p.Enforcement}
		if get(all, p.key) == nil {
			// Not evaluated: the policy cannot apply to this kind.
			// Its decision is what an evaluation gives: empty sets.
			for _, r := range p.rules {
				switch r {
				case "deny":
					d.Deny = []string{}
				case "warn":
					d.Warn = []string{}
				}
			}
			out = append(out, d)
			continue
		}
		rules, _ := get(all, p.key).(ast.Object)
		var err error
		if d.Deny, err = messages(p.Name, "deny", get(rules, denyKey)); err != nil {
			return nil, err
		}
		if d.Warn, err = messages(p.Name, "warn", get(rules, warnKey)); err != nil {
			return nil, err
		}
		if v := get(rules, patchKey); v != nil {
			set, isSet := v.(ast.Set)
			if !isSet {
				return nil, notASet(p.Name, "patch")
			}
			if set.Len() > 0 {
				ops, err := ast.JSON(set)
				if err != nil {
					return nil, err
				}
				d.Patch, _ = ops.([]any)
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// queryFor is the query that evaluates the policies that can apply to
// input's kind of object.
func (s *Set) queryFor(input ast.Value) rego.PreparedEvalQuery {
	v, err := input.Find(inputKindRef)
	if err != nil {
		return s.query
	}
	kind, ok := v.(ast.String)
	if !ok {
		return s.query
	}
	if q, ok := s.byKind[string(kind)]; ok {
		return q
	}
	return s.other
}

// inputKindRef is kindRef within the input.
var inputKindRef = kindRef[1:]

var (
	denyKey  = ast.StringTerm("deny")
	warnKey  = ast.StringTerm("warn")
	patchKey = ast.StringTerm("patch")
)

// get is obj[key], nil when obj is nil or has no such key.
func get(obj ast.Object, key *ast.Term) ast.Value {
	if obj == nil {
		return nil
	}
	t := obj.Get(key)
	if t == nil {
		return nil
	}
	return t.Value
}

// messages are a deny or warn set's strings, sorted; an element that is
// not a string is shown as OPA prints it.
func messages(policy, rule string, v ast.Value) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	set, ok := v.(ast.Set)
	if !ok {
		return nil, notASet(policy, rule)
	}
	if set.Len() == 0 {
		return []string{}, nil
	}
	out := make([]string, 0, set.Len())
	var err error
	set.Foreach(func(t *ast.Term) {
		if s, ok := t.Value.(ast.String); ok {
			out = append(out, string(s))
			return
		}
		x, jerr := ast.JSON(t.Value)
		if jerr != nil {
			err = jerr
			return
		}
		out = append(out, fmt.Sprint(x))
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// notASet is the error of a decision rule that is not a set, which Compile
// refuses: were one to come through, the request is refused.
func notASet(policy, rule string) error {
	return fmt.Errorf("policy %s: %s is not a set", policy, rule)
}
