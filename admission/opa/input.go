package opa

import (
	"fmt"
	"hash/maphash"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/google/uuid"
	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Input is the admission.k8s.io/v1 AdmissionReview of a request, as a
// policy reads it: input.request.{uid, kind, resource, subResource,
// requestKind, requestResource, name, namespace, operation, userInfo,
// object, oldObject, dryRun, options}, the convention of kube-mgmt and
// OPA's Kubernetes admission tutorial. A TokenReview's token is left out:
// a policy has no use for a bearer token, and nothing it is given may
// carry one into a trace or a decision log.
func Input(a admission.Attributes) (ast.Value, error) {
	return input(a, allFields)
}

// Input is Input(a) with only what the set's rules may read of it for a
// request of a's kind and operation (see inputFields): Eval decides the
// same of it as of the whole, at less cost. The server evaluates this one.
func (s *Set) Input(a admission.Attributes) (ast.Value, error) {
	f := s.inputs[s.scope(a.GetKind().Kind, string(a.GetOperation()))]
	if f == nil {
		f = allFields
	}
	return input(a, f)
}

// input is the AdmissionReview of a with what f reads of it.
func input(a admission.Attributes, f *fields) (ast.Value, error) {
	kind, res := a.GetKind(), a.GetResource()
	rf := f.at("request")
	if rf == nil {
		return ast.NewObject(envelope(f)...), nil
	}
	var buf [16][2]*ast.Term
	items := buf[:0]
	want := func(key string) bool { return rf.at(key) != nil }
	if want("uid") {
		items = append(items, item("uid", stringTerm(uuid.NewString())))
	}
	// gvk and gvr share the terms of each kind and resource, so the
	// request's kind and requested kind are one term.
	if want("kind") {
		items = append(items, item("kind", gvk(kind)))
	}
	if want("resource") {
		items = append(items, item("resource", gvr(res)))
	}
	if want("requestKind") {
		items = append(items, item("requestKind", gvk(kind)))
	}
	if want("requestResource") {
		items = append(items, item("requestResource", gvr(res)))
	}
	if want("name") {
		items = append(items, item("name", stringTerm(a.GetName())))
	}
	if want("namespace") {
		items = append(items, item("namespace", stringTerm(a.GetNamespace())))
	}
	if want("operation") {
		items = append(items, item("operation", stringTerm(string(a.GetOperation()))))
	}
	if want("dryRun") {
		items = append(items, item("dryRun", ast.InternedTerm(a.IsDryRun())))
	}
	if sub := a.GetSubresource(); sub != "" && want("subResource") {
		items = append(items, item("subResource", stringTerm(sub)))
	}
	if u := a.GetUserInfo(); u != nil && want("userInfo") {
		items = append(items, item("userInfo", userInfo(u)))
	}
	for _, o := range []struct {
		key string
		obj runtime.Object
	}{{"object", a.GetObject()}, {"oldObject", a.GetOldObject()}, {"options", a.GetOperationOptions()}} {
		of := rf.at(o.key)
		if o.obj == nil || of == nil {
			continue
		}
		m, err := objectValue(o.obj, of)
		if err != nil {
			return nil, fmt.Errorf("admission input %s: %w", o.key, err)
		}
		gvks := kind
		if o.key == "options" {
			gvks = o.obj.GetObjectKind().GroupVersionKind()
		}
		if o.key != "options" || !gvks.Empty() {
			if of.at("apiVersion") != nil {
				m.Insert(stringTerm("apiVersion"), stringTerm(gvks.GroupVersion().String()))
			}
			if of.at("kind") != nil {
				m.Insert(stringTerm("kind"), stringTerm(gvks.Kind))
			}
		}
		if o.key != "options" && res.Group == "authentication.k8s.io" && res.Resource == "tokenreviews" {
			dropToken(m)
		}
		items = append(items, item(o.key, ast.NewTerm(m)))
	}
	return ast.NewObject(append(envelope(f), item("request", ast.ObjectTerm(items...)))...), nil
}

// envelope is what f reads of the AdmissionReview's apiVersion and kind.
func envelope(f *fields) [][2]*ast.Term {
	items := make([][2]*ast.Term, 0, 3)
	if f.at("apiVersion") != nil {
		items = append(items, item("apiVersion", stringTerm("admission.k8s.io/v1")))
	}
	if f.at("kind") != nil {
		items = append(items, item("kind", stringTerm("AdmissionReview")))
	}
	return items
}

// userInfo is u as the AdmissionReview's userInfo. Users' terms are made
// once and shared, as gvk's are: most requests come from a few users, and
// a user's term is a dozen allocations. A client certificate's user has
// extra too (its credential ID), as has a ServiceAccount token's.
func userInfo(u user.Info) *ast.Term {
	name, uid, groups, extra := u.GetName(), u.GetUID(), u.GetGroups(), u.GetExtra()
	key := userKey(name, uid, groups, extra)
	userTerms.mu.RLock()
	e, ok := userTerms.m[key]
	userTerms.mu.RUnlock()
	if ok && e.name == name && e.uid == uid && slices.Equal(e.groups, groups) && maps.EqualFunc(e.extra, extra, slices.Equal) {
		return e.term
	}
	t := shared(userInfoTerm(u))
	e = userTerm{name: name, uid: uid, groups: slices.Clone(groups), extra: make(map[string][]string, len(extra)), term: t}
	for k, v := range extra {
		e.extra[k] = slices.Clone(v)
	}
	userTerms.mu.Lock()
	if len(userTerms.m) >= maxUserTerms {
		// Full: one user's term goes, whichever the map's order gives,
		// so that new users are kept too.
		for k := range userTerms.m {
			delete(userTerms.m, k)
			break
		}
	}
	userTerms.m[key] = e
	userTerms.mu.Unlock()
	return t
}

// userKey is the key of a user's term in userTerms: a seeded hash of its
// name, uid, groups and extra, extra's entries in any order.
func userKey(name, uid string, groups []string, extra map[string][]string) uint64 {
	var h maphash.Hash
	h.SetSeed(userTerms.seed)
	h.WriteString(name)
	h.WriteByte(0)
	h.WriteString(uid)
	for _, g := range groups {
		h.WriteByte(0)
		h.WriteString(g)
	}
	key := h.Sum64()
	for k, vs := range extra {
		h.Reset()
		h.WriteString(k)
		for _, v := range vs {
			h.WriteByte(0)
			h.WriteString(v)
		}
		key += h.Sum64()
	}
	return key
}

// userTerms are the userInfo terms of users, by userKey, up to
// maxUserTerms of them. A term is used only for the user it was made of.
var userTerms = struct {
	mu   sync.RWMutex
	m    map[uint64]userTerm
	seed maphash.Seed
}{m: map[uint64]userTerm{}, seed: maphash.MakeSeed()}

const maxUserTerms = 1024

type userTerm struct {
	name, uid string
	groups    []string
	extra     map[string][]string
	term      *ast.Term
}

// userInfoTerm makes the term of userInfo(u).
func userInfoTerm(u user.Info) *ast.Term {
	items := make([][2]*ast.Term, 1, 4)
	items[0] = item("username", stringTerm(u.GetName()))
	if uid := u.GetUID(); uid != "" {
		items = append(items, item("uid", stringTerm(uid)))
	}
	if groups := u.GetGroups(); len(groups) > 0 {
		items = append(items, item("groups", stringsTerm(groups)))
	}
	if extra := u.GetExtra(); len(extra) > 0 {
		m := ast.NewObject()
		for k, v := range extra {
			m.Insert(stringTerm(k), stringsTerm(v))
		}
		items = append(items, item("extra", ast.NewTerm(m)))
	}
	return ast.ObjectTerm(items...)
}

// objectValue is obj as the API serves it in JSON, as an AST object, with
// what f reads of it (see valueTerm).
func objectValue(obj runtime.Object, f *fields) (ast.Object, error) {
	t, err := valueTerm(reflect.ValueOf(obj), f)
	if err != nil {
		return nil, err
	}
	m, ok := t.Value.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a JSON object", obj)
	}
	return m, nil
}

