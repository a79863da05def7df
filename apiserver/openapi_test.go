package apiserver

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
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
	resp = get("/openapi/v2", "application/json")
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("v2 as JSON: %d", resp.StatusCode)
	}
	resp = get("/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
	if statusOf(t, resp); resp.StatusCode != http.StatusNotFound {
		t.Errorf("v2 as protobuf: %d, want 404 (kubectl goes on without it)", resp.StatusCode)
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
