package apiserver

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryclient "k8s.io/client-go/discovery"
	openapiproto "k8s.io/kube-openapi/pkg/util/proto"
)

func TestOpenAPIEndpoints(t *testing.T) {
	ts := startServer(t)
	c := ts.httpClient(t, admin)
	get := func(path, accept string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, ts.url+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := get("/openapi/v3", "application/json, */*")
	var index struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	err := json.NewDecoder(resp.Body).Decode(&index)
	resp.Body.Close()
	if err != nil || index.Paths["apis/apps/v1"].URL == "" || index.Paths["api/v1"].URL == "" {
		t.Fatalf("v3 index: %v %+v", err, index)
	}
	resp = get(index.Paths["apis/apps/v1"].URL, "application/json")
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil || doc.Components.Schemas["io.k8s.api.apps.v1.Deployment"] == nil || resp.Header.Get("Etag") == "" {
		t.Errorf("apps/v1 document: %v, %d schemas, etag %q", err, len(doc.Components.Schemas), resp.Header.Get("Etag"))
	}
	req, _ := http.NewRequest(http.MethodGet, ts.url+index.Paths["apis/apps/v1"].URL, nil)
	req.Header.Set("If-None-Match", resp.Header.Get("Etag"))
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusNotModified {
		t.Errorf("apps/v1 document with If-None-Match of its Etag: %v %v, want 304", resp, err)
	} else {
		resp.Body.Close()
	}
	resp = get("/openapi/v2", "application/json")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("v2 as JSON: %d", resp.StatusCode)
	}
	resp = get("/openapi/v3/apis/nope/v1", "")
	if statusOf(t, resp); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown group version: %d, want 404", resp.StatusCode)
	}
	anonymous := ts.httpClient(t, nil)
	if resp, err := anonymous.Get(ts.url + "/openapi/v3"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous OpenAPI: %v %v, want 401", resp, err)
	}
}

// /openapi/v2 is negotiated as kube-openapi's handler does: JSON by
// default, protobuf (a gnostic Document) when asked for under either of
// its names, 406 for anything else; both forms carry the JSON's ETag, and
// a request naming it gets 304.
func TestOpenAPIV2Negotiation(t *testing.T) {
	ts := startServer(t)
	c := ts.httpClient(t, admin)
	get := func(accept, ifNoneMatch string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.url+"/openapi/v2", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	const protobuf = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	tests := []struct {
		accept          string
		wantContentType string
	}{
		{"", "application/json"},
		{"*/*", "application/json"},
		{"application/json", "application/json"},
		{"application/json, */*", "application/json"},
		{"application/com.github.proto-openapi.spec.v2@v1.0+protobuf", protobuf}, // kubectl 1.32, 1.33
		{protobuf, protobuf},
		{"application/json;q=0.5, application/com.github.proto-openapi.spec.v2@v1.0+protobuf", protobuf},
		{"text/html, application/*;q=0.9", "application/json"},
	}
	etag := ""
	for _, tt := range tests {
		resp, body := get(tt.accept, "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tt.wantContentType {
			t.Errorf("Accept %q: %d %q, want 200 %q", tt.accept, resp.StatusCode, resp.Header.Get("Content-Type"), tt.wantContentType)
			continue
		}
		if got := resp.Header.Get("Vary"); got != "Accept" {
			t.Errorf("Accept %q: Vary %q, want Accept", tt.accept, got)
		}
		if etag == "" {
			etag = resp.Header.Get("Etag")
			if want := fmt.Sprintf("%q", fmt.Sprintf("%X", sha512.Sum512(body))); etag != want {
				t.Errorf("Etag %s, want the quoted SHA-512 of the JSON document, %s", etag, want)
			}
		} else if got := resp.Header.Get("Etag"); got != etag {
			t.Errorf("Accept %q: Etag %s, want %s, the same for every form", tt.accept, got, etag)
		}
		if tt.wantContentType == protobuf {
			doc := &openapi_v2.Document{}
			if err := proto.Unmarshal(body, doc); err != nil || doc.GetSwagger() != "2.0" || len(doc.GetDefinitions().GetAdditionalProperties()) == 0 {
				t.Errorf("Accept %q: the body is not a gnostic Document: %v (swagger %q)", tt.accept, err, doc.GetSwagger())
			}
		} else if !json.Valid(body) {
			t.Errorf("Accept %q: the body is not JSON", tt.accept)
		}
	}

	// A client that has the document revalidates it for nothing.
	for _, accept := range []string{"application/json", protobuf} {
		if resp, body := get(accept, etag); resp.StatusCode != http.StatusNotModified || len(body) != 0 {
			t.Errorf("If-None-Match %s, Accept %s: %d with %d bytes, want 304 and no body", etag, accept, resp.StatusCode, len(body))
		}
	}
	if resp, _ := get("application/json", `"stale"`); resp.StatusCode != http.StatusOK {
		t.Errorf("If-None-Match of another document: %d, want 200", resp.StatusCode)
	}

	req, _ := http.NewRequest(http.MethodGet, ts.url+"/openapi/v2", nil)
	req.Header.Set("Accept", "application/yaml")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, resp); resp.StatusCode != http.StatusNotAcceptable || st.Reason != metav1.StatusReasonNotAcceptable {
		t.Errorf("Accept application/yaml: %d %s, want 406 NotAcceptable", resp.StatusCode, st.Reason)
	}

	// What kubectl does with it: client-go asks for protobuf and decodes a
	// gnostic Document.
	doc, err := discoveryclient.NewDiscoveryClientForConfigOrDie(ts.restConfig(t, admin)).OpenAPISchema()
	if err != nil {
		t.Fatalf("OpenAPISchema: %v", err)
	}
	if _, err := openapiproto.NewOpenAPIData(doc); err != nil {
		t.Errorf("kube-openapi cannot read the document's models: %v", err)
	}
}