// dropToken removes spec.token from m, a TokenReview just decoded.
func dropToken(m ast.Object) {
	token := stringTerm("token")
	t := m.Get(stringTerm("spec"))
	if t == nil {
		return
	}
	spec, ok := t.Value.(ast.Object)
	if !ok || spec.Get(token) == nil {
		return
	}
	kept := ast.NewObject()
	spec.Foreach(func(k, v *ast.Term) {
		if !k.Equal(token) {
			kept.Insert(k, v)
		}
	})
	m.Insert(stringTerm("spec"), ast.NewTerm(kept))
}

func item(key string, value *ast.Term) [2]*ast.Term {
	return [2]*ast.Term{stringTerm(key), value}
}

// gvk is k as a term. The terms of the kinds requests name are made once
// and shared, as stringTerm's are.
func gvk(k schema.GroupVersionKind) *ast.Term { return gvkTerms.get(k, gvkTerm) }

func gvkTerm(k schema.GroupVersionKind) *ast.Term {
	return ast.ObjectTerm(item("group", stringTerm(k.Group)), item("version", stringTerm(k.Version)), item("kind", stringTerm(k.Kind)))
}

// gvr is r as a term, made once as gvk's are.
func gvr(r schema.GroupVersionResource) *ast.Term { return gvrTerms.get(r, gvrTerm) }

func gvrTerm(r schema.GroupVersionResource) *ast.Term {
	return ast.ObjectTerm(item("group", stringTerm(r.Group)), item("version", stringTerm(r.Version)), item("resource", stringTerm(r.Resource)))
}

// gvkTerms and gvrTerms are the terms of the kinds and resources of
// requests, up to maxGVTerms of each: past that, a term is made for each
// request, so that requests naming ever new kinds cannot grow them
// without end.
var (
	gvkTerms = termCache[schema.GroupVersionKind]{terms: map[schema.GroupVersionKind]*ast.Term{}}
	gvrTerms = termCache[schema.GroupVersionResource]{terms: map[schema.GroupVersionResource]*ast.Term{}}
)

const maxGVTerms = 1024

type termCache[K comparable] struct {
	mu    sync.RWMutex
	terms map[K]*ast.Term
}

func (c *termCache[K]) get(key K, build func(K) *ast.Term) *ast.Term {
	c.mu.RLock()
	t, ok := c.terms[key]
	c.mu.RUnlock()
	if ok {
		return t
	}
	t = shared(build(key))
	c.mu.Lock()
	if len(c.terms) < maxGVTerms {
		c.terms[key] = t
	}
	c.mu.Unlock()
	return t
}

// shared is t, an object, made ready to be read by many evaluations at
// once: OPA sorts an object's keys in place when it first iterates them
// (under a sync.Once), and copies them without it (a with on the input
// copies the input), so a term's keys are sorted before it is shared.
func shared(t *ast.Term) *ast.Term {
	if obj, ok := t.Value.(ast.Object); ok {
		obj.Keys()
	}
	return t
}

func stringsTerm(s []string) *ast.Term {
	out := make([]*ast.Term, len(s))
	for i, v := range s {
		out[i] = stringTerm(v)
	}
	return ast.ArrayTerm(out...)
}
