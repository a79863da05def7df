package opa

import (
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// Input is the admission.k8s.io/v1 AdmissionReview of a request, as a
// policy reads it: input.request.{uid, kind, resource, subResource,
// requestKind, requestResource, name, namespace, operation, userInfo,
// object, oldObject, dryRun, options}, the convention of kube-mgmt and
// OPA's Kubernetes admission tutorial. A TokenReview's token is left out:
// a policy has no use for a bearer token, and nothing it is given may
// carry one into a trace or a decision log.
func Input(a admission.Attributes) (ast.Value, error) {
	kind, res := a.GetKind(), a.GetResource()
	// AST values are not changed once built: the request's kind and
	// resource can be the same terms.
	kindTerm, resTerm := gvk(kind), gvr(res)
	req := ast.NewObject(
		item("uid", ast.StringTerm(uuid.NewString())),
		item("kind", kindTerm),
		item("resource", resTerm),
		item("requestKind", kindTerm),
		item("requestResource", resTerm),
		item("name", ast.StringTerm(a.GetName())),
		item("namespace", ast.StringTerm(a.GetNamespace())),
		item("operation", ast.StringTerm(string(a.GetOperation()))),
		item("dryRun", ast.InternedTerm(a.IsDryRun())),
	)
	if sub := a.GetSubresource(); sub != "" {
		req.Insert(ast.InternedTerm("subResource"), ast.StringTerm(sub))
	}
	if u := a.GetUserInfo(); u != nil {
		info := ast.NewObject(item("username", ast.StringTerm(u.GetName())))
		if uid := u.GetUID(); uid != "" {
			info.Insert(ast.InternedTerm("uid"), ast.StringTerm(uid))
		}
		if groups := u.GetGroups(); len(groups) > 0 {
			info.Insert(ast.InternedTerm("groups"), stringsTerm(groups))
		}
		if extra := u.GetExtra(); len(extra) > 0 {
			m := ast.NewObject()
			for k, v := range extra {
				m.Insert(ast.StringTerm(k), stringsTerm(v))
			}
			info.Insert(ast.InternedTerm("extra"), ast.NewTerm(m))
		}
		req.Insert(ast.InternedTerm("userInfo"), ast.NewTerm(info))
	}
	for _, o := range []struct {
		key string
		obj runtime.Object
	}{{"object", a.GetObject()}, {"oldObject", a.GetOldObject()}, {"options", a.GetOperationOptions()}} {
		if o.obj == nil {
			continue
		}
		m, err := objectValue(o.obj)
		if err != nil {
			return nil, fmt.Errorf("admission input %s: %w", o.key, err)
		}
		if o.key != "options" {
			m.Insert(ast.InternedTerm("apiVersion"), ast.StringTerm(kind.GroupVersion().String()))
			m.Insert(ast.InternedTerm("kind"), ast.StringTerm(kind.Kind))
			if res.Group == "authentication.k8s.io" && res.Resource == "tokenreviews" {
				dropToken(m)
			}
		} else if gvks := o.obj.GetObjectKind().GroupVersionKind(); !gvks.Empty() {
			m.Insert(ast.InternedTerm("apiVersion"), ast.StringTerm(gvks.GroupVersion().String()))
			m.Insert(ast.InternedTerm("kind"), ast.StringTerm(gvks.Kind))
		}
		req.Insert(ast.InternedTerm(o.key), ast.NewTerm(m))
	}
	return ast.NewObject(
		item("apiVersion", ast.StringTerm("admission.k8s.io/v1")),
		item("kind", ast.StringTerm("AdmissionReview")),
		item("request", ast.NewTerm(req)),
	), nil
}

// objectValue is obj as the API serves it in JSON, as an AST object: its
// JSON encoding read straight into AST values, which costs a third of
// converting it to unstructured maps first.
func objectValue(obj runtime.Object) (ast.Object, error) {
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	v, err := jsonValue(doc)
	if err != nil {
		return nil, err
	}
	m, ok := v.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a JSON object", obj)
	}
	return m, nil
}

// dropToken removes spec.token from m, a TokenReview just decoded.
func dropToken(m ast.Object) {
	token := ast.InternedTerm("token")
	t := m.Get(ast.InternedTerm("spec"))
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
	m.Insert(ast.InternedTerm("spec"), ast.NewTerm(kept))
}

func item(key string, value *ast.Term) [2]*ast.Term {
	return [2]*ast.Term{ast.InternedTerm(key), value}
}

func gvk(k schema.GroupVersionKind) *ast.Term {
	return ast.ObjectTerm(item("group", ast.StringTerm(k.Group)), item("version", ast.StringTerm(k.Version)), item("kind", ast.StringTerm(k.Kind)))
}

func gvr(r schema.GroupVersionResource) *ast.Term {
	return ast.ObjectTerm(item("group", ast.StringTerm(r.Group)), item("version", ast.StringTerm(r.Version)), item("resource", ast.StringTerm(r.Resource)))
}

func stringsTerm(s []string) *ast.Term {
	out := make([]*ast.Term, len(s))
	for i, v := range s {
		out[i] = ast.StringTerm(v)
	}
	return ast.ArrayTerm(out...)
}
