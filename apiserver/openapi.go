package apiserver

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/munnerz/goautoneg"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"

	"github.com/trustplane/trustplane/apiserver/openapi"
	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/apiserver/responses"
)

// newOpenAPI builds the OpenAPI documents of the served resources.
func newOpenAPI(reg *registry.Registry) (*openapi.Builder, error) {
	var resources []openapi.Resource
	for _, res := range reg.All() {
		r := openapi.Resource{
			GVR:        res.GVR,
			Kind:       res.Kind,
			Namespaced: res.Namespaced,
			Verbs:      res.Verbs(),
			Object:     res.NewObject(),
		}
		if slices.Contains(r.Verbs, "list") {
			// Only a listable resource has a list kind: a review's
			// definition names its own kind alone, as kube's does.
			r.ListKind, r.List = res.Kind+"List", res.NewList()
		}
		for _, sub := range res.Subresources {
			var obj runtime.Object
			switch sub.Name {
			case "scale":
				obj = &autoscalingv1.Scale{}
			case "binding":
				obj = &corev1.Binding{}
			case "token":
				obj = &authenticationv1.TokenRequest{}
			default:
				obj = res.NewObject()
			}
			r.Subresources = append(r.Subresources, openapi.Subresource{Name: sub.Name, Object: obj, Verbs: sub.Verbs})
		}
		resources = append(resources, r)
	}
	return openapi.New(resources, "Kubernetes", Version.GitVersion)
}

// OpenAPI v2 in protobuf: a gnostic openapi_v2.Document. kubectl asks
// for it under the name with "@"; kube-openapi answers both names with the
// one without.
const (
	mediaOpenAPIV2Protobuf           = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	mediaOpenAPIV2ProtobufDeprecated = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
)

// openAPIV2Offers are the forms of /openapi/v2, in the order a wildcard
// picks them: what the client may ask for, what the answer is labelled.
var openAPIV2Offers = []struct{ accept, contentType string }{
	{"application/json", "application/json"},
	{mediaOpenAPIV2ProtobufDeprecated, mediaOpenAPIV2Protobuf},
	{mediaOpenAPIV2Protobuf, mediaOpenAPIV2Protobuf},
}

// serveOpenAPI answers /openapi/v2 and /openapi/v3[/...], reporting
// whether the path was one of them. Every document carries kube's ETag,
// the SHA-512 of its JSON, and a request whose If-None-Match names it is
// answered 304 Not Modified.
//
// The cache headers are kube-apiserver's. Its WithCacheControl filter
// marks every response "no-cache, private": a cache must ask again, and a
// shared one must not keep what an authenticated client was given. A v3
// document asked for by its hash, the URL the index gives, is the one
// exception (kube-openapi's handler3): it cannot change, so it may be
// kept for a year. A hash that is not the document's any more, kept by a
// client from an older index, is answered 301 to the current URL.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) bool {
	path := r.URL.Path
	if path != "/openapi/v2" && path != "/openapi/v3" && !strings.HasPrefix(path, "/openapi/v3/") {
		return false
	}
	w.Header().Set("Cache-Control", "no-cache, private")
	switch {
	case path == "/openapi/v2":
		s.serveOpenAPIV2(w, r)
	case path == "/openapi/v3" || path == "/openapi/v3/":
		s.respond.Document(w, r, "application/json", s.openapi.V3Index(), s.openapi.V3IndexHash(), s.openapiBuilt)
	default:
		s.serveOpenAPIV3(w, r, strings.TrimPrefix(path, "/openapi/v3/"))
	}
	return true
}

// serveOpenAPIV3 answers the v3 document of one group version, key being
// its index key ("api/v1", "apis/apps/v1").
func (s *Server) serveOpenAPIV3(w http.ResponseWriter, r *http.Request, key string) {
	doc, hash, ok := s.openapi.V3(key)
	if !ok {
		s.respond.Error(w, r, responses.NotFound())
		return
	}
	// kube-openapi serves protobuf too, so caches must key on Accept; we
	// serve JSON alone, but keep the header kube sends.
	w.Header().Add("Vary", "Accept")
	if want := r.URL.Query().Get("hash"); want != "" {
		if want != hash {
			// As handler3: the headers of the current document, no body.
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Etag", strconv.Quote(hash))
			current := url.URL{Path: "/openapi/v3/" + strings.TrimPrefix(key, "/"), RawQuery: url.Values{"hash": {hash}}.Encode()}
			http.Redirect(w, r, current.String(), http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Cache-Control", "public, immutable")
		// A year, kube's "never expires". kube writes the date in
		// time.RFC1123 and local time, which reads "UTC" where HTTP wants
		// "GMT" (http.ParseTime refuses it); this is the HTTP form.
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
	}
	s.respond.Document(w, r, "application/json", doc, hash, s.openapiBuilt)
}

// serveOpenAPIV2 answers /openapi/v2 in the first form the Accept header
// names, as kube-openapi's handler negotiates it: JSON for */* or no
// Accept header, protobuf when asked for; anything else is 406.
func (s *Server) serveOpenAPIV2(w http.ResponseWriter, r *http.Request) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		accept = "*/*"
	}
	// One URL, two bodies: caches must key on Accept.
	w.Header().Add("Vary", "Accept")
	for _, clause := range goautoneg.ParseAccept(accept) {
		if clause.Q == 0 {
			continue // "q=0": not acceptable
		}
		for _, offer := range openAPIV2Offers {
			typ, sub, _ := strings.Cut(offer.accept, "/")
			if (clause.Type != typ && clause.Type != "*") || (clause.SubType != sub && clause.SubType != "*") {
				continue
			}
			var body []byte
			if offer.contentType == mediaOpenAPIV2Protobuf {
				body = s.openapi.V2Protobuf()
			} else {
				body = s.openapi.V2()
			}
			// Both forms share the JSON's ETag, as in kube: Vary tells
			// them apart.
			s.respond.Document(w, r, offer.contentType, body, s.openapi.V2Hash(), s.openapiBuilt)
			return
		}
	}
	s.respond.Error(w, r, negotiation.NewNotAcceptableError([]string{"application/json", mediaOpenAPIV2Protobuf}))
}
