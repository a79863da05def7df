package opa

import (
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
	req := map[string]any{
		"uid":             uuid.NewString(),
		"kind":            gvk(kind),
		"resource":        gvr(res),
		"requestKind":     gvk(kind),
		"requestResource": gvr(res),
		"name":            a.GetName(),
		"namespace":       a.GetNamespace(),
		"operation":       string(a.GetOperation()),
		"dryRun":          a.IsDryRun(),
	}
	if sub := a.GetSubresource(); sub != "" {
		req["subResource"] = sub
	}
	if u := a.GetUserInfo(); u != nil {
		info := map[string]any{"username": u.GetName()}
		if uid := u.GetUID(); uid != "" {
			info["uid"] = uid
		}
		if groups := u.GetGroups(); len(groups) > 0 {
			info["groups"] = toAny(groups)
		}
		if extra := u.GetExtra(); len(extra) > 0 {
			m := map[string]any{}
			for k, v := range extra {
				m[k] = toAny(v)
			}
			info["extra"] = m
		}
		req["userInfo"] = info
	}
	for key, obj := range map[string]runtime.Object{"object": a.GetObject(), "oldObject": a.GetOldObject(), "options": a.GetOperationOptions()} {
		if obj == nil {
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("admission input %s: %w", key, err)
		}
		if key != "options" {
			m["apiVersion"], m["kind"] = kind.GroupVersion().String(), kind.Kind
			if res.Group == "authentication.k8s.io" && res.Resource == "tokenreviews" {
				if spec, ok := m["spec"].(map[string]any); ok {
					delete(spec, "token")
				}
			}
		} else if gvks := obj.GetObjectKind().GroupVersionKind(); !gvks.Empty() {
			m["apiVersion"], m["kind"] = gvks.GroupVersion().String(), gvks.Kind
		}
		req[key] = m
	}
	review := map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}
	return ast.InterfaceToValue(review)
}

func gvk(k schema.GroupVersionKind) map[string]any {
	return map[string]any{"group": k.Group, "version": k.Version, "kind": k.Kind}
}

func gvr(r schema.GroupVersionResource) map[string]any {
	return map[string]any{"group": r.Group, "version": r.Version, "resource": r.Resource}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
