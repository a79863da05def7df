package opa

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
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
// must then refuse the request. The evaluation stops when ctx is done.
func (s *Set) Eval(ctx context.Context, input ast.Value) ([]Decision, error) {
	return s.eval(ctx, s.queryFor(input), input, 0, nil)
}

// eval is Eval with the query q, stopped after timeout too if it is
// positive, with errTimedOut. The decisions are written over those of
// out, and their message slices, when it has room for them.
func (s *Set) eval(ctx context.Context, q *query, input ast.Value, timeout time.Duration, out []Decision) ([]Decision, error) {
	if s.data.stale.Load() > 0 {
		return nil, errStale
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	if err := s.data.catchUp(ctx, deadline); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var left time.Duration
	if timeout > 0 {
		if left = time.Until(deadline); left <= 0 {
			return nil, errTimedOut
		}
	}
	growStack(false)
	cancel := startCancel(ctx, left)
	defer cancel.release()
	cache := getVirtualCache()
	defer putVirtualCache(cache)
	value, err := q.run(ctx, input, cancel, cache, nil)
	if err != nil {
		if cancel.timedOut.Load() {
			return nil, errTimedOut
		}
		return nil, err
	}
	// A rule the query does not evaluate cannot hold for this kind and
	// operation: its decision is what an evaluation gives, an empty set.
	if cap(out) < len(s.policies) {
		out = make([]Decision, len(s.policies))
	}
	out = out[:len(s.policies)]
	for i, p := range s.policies {
		d := Decision{Policy: p.Name, Enforcement: p.Enforcement}
		for _, r := range p.rules {
			switch r {
			case "deny":
				d.Deny = emptied(out[i].Deny)
			case "warn":
				d.Warn = emptied(out[i].Warn)
			}
		}
		out[i] = d
	}
	if q.merged {
		if err := mergedDecisions(out, value); err != nil {
			return nil, err
		}
		return out, nil
	}
	var values *ast.Array
	if len(q.results) > 0 {
		if value != nil {
			values, _ = value.Value.(*ast.Array)
		}
		if values == nil || values.Len() != len(q.results) {
			return nil, errors.New("policy decisions: the query's result is not an array of the decisions")
		}
	}
	for i, r := range q.results {
		t := values.Elem(i)
		d := &out[r.policy]
		var err error
		switch r.rule {
		case "deny":
			d.Deny, err = messages(d.Policy, r.rule, t.Value)
		case "warn":
			d.Warn, err = messages(d.Policy, r.rule, t.Value)
		case "patch":
			d.Patch, err = patchOps(d.Policy, t.Value)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// emptied is msgs with no message, keeping its array: an empty set of
// messages, never nil.
func emptied(msgs []string) []string {
	if msgs == nil {
		return []string{}
	}
	clear(msgs[:cap(msgs)])
	return msgs[:0]
}

// mergedDecisions adds to out, by policy, the decisions of a merged
// module's rule: v, its set of [policy, rule, value], as the per-rule
// queries' sets would give them: messages sorted, patch operations in the
// order of the set.
func mergedDecisions(out []Decision, t *ast.Term) error {
	if t == nil {
		return errors.New("policy decisions: the query's result is not the set of the decisions")
	}
	set, ok := t.Value.(ast.Set)
	if !ok {
		return errors.New("policy decisions: the query's result is not the set of the decisions")
	}
	err := set.Iter(func(e *ast.Term) error {
		a, ok := e.Value.(*ast.Array)
		if !ok || a.Len() != 3 {
			return errors.New("policy decisions: a decision is not [policy, rule, value]")
		}
		n, ok := a.Elem(0).Value.(ast.Number)
		i, isInt := n.Int()
		rule, isString := a.Elem(1).Value.(ast.String)
		if !ok || !isInt || !isString || i < 0 || i >= len(out) {
			return errors.New("policy decisions: a decision is not [policy, rule, value]")
		}
		d := &out[i]
		switch rule {
		case "deny":
			return appendMessage(&d.Deny, a.Elem(2).Value)
		case "warn":
			return appendMessage(&d.Warn, a.Elem(2).Value)
		case "patch":
			op, err := ast.JSON(a.Elem(2).Value)
			if err != nil {
				return err
			}
			d.Patch = append(d.Patch, op)
			return nil
		}
		return fmt.Errorf("policy decisions: %s is not a decision rule", rule)
	})
	if err != nil {
		return err
	}
	for i := range out {
		sort.Strings(out[i].Deny)
		sort.Strings(out[i].Warn)
	}
	return nil
}

// appendMessage appends v to msgs as messages shows it.
func appendMessage(msgs *[]string, v ast.Value) error {
	if s, ok := v.(ast.String); ok {
		*msgs = append(*msgs, string(s))
		return nil
	}
	x, err := ast.JSON(v)
	if err != nil {
		return err
	}
	*msgs = append(*msgs, fmt.Sprint(x))
	return nil
}

// patchOps are a patch set's operations, as JSON values.
func patchOps(policy string, v ast.Value) ([]any, error) {
	set, ok := v.(ast.Set)
	if !ok {
		return nil, notASet(policy, "patch")
	}
	if set.Len() == 0 {
		return nil, nil
	}
	ops, err := ast.JSON(set)
	if err != nil {
		return nil, err
	}
	out, _ := ops.([]any)
	return out, nil
}

// queryFor is the query that evaluates the decision rules that can hold
// for input's kind of object and operation: all of them when the input
// does not say both as strings.
func (s *Set) queryFor(input ast.Value) *query {
	kind, ok := stringAt(input, inputKindRef)
	if !ok {
		return s.query
	}
	op, ok := stringAt(input, inputOperationRef)
	if !ok {
		return s.query
	}
	return s.scoped(kind, op)
}

// scoped is the query for a request of kind and op.
func (s *Set) scoped(kind, op string) *query {
	return s.byScope[s.scope(kind, op)]
}

// scope is the key of byScope and inputs for a request of kind and op.
func (s *Set) scope(kind, op string) [2]string {
	if !s.kinds[kind] {
		kind = ""
	}
	if !s.ops[op] {
		op = ""
	}
	return [2]string{kind, op}
}

// appliesTo reports whether some decision rule of the set can hold for a
// request of kind and op: whether the query for them (as queryFor
// chooses it) evaluates any.
func (s *Set) appliesTo(kind, op string) bool {
	return len(s.scoped(kind, op).results) > 0
}

// stringAt is the string at ref in v; false when there is none.
func stringAt(v ast.Value, ref ast.Ref) (string, bool) {
	x, err := v.Find(ref)
	if err != nil {
		return "", false
	}
	str, ok := x.(ast.String)
	return string(str), ok
}

// inputKindRef and inputOperationRef are kindRef and operationRef within
// the input.
var (
	inputKindRef      = kindRef[1:]
	inputOperationRef = operationRef[1:]
)

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
	err := set.Iter(func(t *ast.Term) error { return appendMessage(&out, t.Value) })
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
