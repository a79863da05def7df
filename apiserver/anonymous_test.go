package apiserver

import (
	"testing"
)

// The AuthenticationConfiguration's anonymous block decides the paths
// served without credentials; RBAC still decides what anonymous may do.
func TestAnonymousPolicy(t *testing.T) {
	for _, tt := range []struct {
		name  string
		opt   serverOption
		codes map[string]int
	}{
		{"default: health probes only", func(*Config) {}, map[string]int{"/livez": 200, "/version": 401, "/api/v1/namespaces": 401}},
		{"enabled for /version", func(c *Config) { c.AnonymousPaths = []string{"/version"} }, map[string]int{"/livez": 401, "/version": 200, "/api/v1/namespaces": 401}},
		{"enabled everywhere", func(c *Config) { c.AnonymousAll = true }, map[string]int{"/livez": 200, "/version": 200, "/api/v1/namespaces": 403}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, tt.opt)
			c := ts.httpClient(t, nil)
			for path, want := range tt.codes {
				resp, err := c.Get(ts.url + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("anonymous GET %s: %d, want %d", path, resp.StatusCode, want)
				}
			}
		})
	}
}
