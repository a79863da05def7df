package opa

import (
	"github.com/open-policy-agent/opa/v1/ast"
)

// fields are the parts of an admission input an evaluation may read, as a
// tree of object keys: a value whose node is all is read whole; of an
// object whose node is not, only the keys below it (none: only that it is
// there); any other value is read whole. The input of a request is built
// with only those parts: what no rule of its query can read need not be
// built, and most of an object (its managedFields, its other metadata) is
// read by no rule of most queries.
type fields struct {
	all bool
	sub map[string]*fields
}

// allFields is the whole input.
var allFields = &fields{all: true}

// add makes the value at path read whole.
func (f *fields) add(path ...string) {
	for _, k := range path {
		if f.all {
			return
		}
		f = f.child(k)
	}
	f.all, f.sub = true, nil
}

// need makes the value at path read, at least whether it is there.
func (f *fields) need(path ...string) {
	for _, k := range path {
		if f.all {
			return
		}
		f = f.child(k)
	}
}

// child is the node of key, made if there is none.
func (f *fields) child(key string) *fields {
	next := f.sub[key]
	if next == nil {
		if f.sub == nil {
			f.sub = map[string]*fields{}
		}
		next = &fields{}
		f.sub[key] = next
	}
	return next
}

// at is what is read of the value at key; nil when none of it is.
func (f *fields) at(key string) *fields {
	if f.all {
		return f
	}
	return f.sub[key]
}

// inputUse finds what evaluations read of their input: the input
// references of the rules they evaluate, and of every rule those refer
// to, as compiled. A reference is read from its longest prefix of string
// keys, whole: input.request.object.metadata.labels[k] reads labels,
// input.request reads the request, a bare input everything. The one
// exception is object.get(x, key, default) with x a ground reference to
// the input and key a constant key or path, which reads only the value at
// key: the policies use it for fields that may be absent. The compiler
// writes the call as v = x; object.get(v, key, default, out), so a variable
// of the rule set once, and only once, to such a reference stands for it:
// where it is object.get's object, the call reads the value at key;
// anywhere else, it reads the whole of it; and v = x reads that x is
// there. When a module replaces object.get (with object.get as f), f may
// read anything of its object, and object.get reads as any call.
type inputUse struct {
	compiler *ast.Compiler
	fields   *fields
	seen     map[*ast.Rule]bool
	queue    []*ast.Rule
	// aliases are the variables of the rule at hand set once to a ground
	// reference to the input.
	aliases map[ast.Var]ast.Ref
	// getReads: object.get is OPA's, which reads only its key.
	getReads bool
	// indexOnly: what is walked is what OPA's rule index may read, input
	// references only, not rules.
	indexOnly bool
}

// newInputUse finds what the rules of compiler read; getReads: object.get
// is OPA's (see replaced).
func newInputUse(compiler *ast.Compiler, getReads bool) *inputUse {
	return &inputUse{compiler: compiler, fields: &fields{}, seen: map[*ast.Rule]bool{}, getReads: getReads}
}

// replaced reports whether a module of compiler replaces the builtin
// named name with a with modifier.
func replaced(compiler *ast.Compiler, name string) bool {
	found := false
	for _, m := range compiler.Modules {
		ast.WalkExprs(m, func(e *ast.Expr) bool {
			for _, w := range e.With {
				if r, ok := w.Target.Value.(ast.Ref); ok && r.String() == name {
					found = true
				}
			}
			return found
		})
	}
	return found
}

// rule adds what an evaluation of r may read, and what the rules it
// refers to may.
func (u *inputUse) rule(r *ast.Rule) {
	u.enqueue(r)
	u.drain()
}

// excluded adds what evaluating body may read when the expression at
// index i excludes the request: the expressions up to it, and the rules
// they refer to, are evaluated; and OPA's rule index may look up any
// reference to the input of the body's expressions to choose whether to
// evaluate it at all. Those are read too, so that the index chooses the
// same bodies for the input built as for the whole: were one left out, a
// body the whole input's index evaluates could fail (or error, which
// refuses) before the expression that excludes it, and not be evaluated
// for the input built. Rules named after i are not evaluated: the index
// reads no rule's value.
func (u *inputUse) excluded(body ast.Body, i int) {
	nodes := make([]any, i+1)
	for j, e := range body[:i+1] {
		nodes[j] = e
	}
	u.unit(nodes)
	u.drain()
	u.indexOnly = true
	u.unit([]any{body})
	u.indexOnly = false
}

func (u *inputUse) enqueue(r *ast.Rule) {
	if !u.seen[r] {
		u.seen[r] = true
		u.queue = append(u.queue, r)
	}
}

// drain adds what the rules queued may read, each body and else branch,
// until no rule they refer to is left.
func (u *inputUse) drain() {
	for len(u.queue) > 0 {
		r := u.queue[len(u.queue)-1]
		u.queue = u.queue[:len(u.queue)-1]
		var nodes []any
		for ; r != nil; r = r.Else {
			// Of the head's reference, what follows the rule's name
			// (p[x].y): the name is the rule's and its other bodies',
			// which a reference to the rule brings in, but which r
			// does not evaluate.
			for _, t := range r.Head.Ref()[1:] {
				nodes = append(nodes, t)
			}
			for _, t := range r.Head.Args {
				nodes = append(nodes, t)
			}
			if r.Head.Key != nil {
				nodes = append(nodes, r.Head.Key)
			}
			if r.Head.Value != nil {
				nodes = append(nodes, r.Head.Value)
			}
			nodes = append(nodes, r.Body)
		}
		u.unit(nodes)
	}
}

