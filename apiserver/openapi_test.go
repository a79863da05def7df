package apiserver

import (
	"encoding/json"
	"net/http"
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
