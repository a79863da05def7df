package apiserver

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

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

// A v3 document asked for by the hash the index gave is cached for good;
// by an old hash, the client is sent to the current one with a 301, as
// kube-openapi's handler3 does. Without a hash, nothing may be cached
// without asking again: kube-apiserver's WithCacheControl marks every
// response so.
func TestOpenAPIV3Hash(t *testing.T) {
	ts := startServer(t)
	c := ts.httpClient(t, admin)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	docs := map[string]string{} // index key -> hash
	var index struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	resp, err := c.Get(ts.url + "/openapi/v3")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&index)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for key, p := range index.Paths {
		_, hash, ok := strings.Cut(p.URL, "?hash=")
		if !ok || p.URL != "/openapi/v3/"+key+"?hash="+hash {
			t.Fatalf("index URL of %s: %q", key, p.URL)
		}
		docs[key] = hash
	}
	const stale = "0C1DB4A4A6B5E1B6E5A3C6E1B0DAE1B0"
	tests := []struct {
		name, method, path, ifNoneMatch string
		code                            int
		cacheControl, location          string
		expires                         bool
	}{
		{"no hash", "GET", "apis/apps/v1", "", 200, "no-cache, private", "", false},
		{"empty hash", "GET", "apis/apps/v1?hash=", "", 200, "no-cache, private", "", false},
		{"current hash", "GET", "apis/apps/v1?hash=" + docs["apis/apps/v1"], "", 200, "public, immutable", "", true},
		{"current hash, core group", "GET", "api/v1?hash=" + docs["api/v1"], "", 200, "public, immutable", "", true},
		{"current hash, revalidated", "GET", "apis/apps/v1?hash=" + docs["apis/apps/v1"], strconv.Quote(docs["apis/apps/v1"]), 304, "public, immutable", "", true},
		{"old hash", "GET", "apis/apps/v1?hash=" + stale, "", 301, "no-cache, private", "/openapi/v3/apis/apps/v1?hash=" + docs["apis/apps/v1"], false},
		{"old hash, core group", "GET", "api/v1?hash=" + stale, "", 301, "no-cache, private", "/openapi/v3/api/v1?hash=" + docs["api/v1"], false},
		{"old hash, HEAD", "HEAD", "apis/apps/v1?hash=" + stale, "", 301, "no-cache, private", "/openapi/v3/apis/apps/v1?hash=" + docs["apis/apps/v1"], false},
		{"old hash, If-None-Match of the current one", "GET", "apis/apps/v1?hash=" + stale, strconv.Quote(docs["apis/apps/v1"]), 301, "no-cache, private", "/openapi/v3/apis/apps/v1?hash=" + docs["apis/apps/v1"], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, ts.url+"/openapi/v3/"+tt.path, nil)
			if tt.ifNoneMatch != "" {
				req.Header.Set("If-None-Match", tt.ifNoneMatch)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			key, _, _ := strings.Cut(tt.path, "?")
			h := resp.Header
			if resp.StatusCode != tt.code || h.Get("Cache-Control") != tt.cacheControl || h.Get("Location") != tt.location {
				t.Errorf("got %d, Cache-Control %q, Location %q\nwant %d, Cache-Control %q, Location %q", resp.StatusCode, h.Get("Cache-Control"), h.Get("Location"), tt.code, tt.cacheControl, tt.location)
			}
			if got, want := h.Get("Etag"), strconv.Quote(docs[key]); got != want {
				t.Errorf("Etag %s, want %s", got, want)
			}
			if got := h.Get("Vary"); got != "Accept" {
				t.Errorf("Vary %q, want Accept", got)
			}
			if tt.code == http.StatusMovedPermanently && (h.Get("Content-Type") != "application/json" || len(body) != 0) {
				t.Errorf("redirect: Content-Type %q and %d bytes of body, want application/json and none, as kube", h.Get("Content-Type"), len(body))
			}
			expires, err := http.ParseTime(h.Get("Expires"))
			switch {
			case !tt.expires && h.Get("Expires") != "":
				t.Errorf("Expires %q, want none", h.Get("Expires"))
			case tt.expires && err != nil:
				t.Errorf("Expires %q: %v", h.Get("Expires"), err)
			case tt.expires && (time.Until(expires) < 364*24*time.Hour || time.Until(expires) > 366*24*time.Hour):
				t.Errorf("Expires %s, want a year from now", expires)
			}
		})
	}
	// Following the redirect, as client-go does, ends at the document.
	resp, err = ts.httpClient(t, admin).Get(ts.url + "/openapi/v3/apis/apps/v1?hash=" + stale)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.RawQuery != "hash="+docs["apis/apps/v1"] || resp.Header.Get("Cache-Control") != "public, immutable" {
		t.Errorf("after the redirect: %d at %s, Cache-Control %q", resp.StatusCode, resp.Request.URL, resp.Header.Get("Cache-Control"))
	}
	for _, path := range []string{"/openapi/v3", "/openapi/v2"} {
		resp, err := c.Get(ts.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Cache-Control"); got != "no-cache, private" {
			t.Errorf("%s: Cache-Control %q, want no-cache, private", path, got)
		}
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

	// Nothing offered is acceptable; q=0 says a type is not.
	for _, accept := range []string{"application/yaml", "application/json;q=0", "*/*;q=0"} {
		req, _ := http.NewRequest(http.MethodGet, ts.url+"/openapi/v2", nil)
		req.Header.Set("Accept", accept)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if st := statusOf(t, resp); resp.StatusCode != http.StatusNotAcceptable || st.Reason != metav1.StatusReasonNotAcceptable {
			t.Errorf("Accept %s: %d %s, want 406 NotAcceptable", accept, resp.StatusCode, st.Reason)
		}
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
