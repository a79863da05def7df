package opa

import (
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The flat cache answers as OPA's trie does: per frame, exact refs only,
// undefined apart from not cached.
func TestVirtualCache(t *testing.T) {
	c := newVirtualCache()
	a, ab := ast.MustParseRef("data.p.a"), ast.MustParseRef("data.p.a.b")
	one, two := ast.IntNumberTerm(1), ast.IntNumberTerm(2)
	check := func(ref ast.Ref, want *ast.Term, wantUndefined bool) {
		t.Helper()
		if got, undefined := c.Get(ref); got != want || undefined != wantUndefined {
			t.Errorf("Get(%v) = %v, %v; want %v, %v", ref, got, undefined, want, wantUndefined)
		}
	}
	check(a, nil, false)
	c.Put(ab, one)
	check(a, nil, false) // a prefix of a cached ref is not cached
	check(ab, one, false)
	c.Put(a, nil)
	check(a, nil, true)
	c.Put(a, two)
	check(a, two, false)

	reused := ast.Ref{ast.DefaultRootDocument, ast.StringTerm("p"), ast.StringTerm("c")}
	c.Put(reused, one)
	reused[2] = ast.StringTerm("d")
	check(ast.MustParseRef("data.p.c"), one, false) // the cache keeps its own copy
	check(ast.MustParseRef("data.p.d"), nil, false)

	c.Push()
	check(ab, nil, false)
	c.Put(ab, two)
	check(ab, two, false)
	if keys := c.Keys(); len(keys) != 1 || !keys[0].Equal(ab) {
		t.Errorf("Keys of the new frame %v, want [%v]", keys, ab)
	}
	c.Pop()
	check(ab, one, false)
	if keys := c.Keys(); len(keys) != 3 {
		t.Errorf("Keys %v, want 3", keys)
	}
}

// The base cache answers as OPA's: under the shortest ref cached that a
// ref starts with, nothing for a ref none starts with, and keeps its own
// copy of a ref.
func TestBaseCache(t *testing.T) {
	var c baseCache
	ns, labels := ast.MustParseRef(`data.kubernetes.namespaces.team`), ast.MustParseRef(`data.kubernetes.namespaces.team.metadata.labels`)
	team := ast.MustParseTerm(`{"metadata": {"labels": {"env": "prod"}}}`).Value
	check := func(ref string, want ast.Value) {
		t.Helper()
		got := c.Get(ast.MustParseRef(ref))
		if (got == nil) != (want == nil) || got != nil && got.Compare(want) != 0 {
			t.Errorf("Get(%s) = %v, want %v", ref, got, want)
		}
	}
	check(`data.kubernetes.namespaces.team`, nil)
	c.Put(labels, ast.MustParseTerm(`{"env": "dev"}`).Value)
	check(`data.kubernetes.namespaces.team`, nil) // a prefix of a cached ref is not cached
	check(`data.kubernetes.namespaces.team.metadata.labels.env`, ast.String("dev"))
	reused := slices.Clone(ns)
	c.Put(reused, team)
	reused[3] = ast.StringTerm("other")
	check(`data.kubernetes.namespaces.team`, team)
	check(`data.kubernetes.namespaces.other`, nil)
	// The shorter ref's value answers for the longer.
	check(`data.kubernetes.namespaces.team.metadata.labels.env`, ast.String("prod"))
	check(`data.kubernetes.namespaces.team.metadata.annotations`, nil)
	check(`data.kubernetes.namespaces.team.metadata.labels.env.x`, nil)
	c.Put(ns, ast.MustParseTerm(`{"metadata": {}}`).Value)
	check(`data.kubernetes.namespaces.team.metadata`, ast.MustParseTerm(`{}`).Value)
	if len(c.entries) != 2 {
		t.Errorf("%d entries, want 2: a ref put again replaces its value", len(c.entries))
	}
}

// Numbers are keys as the store's paths are: 1 and 1.0 are two.
func TestBaseCacheNumbers(t *testing.T) {
	var c baseCache
	c.Put(ast.MustParseRef(`data.cfg.a[1]`), ast.String("one"))
	c.Put(ast.MustParseRef(`data.cfg.a[1.0]`), ast.String("other"))
	if got := c.Get(ast.MustParseRef(`data.cfg.a[1]`)); got != ast.String("one") {
		t.Errorf("a[1] = %v, want one", got)
	}
	if got := c.Get(ast.MustParseRef(`data.cfg.a[1.0]`)); got != ast.String("other") {
		t.Errorf("a[1.0] = %v, want other", got)
	}
}
