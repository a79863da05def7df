package rbac

import "testing"

func TestResourceMatches(t *testing.T) {
	tests := []struct {
		rule     []string
		res, sub string
		want     bool
	}{
		{rule: nil, res: "pods", want: false},
		{rule: []string{"pods"}, res: "pods", want: true},
		{rule: []string{"pods"}, res: "pod", want: false},
		{rule: []string{"pods"}, res: "pods", sub: "status", want: false},
		{rule: []string{"*"}, res: "pods", want: true},
		{rule: []string{"*"}, res: "pods", sub: "exec", want: true},
		{rule: []string{"pods/status"}, res: "pods", sub: "status", want: true},
		{rule: []string{"pods/status"}, res: "pods", want: false},
		{rule: []string{"pods/status"}, res: "nodes", sub: "status", want: false},
		{rule: []string{"pods/status"}, res: "pods", sub: "statu", want: false},
		{rule: []string{"*/status"}, res: "nodes", sub: "status", want: true},
		{rule: []string{"*/status"}, res: "nodes", want: false},
		{rule: []string{"*/status"}, res: "nodes", sub: "proxy", want: false},
		{rule: []string{"*/status"}, res: "status", want: false},
		{rule: []string{"pods/*"}, res: "pods", sub: "exec", want: false},
		{rule: []string{"pods/*"}, res: "pods", want: false},
		{rule: []string{"pods/*"}, res: "nodes", sub: "proxy", want: false},
		{rule: []string{"pods/*"}, res: "podsx", sub: "exec", want: false},
		{rule: []string{"*/*"}, res: "pods", sub: "exec", want: false},
		{rule: []string{"pods/status/x"}, res: "pods", sub: "status", want: false},
		{rule: []string{"nodes", "pods/log"}, res: "pods", sub: "log", want: true},
		{rule: []string{""}, res: "pods", want: false},
	}
	for _, tt := range tests {
		if got := resourceMatches(tt.rule, tt.res, tt.sub); got != tt.want {
			t.Errorf("resourceMatches(%q, %q, %q): got %v, want %v", tt.rule, tt.res, tt.sub, got, tt.want)
		}
	}
}

func TestResourceNameMatches(t *testing.T) {
	tests := []struct {
		names []string
		name  string
		want  bool
	}{
		{names: nil, name: "", want: true},
		{names: nil, name: "web", want: true},
		{names: []string{"web"}, name: "web", want: true},
		{names: []string{"web"}, name: "", want: false},
		{names: []string{"web"}, name: "db", want: false},
		{names: []string{""}, name: "", want: false},
		{names: []string{"db", "web"}, name: "web", want: true},
	}
	for _, tt := range tests {
		if got := resourceNameMatches(tt.names, tt.name); got != tt.want {
			t.Errorf("resourceNameMatches(%q, %q): got %v, want %v", tt.names, tt.name, got, tt.want)
		}
	}
}

func TestNonResourceURLMatches(t *testing.T) {
	tests := []struct {
		urls []string
		path string
		want bool
	}{
		{urls: nil, path: "/api", want: false},
		{urls: []string{"*"}, path: "/anything/at/all", want: true},
		{urls: []string{"/api"}, path: "/api", want: true},
		{urls: []string{"/api"}, path: "/api/", want: false},
		{urls: []string{"/api"}, path: "/apis", want: false},
		{urls: []string{"/api/*"}, path: "/api/v1", want: true},
		{urls: []string{"/api/*"}, path: "/api", want: false},
		{urls: []string{"/api/*"}, path: "/apis/apps", want: false},
		{urls: []string{"/api*"}, path: "/apis/apps", want: true},
		{urls: []string{"/api/**"}, path: "/api/v1", want: true},
		{urls: []string{"/version/"}, path: "/version", want: false},
		{urls: []string{""}, path: "/", want: false},
	}
	for _, tt := range tests {
		if got := nonResourceURLMatches(tt.urls, tt.path); got != tt.want {
			t.Errorf("nonResourceURLMatches(%q, %q): got %v, want %v", tt.urls, tt.path, got, tt.want)
		}
	}
}

func TestIsServiceAccount(t *testing.T) {
	tests := []struct {
		username, ns, name string
		want               bool
	}{
		{username: "system:serviceaccount:a:builder", ns: "a", name: "builder", want: true},
		{username: "system:serviceaccount:a:builder", ns: "b", name: "builder", want: false},
		{username: "system:serviceaccount:a:builder", ns: "a", name: "build", want: false},
		{username: "system:serviceaccount:a:builder2", ns: "a", name: "builder", want: false},
		{username: "system:serviceaccount:ab:builder", ns: "a", name: "builder", want: false},
		{username: "system:serviceaccounts:a:builder", ns: "a", name: "builder", want: false},
		{username: "a:builder", ns: "a", name: "builder", want: false},
		{username: "system:serviceaccount::builder", ns: "", name: "builder", want: false},
		// "a:b:c" is either namespace a, name b:c or namespace a:b, name c:
		// neither may match.
		{username: "system:serviceaccount:a:b:c", ns: "a", name: "b:c", want: false},
		{username: "system:serviceaccount:a:b:c", ns: "a:b", name: "c", want: false},
	}
	for _, tt := range tests {
		if got := isServiceAccount(tt.username, tt.ns, tt.name); got != tt.want {
			t.Errorf("isServiceAccount(%q, %q, %q): got %v, want %v", tt.username, tt.ns, tt.name, got, tt.want)
		}
	}
}
