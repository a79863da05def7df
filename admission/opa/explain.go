package opa

import (
	"bytes"
	"context"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Explain evaluates the policies against input as Eval does, and also
// returns OPA's trace of an evaluation of the query of every rule with
// the same input: which rules were entered, which expressions held or
// failed, and where. The decisions are Eval's own, so that they are the
// server's by construction; the server, too, evaluates a request more
// than once (mutating, then validating) and relies on the answers being
// the same. The trace is returned on an evaluation error too, up to the
// error.
//
// The trace never shows the data of the input's objects (see Redactor):
// where the input holds such data, a string that OPA binds or notes
// during the evaluation is shown only if it is a literal of the policies
// or a string of the input that holds none of that data. Anything
// computed from the input (a decoded value, a part of one, a message
// built from one) is shown as Redacted: a policy may copy a value into a
// variable, transform it or trace it, and none of it reaches the output.
func (s *Set) Explain(ctx context.Context, input ast.Value) ([]Decision, string, error) {
	tracer := topdown.NewBufferTracer()
	cancel := startCancel(ctx, 0)
	cache := getVirtualCache()
	_, traceErr := s.query.run(ctx, input, cancel, cache, tracer)
	putVirtualCache(cache)
	cancel.release()
	trace := redactTrace(*tracer, input, NewRedactor(input))
	if traceErr != nil {
		return nil, trace, traceErr
	}
	decisions, err := s.Eval(ctx, input)
	return decisions, trace, err
}

// redactTrace prints trace, redacted by r for input.
func redactTrace(trace []*topdown.Event, input ast.Value, r *Redactor) string {
	var buf bytes.Buffer
	if r.Empty() {
		topdown.PrettyTraceWithLocation(&buf, trace)
		return buf.String()
	}
	// Unify events and notes carry the values of the evaluation; every
	// other event shows the policy as written.
	known := map[ast.String]bool{}
	collect := func(x any) {
		ast.WalkTerms(x, func(t *ast.Term) bool {
			if s, ok := t.Value.(ast.String); ok {
				known[s] = true
			}
			return false
		})
	}
	collect(input)
	for _, e := range trace {
		if e.Op != topdown.UnifyOp && e.Op != topdown.NoteOp && e.Node != nil {
			collect(e.Node)
		}
	}
	hide := ast.NewGenericTransformer(func(x any) (any, error) {
		if s, ok := x.(ast.String); ok && (!known[s] || !r.clean(string(s))) {
			return ast.String(Redacted), nil
		}
		return x, nil
	})

	out := make([]*topdown.Event, len(trace))
	for i, e := range trace {
		cp := *e
		switch e.Op {
		case topdown.NoteOp:
			if s := ast.String(e.Message); !known[s] || !r.clean(e.Message) {
				cp.Message = Redacted
			}
		case topdown.UnifyOp:
			cp.Node = ast.NewExpr(ast.StringTerm(Redacted))
			if expr, ok := e.Node.(*ast.Expr); ok {
				if x, err := ast.Transform(hide, expr.Copy()); err == nil {
					if node, ok := x.(ast.Node); ok {
						cp.Node = node
					}
				}
			}
		}
		// The subject of an Index event may be plugged with values.
		if e.Ref != nil {
			cp.Ref = &ast.Ref{ast.VarTerm(Redacted)}
			if x, err := ast.Transform(hide, e.Ref.Copy()); err == nil {
				if ref, ok := x.(ast.Ref); ok {
					cp.Ref = &ref
				}
			}
		}
		out[i] = &cp
	}
	topdown.PrettyTraceWithLocation(&buf, out)
	// Whatever else shows a value in one of its forms.
	return r.String(buf.String())
}
