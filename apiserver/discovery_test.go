package apiserver

import (
	"net/http"
	"slices"
	"testing"

	discoveryclient "k8s.io/client-go/discovery"
)

func TestDiscovery(t *testing.T) {
	ts := startServer(t)
	dc, err := discoveryclient.NewDiscoveryClientForConfig(ts.restConfig(t, admin))
	if err != nil {
		t.Fatal(err)
	}
	// client-go asks for aggregated discovery first.
	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range groups {
		names = append(names, g.Name)
	}
	if !slices.Contains(names, "") || !slices.Contains(names, "rbac.authorization.k8s.io") {
		t.Errorf("groups %v, want core and rbac", names)
	}
	found := map[string]bool{}
	for _, list := range resources {
		for _, r := range list.APIResources {
			found[list.GroupVersion+"/"+r.Name] = slices.Contains(r.Verbs, "watch")
		}
	}
	for _, want := range []string{"v1/namespaces", "v1/secrets", "v1/configmaps", "rbac.authorization.k8s.io/v1/clusterroles", "rbac.authorization.k8s.io/v1/rolebindings"} {
		if watchable, ok := found[want]; !ok || !watchable {
			t.Errorf("%s: listed %t, watchable %t", want, ok, watchable)
		}
	}

	c := ts.httpClient(t, admin)
	for _, tt := range []struct{ path, accept, contentType string }{
		{"/api", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", aggregatedMediaType},
		{"/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", aggregatedMediaType},
		{"/api", "application/json", "application/json"},
		{"/api/v1", "application/json, */*", "application/json"},
		{"/apis/rbac.authorization.k8s.io", "", "application/json"},
		{"/apis/rbac.authorization.k8s.io/v1", "", "application/json"},
	} {
		req, _ := http.NewRequest(http.MethodGet, ts.url+tt.path, nil)
		if tt.accept != "" {
			req.Header.Set("Accept", tt.accept)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tt.contentType {
			t.Errorf("GET %s (Accept %q): %d %q, want 200 %q", tt.path, tt.accept, resp.StatusCode, resp.Header.Get("Content-Type"), tt.contentType)
		}
	}
}
