package apiserver

import (
	"net/http"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/trustplane/trustplane/apiserver/openapi"
)

// newOpenAPI builds the OpenAPI documents of the served resources.
func newOpenAPI(reg *registry) (*openapi.Builder, error) {
	var resources []openapi.Resource
	for _, res := range reg.all {
		r := openapi.Resource{
			GVR:        res.gvr,
			Kind:       res.kind,
			Namespaced: res.namespaced,
			Verbs:      res.verbs(),
			Object:     res.newObject(),
		}
		if slices.Contains(r.Verbs, "list") {
			// Only a listable resource has a list kind: a review's
			// definition names its own kind alone, as kube's does.
			r.ListKind, r.List = res.kind+"List", res.newList()
		}
		for _, sub := range res.subresources {
			var obj runtime.Object
			switch sub.name {
			case "scale":
				obj = &autoscalingv1.Scale{}
			case "binding":
				obj = &corev1.Binding{}
			case "token":
				obj = &authenticationv1.TokenRequest{}
			default:
				obj = res.newObject()
			}
			r.Subresources = append(r.Subresources, openapi.Subresource{Name: sub.name, Object: obj, Verbs: sub.verbs})
		}
		resources = append(resources, r)
	}
	return openapi.New(resources, "Kubernetes", Version.GitVersion)
}

// serveOpenAPI answers /openapi/v2 and /openapi/v3[/...], reporting
// whether the path was one of them.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) bool {
	path := r.URL.Path
	switch {
	case path == "/openapi/v2":
		// Only JSON is served. kubectl asks for protobuf only, and goes
		// on without v2 on a 404 (a 406 stops it).
		if strings.Contains(r.Header.Get("Accept"), "protobuf") && !strings.Contains(r.Header.Get("Accept"), "json") {
			s.respond.error(w, r, notFound())
			return true
		}
		writeDocument(w, s.openapi.V2())
	case path == "/openapi/v3" || path == "/openapi/v3/":
		writeDocument(w, s.openapi.V3Index())
	case strings.HasPrefix(path, "/openapi/v3/"):
		doc, hash, ok := s.openapi.V3(strings.TrimPrefix(path, "/openapi/v3/"))
		if !ok {
			s.respond.error(w, r, notFound())
			return true
		}
		w.Header().Set("Etag", `"`+hash+`"`)
		if r.URL.Query().Get("hash") == hash {
			// The hash names this exact document: it may be cached.
			w.Header().Set("Cache-Control", "public, immutable")
		}
		writeDocument(w, doc)
	default:
		return false
	}
	return true
}

func writeDocument(w http.ResponseWriter, doc []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(doc)
}
