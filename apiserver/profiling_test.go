package apiserver

import (
	"bytes"
	"net/http"
	"testing"
)

// Profiles are served only with Profiling on, and then only to users
// allowed to get their paths; the command line never.
func TestProfiling(t *testing.T) {
	get := func(t *testing.T, ts *testServer, id *identity, path string) (int, []byte) {
		t.Helper()
		resp, body := fetch(t, ts.httpClient(t, id), http.MethodGet, ts.url+path)
		return resp.StatusCode, body
	}
	gzipMagic := []byte{0x1f, 0x8b}

	t.Run("off", func(t *testing.T) {
		ts := startServer(t)
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1"} {
			if code, body := get(t, ts, admin, path); code != http.StatusNotFound {
				t.Errorf("%s without profiling: %d, want 404: %.200s", path, code, body)
			}
		}
	})

	ts := startServer(t, func(c *Config) { c.Profiling = true })
	t.Run("cluster-admin", func(t *testing.T) {
		if code, body := get(t, ts, admin, "/debug/pprof/heap"); code != http.StatusOK || !bytes.HasPrefix(body, gzipMagic) {
			t.Errorf("heap: %d, %.40q", code, body)
		}
		if code, body := get(t, ts, admin, "/debug/pprof/profile?seconds=1"); code != http.StatusOK || !bytes.HasPrefix(body, gzipMagic) {
			t.Errorf("CPU profile: %d, %.40q", code, body)
		}
		if code, body := get(t, ts, admin, "/debug/pprof/"); code != http.StatusOK || !bytes.Contains(body, []byte("goroutine")) {
			t.Errorf("index: %d, %.200s", code, body)
		}
		if code, body := get(t, ts, admin, "/debug/pprof"); code != http.StatusOK || !bytes.Contains(body, []byte("goroutine")) {
			t.Errorf("the index, without its slash: %d, %.200s", code, body)
		}
		if code, body := get(t, ts, admin, "/debug/pprof/cmdline"); code != http.StatusNotFound {
			t.Errorf("cmdline: %d, want 404: %.200s", code, body)
		}
	})
	t.Run("others", func(t *testing.T) {
		someone := &identity{user: "someone", groups: []string{"team"}}
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine?debug=2", "/debug/pprof/profile?seconds=1"} {
			if code, body := get(t, ts, someone, path); code != http.StatusForbidden {
				t.Errorf("%s as an authenticated user without a grant: %d, want 403: %.200s", path, code, body)
			}
			if code, body := get(t, ts, nil, path); code != http.StatusForbidden && code != http.StatusUnauthorized {
				t.Errorf("%s without credentials: %d, want 401 or 403: %.200s", path, code, body)
			}
		}
	})
}