// unit adds what evaluating nodes, the parts of one rule, may read.
func (u *inputUse) unit(nodes []any) {
	defs := map[ast.Var][]ast.Ref{}
	for _, n := range nodes {
		ast.NewGenericVisitor(func(x any) bool {
			if e, ok := x.(*ast.Expr); ok {
				if v, r, ok := aliasDef(e); ok {
					defs[v] = append(defs[v], r)
				}
			}
			return false
		}).Walk(n)
	}
	u.aliases = map[ast.Var]ast.Ref{}
	for v, refs := range defs {
		if len(refs) == 1 {
			u.aliases[v] = refs[0]
		}
	}
	for _, n := range nodes {
		u.walk(n)
	}
	u.aliases = nil
}

// aliasDef is e when it is v = x, x a ground reference to the input.
func aliasDef(e *ast.Expr) (ast.Var, ast.Ref, bool) {
	if e.Negated || len(e.With) > 0 || !e.IsCall() || len(e.Operands()) != 2 || e.Operator().String() != ast.Equality.Name {
		return "", nil, false
	}
	v, ok := e.Operand(0).Value.(ast.Var)
	if !ok {
		return "", nil, false
	}
	r, ok := e.Operand(1).Value.(ast.Ref)
	if !ok || !r.HasPrefix(ast.InputRootRef) {
		return "", nil, false
	}
	if _, ground := stringKeys(r[1:]...); !ground {
		return "", nil, false
	}
	return v, r, true
}

func (u *inputUse) walk(x any) {
	ast.NewGenericVisitor(func(x any) bool {
		switch x := x.(type) {
		case *ast.Expr:
			if v, r, ok := aliasDef(x); ok && u.aliases[v] != nil {
				// It reads that r is there; what v reads of r is read
				// where v is used.
				path, _ := stringKeys(r[1:]...)
				u.fields.need(path...)
				return true
			}
			if x.IsCall() && u.addObjectGet(x.Operator(), x.Operands()) {
				for _, t := range x.Operands()[2:] {
					u.walk(t)
				}
				for _, w := range x.With {
					u.walk(w)
				}
				return true
			}
		case ast.Call:
			if len(x) > 0 {
				if op, ok := x[0].Value.(ast.Ref); ok && u.addObjectGet(op, x[1:]) {
					for _, t := range x[3:] {
						u.walk(t)
					}
					return true
				}
			}
		case ast.Ref:
			u.ref(x)
			return true
		case ast.Var:
			if r, ok := u.aliases[x]; ok {
				u.ref(r)
				return true
			}
			u.ref(ast.Ref{ast.VarTerm(string(x))})
			return true
		}
		return false
	}).Walk(x)
}

// ref adds what reading r may read: of the input, its prefix of string
// keys; of data, every rule it may refer to.
func (u *inputUse) ref(r ast.Ref) {
	if v, ok := r[0].Value.(ast.Var); ok {
		if alias, ok := u.aliases[v]; ok {
			// v.x[y] reads what alias.x[y] does.
			r = append(alias.Copy(), r[1:]...)
		}
	}
	switch {
	case r.HasPrefix(ast.InputRootRef):
		path, _ := stringKeys(r[1:]...)
		u.fields.add(path...)
	case r.HasPrefix(ast.DefaultRootRef) && !u.indexOnly:
		for _, rule := range u.compiler.GetRulesDynamicWithOpts(r, ast.RulesOptions{IncludeHiddenModules: true}) {
			u.enqueue(rule)
		}
	}
	for _, t := range r[1:] {
		u.walk(t)
	}
}

// addObjectGet adds what object.get reads with args, when op is OPA's
// object.get, its object a ground reference to the input (or an alias of
// one), and its key a constant string or path of strings; false when it
// is not, and args are to be walked as any others.
func (u *inputUse) addObjectGet(op ast.Ref, args []*ast.Term) bool {
	if !u.getReads || op.String() != ast.ObjectGet.Name || len(args) < 3 {
		return false
	}
	var obj ast.Ref
	switch x := args[0].Value.(type) {
	case ast.Ref:
		obj = x
	case ast.Var:
		obj = u.aliases[x]
	}
	if !obj.HasPrefix(ast.InputRootRef) {
		return false
	}
	path, ground := stringKeys(obj[1:]...)
	if !ground {
		return false
	}
	switch k := args[1].Value.(type) {
	case ast.String:
		path = append(path, string(k))
	case *ast.Array:
		terms := make([]*ast.Term, k.Len())
		for i := range terms {
			terms[i] = k.Elem(i)
		}
		keys, ground := stringKeys(terms...)
		if !ground {
			return false
		}
		path = append(path, keys...)
	default:
		return false
	}
	u.fields.add(path...)
	return true
}

// stringKeys are the leading string keys of terms, and whether every term
// is one.
func stringKeys(terms ...*ast.Term) ([]string, bool) {
	keys := make([]string, 0, len(terms))
	for _, t := range terms {
		s, ok := t.Value.(ast.String)
		if !ok {
			return keys, false
		}
		keys = append(keys, string(s))
	}
	return keys, true
}
