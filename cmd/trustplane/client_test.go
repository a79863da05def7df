package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoadingRules(t *testing.T) {
	list := strings.Join([]string{"a.conf", "b.conf"}, string(filepath.ListSeparator))
	for _, tc := range []struct {
		name                 string
		kubeconfig, dir, env string
		wantExplicit         string
		wantPrecedence       []string
	}{
		{name: "flag over env and dir", kubeconfig: "k.conf", dir: "d", env: list, wantExplicit: "k.conf"},
		{name: "env over dir", dir: "d", env: list, wantPrecedence: []string{"a.conf", "b.conf"}},
		{name: "admin.conf in dir", dir: "d", wantExplicit: filepath.Join("d", "admin.conf")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			got := loadingRules(tc.kubeconfig, tc.dir)
			if got.ExplicitPath != tc.wantExplicit || !slices.Equal(got.Precedence, tc.wantPrecedence) {
				t.Errorf("loadingRules(%q, %q) with KUBECONFIG=%q: explicit %q, precedence %q; want %q, %q",
					tc.kubeconfig, tc.dir, tc.env, got.ExplicitPath, got.Precedence, tc.wantExplicit, tc.wantPrecedence)
			}
		})
	}
}

func TestClientConfigMissingFile(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	dir := t.TempDir()
	_, err := clientConfig("", dir)
	if err == nil || !strings.Contains(err.Error(), "load kubeconfig") || !strings.Contains(err.Error(), filepath.Join(dir, "admin.conf")) {
		t.Errorf("clientConfig without admin.conf in %s: %v, want a load kubeconfig error naming it", dir, err)
	}
}
