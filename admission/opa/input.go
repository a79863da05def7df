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
		item("uid", stringTerm(uuid.NewString())),
		item("kind", kindTerm),
		item("resource", resTerm),
		item("requestKind", kindTerm),
		item("requestResource", resTerm),
		item("name", stringTerm(a.GetName())),
		item("namespace", stringTerm(a.GetNamespace())),
		item("operation", stringTerm(string(a.GetOperation()))),
		item("dryRun", ast.InternedTerm(a.IsDryRun())),
	)
	if sub := a.GetSubresource(); sub != "" {
		req.Insert(stringTerm("subResource"), stringTerm(sub))
	}
	if u := a.GetUserInfo(); u != nil {
		info := ast.NewObject(item("username", stringTerm(u.GetName())))
		if uid := u.GetUID(); uid != "" {
			info.Insert(stringTerm("uid"), stringTerm(uid))
		}
		if groups := u.GetGroups(); len(groups) > 0 {
			info.Insert(stringTerm("groups"), stringsTerm(groups))
		}
		if extra := u.GetExtra(); len(extra) > 0 {
			m := ast.NewObject()
			for k, v := range extra {
				m.Insert(stringTerm(k), stringsTerm(v))
			}
			info.Insert(stringTerm("extra"), ast.NewTerm(m))
		}
		req.Insert(stringTerm("userInfo"), ast.NewTerm(info))
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
			m.Insert(stringTerm("apiVersion"), stringTerm(kind.GroupVersion().String()))
			m.Insert(stringTerm("kind"), stringTerm(kind.Kind))
			if res.Group == "authentication.k8s.io" && res.Resource == "tokenreviews" {
				dropToken(m)
			}
		} else if gvks := o.obj.GetObjectKind().GroupVersionKind(); !gvks.Empty() {
			m.Insert(stringTerm("apiVersion"), stringTerm(gvks.GroupVersion().String()))
			m.Insert(stringTerm("kind"), stringTerm(gvks.Kind))
		}
		req.Insert(stringTerm(o.key), ast.NewTerm(m))
	}
	return ast.NewObject(
		item("apiVersion", stringTerm("admission.k8s.io/v1")),
		item("kind", stringTerm("AdmissionReview")),
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

func gvk(k schema.GroupVersionKind) *ast.Term {
	return ast.ObjectTerm(item("group", stringTerm(k.Group)), item("version", stringTerm(k.Version)), item("kind", stringTerm(k.Kind)))
}

func gvr(r schema.GroupVersionResource) *ast.Term {
	return ast.ObjectTerm(item("group", stringTerm(r.Group)), item("version", stringTerm(r.Version)), item("resource", stringTerm(r.Resource)))
}

func stringsTerm(s []string) *ast.Term {
	out := make([]*ast.Term, len(s))
	for i, v := range s {
		out[i] = stringTerm(v)
	}
	return ast.ArrayTerm(out...)
}
