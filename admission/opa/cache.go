package opa

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// virtualCache is the cache of rule values within one evaluation, as
// OPA's own, but flat: each frame a list of the refs cached and their
// values. OPA's is a trie with a hash map per level of each ref
// (data.trustplane.policies.<policy>.<rule>), which cost a third of the
// allocations of an evaluation; an evaluation caches a few dozen rules,
// which a list holds as well.
type virtualCache struct {
	frames [][]cacheEntry
	// refTerms holds the terms of the refs cached, one after the other:
	// a ref copied into a slice of its own cost an allocation per rule
	// cached, 17 of an evaluation's ~320 for a Secret create.
	refTerms []*ast.Term
	// base is the evaluation's cache of what it read of the store.
	base baseCache
}

type cacheEntry struct {
	hash      int
	ref       ast.Ref
	value     *ast.Term
	undefined bool
}

var _ topdown.VirtualCache = (*virtualCache)(nil)

func newVirtualCache() *virtualCache {
	c := &virtualCache{frames: make([][]cacheEntry, 1, 2), refTerms: make([]*ast.Term, 0, 96)}
	c.frames[0] = make([]cacheEntry, 0, 32)
	return c
}

// virtualCaches are the caches of evaluations that have ended, emptied:
// a new cache for each evaluation was an eighth of what it allocated.
var virtualCaches = sync.Pool{New: func() any { return newVirtualCache() }}

// getVirtualCache is an empty cache for one evaluation; putVirtualCache
// gives it back once nothing reads it.
func getVirtualCache() *virtualCache { return virtualCaches.Get().(*virtualCache) }

func putVirtualCache(c *virtualCache) {
	// Emptied, so that it holds on to no term of the evaluation.
	for i := range c.frames {
		clear(c.frames[i])
	}
	clear(c.refTerms)
	c.frames, c.refTerms = c.frames[:1], c.refTerms[:0]
	c.frames[0] = c.frames[0][:0]
	clear(c.base.entries)
	clear(c.base.refTerms)
	c.base.entries, c.base.refTerms = c.base.entries[:0], c.base.refTerms[:0]
	virtualCaches.Put(c)
}

// Push starts a frame of its own (for an expression evaluated with
// "with"), empty.
func (c *virtualCache) Push() { c.frames = append(c.frames, nil) }

// Pop drops the newest frame and what it holds.
func (c *virtualCache) Pop() { c.frames = c.frames[:len(c.frames)-1] }

// Get is the value cached for ref in the newest frame: nil, true when
// ref is cached as undefined; nil, false when it is not cached.
func (c *virtualCache) Get(ref ast.Ref) (*ast.Term, bool) {
	if e := c.find(ref, ref.Hash()); e != nil {
		return e.value, e.undefined
	}
	return nil, false
}

// Put caches value for ref in the newest frame; a nil value caches ref as
// undefined.
func (c *virtualCache) Put(ref ast.Ref, value *ast.Term) {
	h := ref.Hash()
	e := c.find(ref, h)
	if e == nil {
		top := &c.frames[len(c.frames)-1]
		// The ref is copied: the caller may reuse its slice. The copy
		// is capped, so that the next one cannot overwrite it.
		start := len(c.refTerms)
		c.refTerms = append(c.refTerms, ref...)
		own := ast.Ref(c.refTerms[start:len(c.refTerms):len(c.refTerms)])
		*top = append(*top, cacheEntry{hash: h, ref: own})
		e = &(*top)[len(*top)-1]
	}
	e.value, e.undefined = value, value == nil
}

// Keys are the refs with a value in the newest frame.
func (c *virtualCache) Keys() []ast.Ref {
	var keys []ast.Ref
	for _, e := range c.frames[len(c.frames)-1] {
		if e.value != nil {
			keys = append(keys, e.ref)
		}
	}
	return keys
}

func (c *virtualCache) find(ref ast.Ref, hash int) *cacheEntry {
	top := c.frames[len(c.frames)-1]
	for i := range top {
		if top[i].hash == hash && top[i].ref.Equal(ref) {
			return &top[i]
		}
	}
	return nil
}

// baseCache is what an evaluation read of the store, by ref (OPA's
// topdown.BaseCache), kept with the virtual cache, for the same reasons:
// OPA's own is a trie with a hash map per level of each ref read
// (data.kubernetes.namespaces.<namespace>.metadata.labels.<label>), a
// kilobyte and a dozen allocations of a Secret create's evaluation, which
// reads three such refs.
type baseCache struct {
	entries  []baseEntry
	refTerms []*ast.Term
}

type baseEntry struct {
	ref   ast.Ref
	value ast.Value
}

var _ topdown.BaseCache = (*baseCache)(nil)

// Get is what is under ref in the value read at the shortest ref cached
// that ref starts with, as in OPA's: nil if none is cached, or it has
// nothing there.
func (c *baseCache) Get(ref ast.Ref) ast.Value {
	var e *baseEntry
	for i := range c.entries {
		if (e == nil || len(c.entries[i].ref) < len(e.ref)) && sameTerms(c.entries[i].ref, ref[:min(len(ref), len(c.entries[i].ref))]) {
			e = &c.entries[i]
		}
	}
	if e == nil {
		return nil
	}
	if len(e.ref) == len(ref) {
		return e.value
	}
	v, err := e.value.Find(ref[len(e.ref):])
	if err != nil {
		return nil
	}
	return v
}

// Put caches value, read at ref.
func (c *baseCache) Put(ref ast.Ref, value ast.Value) {
	for i := range c.entries {
		if sameTerms(c.entries[i].ref, ref) {
			c.entries[i].value = value
			return
		}
	}
	// Copied, and capped, as the virtual cache's refs are.
	start := len(c.refTerms)
	c.refTerms = append(c.refTerms, ref...)
	own := ast.Ref(c.refTerms[start:len(c.refTerms):len(c.refTerms)])
	c.entries = append(c.entries, baseEntry{ref: own, value: value})
}

// sameTerms reports whether a and b are the same keys of OPA's trie, a
// map by ast.Value: 1 and 1.0 are equal numbers, but the store's paths
// "1" and "1.0", and keys of their own. The refs OPA caches are of
// scalars (resolveReadFromStorage); others are compared by value.
func sameTerms(a, b ast.Ref) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		switch a[i].Value.(type) {
		case ast.String, ast.Number, ast.Boolean, ast.Var, ast.Null:
			if a[i].Value != b[i].Value {
				return false
			}
		default:
			if a[i].Value.Compare(b[i].Value) != 0 {
				return false
			}
		}
	}
	return true
}