// Every kind kubectl may send, the create-only ones included, has a
// definition naming its group, version and kind, alone, in v2 and in the
// v3 document of the group version whose paths use it. kubectl's
// client-side validation finds a kind's schema by that extension.
func TestOpenAPIKindsKubectlSends(t *testing.T) {
	ts := startServer(t)
	c := ts.httpClient(t, admin)
	getJSON := func(path string, v any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.url+path, nil)
		req.Header.Set("Accept", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	type gvkExt struct{ Group, Version, Kind string }
	type schemas map[string]struct {
		GVKs []gvkExt `json:"x-kubernetes-group-version-kind"`
	}
	var v2 struct {
		Definitions schemas `json:"definitions"`
	}
	getJSON("/openapi/v2", &v2)
	var index struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	getJSON("/openapi/v3", &index)

	tests := []struct {
		model string
		gvk   gvkExt
		v3    string // the index key of the v3 document that has it
	}{
		{"io.k8s.api.authorization.v1.SelfSubjectAccessReview", gvkExt{"authorization.k8s.io", "v1", "SelfSubjectAccessReview"}, "apis/authorization.k8s.io/v1"},
		{"io.k8s.api.authorization.v1.SelfSubjectRulesReview", gvkExt{"authorization.k8s.io", "v1", "SelfSubjectRulesReview"}, "apis/authorization.k8s.io/v1"},
		{"io.k8s.api.authorization.v1.SubjectAccessReview", gvkExt{"authorization.k8s.io", "v1", "SubjectAccessReview"}, "apis/authorization.k8s.io/v1"},
		{"io.k8s.api.authorization.v1.LocalSubjectAccessReview", gvkExt{"authorization.k8s.io", "v1", "LocalSubjectAccessReview"}, "apis/authorization.k8s.io/v1"},
		{"io.k8s.api.authentication.v1.TokenReview", gvkExt{"authentication.k8s.io", "v1", "TokenReview"}, "apis/authentication.k8s.io/v1"},
		{"io.k8s.api.authentication.v1.SelfSubjectReview", gvkExt{"authentication.k8s.io", "v1", "SelfSubjectReview"}, "apis/authentication.k8s.io/v1"},
		{"io.k8s.api.authentication.v1.TokenRequest", gvkExt{"authentication.k8s.io", "v1", "TokenRequest"}, "api/v1"},
		{"io.k8s.api.core.v1.Binding", gvkExt{"", "v1", "Binding"}, "api/v1"},
		{"io.k8s.api.autoscaling.v1.Scale", gvkExt{"autoscaling", "v1", "Scale"}, "apis/apps/v1"},
		{"io.k8s.api.core.v1.ConfigMap", gvkExt{"", "v1", "ConfigMap"}, "api/v1"},
	}
	v3 := map[string]schemas{}
	for _, tt := range tests {
		want := []gvkExt{tt.gvk}
		if got := v2.Definitions[tt.model].GVKs; !reflect.DeepEqual(got, want) {
			t.Errorf("v2 %s: x-kubernetes-group-version-kind %v, want %v", tt.model, got, want)
		}
		doc, ok := v3[tt.v3]
		if !ok {
			var d struct {
				Components struct {
					Schemas schemas `json:"schemas"`
				} `json:"components"`
			}
			getJSON(index.Paths[tt.v3].URL, &d)
			doc = d.Components.Schemas
			v3[tt.v3] = doc
		}
		if got := doc[tt.model].GVKs; !reflect.DeepEqual(got, want) {
			t.Errorf("v3 %s %s: x-kubernetes-group-version-kind %v, want %v", tt.v3, tt.model, got, want)
		}
	}
}
