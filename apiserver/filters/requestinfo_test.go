package filters

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/endpoints/request"
)

// infoSummary is what the authorizer, the audit policy and the limits
// read of a request's info.
type infoSummary struct {
	resourceRequest                                           bool
	verb, group, resource, subresource, namespace, name, path string
}

func TestRequestInfoReachesNext(t *testing.T) {
	for _, tt := range []struct {
		method, target string
		want           infoSummary
	}{
		{"GET", "/api/v1/namespaces/ns/pods/p", infoSummary{true, "get", "", "pods", "", "ns", "p", "/api/v1/namespaces/ns/pods/p"}},
		{"GET", "/api/v1/namespaces/ns/pods", infoSummary{true, "list", "", "pods", "", "ns", "", "/api/v1/namespaces/ns/pods"}},
		{"GET", "/api/v1/namespaces/ns/pods?watch=true", infoSummary{true, "watch", "", "pods", "", "ns", "", "/api/v1/namespaces/ns/pods"}},
		{"GET", "/api/v1/watch/namespaces/ns/pods", infoSummary{true, "watch", "", "pods", "", "ns", "", "/api/v1/watch/namespaces/ns/pods"}},
		// A watch of one object names it in a field selector.
		{"GET", "/api/v1/nodes?watch=1&fieldSelector=metadata.name%3Dn1", infoSummary{true, "watch", "", "nodes", "", "", "n1", "/api/v1/nodes"}},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments/d/scale", infoSummary{true, "get", "apps", "deployments", "scale", "ns", "d", "/apis/apps/v1/namespaces/ns/deployments/d/scale"}},
		{"POST", "/api/v1/namespaces/ns/pods/p/eviction", infoSummary{true, "create", "", "pods", "eviction", "ns", "p", "/api/v1/namespaces/ns/pods/p/eviction"}},
		{"DELETE", "/api/v1/namespaces/ns/configmaps", infoSummary{true, "deletecollection", "", "configmaps", "", "ns", "", "/api/v1/namespaces/ns/configmaps"}},
		{"GET", "/api/v1/namespaces/ns", infoSummary{true, "get", "", "namespaces", "", "ns", "ns", "/api/v1/namespaces/ns"}},
		{"GET", "/livez", infoSummary{false, "get", "", "", "", "", "", "/livez"}},
		{"GET", "/apis/apps", infoSummary{false, "get", "", "", "", "", "", "/apis/apps"}},
	} {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			var got *infoSummary
			h := WithRequestInfo(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if info, ok := request.RequestInfoFrom(r.Context()); ok {
					got = &infoSummary{info.IsResourceRequest, info.Verb, info.APIGroup, info.Resource, info.Subresource, info.Namespace, info.Name, info.Path}
				} else {
					got = &infoSummary{}
				}
			}), NewRequestInfoResolver())
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(tt.method, tt.target, nil))
			if got == nil {
				t.Fatal("next did not run")
			}
			if *got != tt.want {
				t.Errorf("next saw %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestRequestInfoRefusesWhatItCannotParse(t *testing.T) {
	h := WithRequestInfo(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("next ran")
	}), NewRequestInfoResolver())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/watch", nil))
	checkRefusal(t, rec, http.StatusBadRequest, "unable to parse the request: unable to determine kind and namespace from url, /api/v1/watch")
}
