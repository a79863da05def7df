package main

import (
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// trustplane node refuses what it cannot run with before it reaches the
// API server: every mistake named.
func TestNodeFlags(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no name", []string{"--server", "https://127.0.0.1:6443", "--ca-cert-hash", "sha256:00"}, "--name is required"},
		{"no server", []string{"--name", "n"}, "--server is required"},
		{"a name that is not one", []string{"--name", "N_1", "--server", "https://127.0.0.1:6443"}, `node name "N_1"`},
		{"pin and file", []string{"--name", "n", "--server", "https://127.0.0.1:6443", "--ca-cert-hash", "sha256:00", "--ca-file", "x"}, "give one"},
		{"no CA", []string{"--name", "n", "--server", "https://127.0.0.1:6443", "--dir", "/nonexistent/x"}, "give --ca-cert-hash"},
		{"a bad pin", []string{"--name", "n", "--server", "https://127.0.0.1:6443", "--dir", "/nonexistent/x", "--ca-cert-hash", "md5:00"}, "want sha256:<64 hex digits>"},
		{"a short lifetime", []string{"--name", "n", "--server", "https://127.0.0.1:6443", "--certificate-lifetime", "1m"}, "at least 10m"},
		{"a bad quantity", []string{"--name", "n", "--server", "https://127.0.0.1:6443", "--capacity", "cpu=lots"}, "--capacity cpu=lots"},
		{"a bad taint", []string{"--name", "n", "--server", "https://127.0.0.1:6443", "--register-with-taints", "gpu=true:Sometimes"}, "--register-with-taints"},
		{"no count", []string{"--name", "n", "--server", "https://127.0.0.1:6443", "--count", "0"}, "--count 0"},
		{"a bad address", []string{"--name", "n", "--server", "https://127.0.0.1:6443", "--address", "here"}, "--address"},
		{"token and token file", []string{"--name", "n", "--server", "https://127.0.0.1:6443", "--token", "abcdef.0123456789abcdef", "--token-file", "/nonexistent/token"}, "give one"},
		{"a missing token file", []string{"--name", "n", "--server", "https://127.0.0.1:6443", "--token-file", "/nonexistent/token"}, "--token-file: open /nonexistent/token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newRootCommand()
			cmd.SetArgs(append([]string{"node"}, tt.args...))
			err := cmd.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestNthRange(t *testing.T) {
	_, r, _ := net.ParseCIDR("10.244.0.0/24")
	for n, want := range []string{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"} {
		got, err := nthRange(r, n)
		if err != nil || got.String() != want {
			t.Errorf("range %d: %v %v, want %s", n, got, err, want)
		}
	}
	_, top, _ := net.ParseCIDR("255.255.255.0/24")
	if _, err := nthRange(top, 1); err == nil {
		t.Error("a range past the last address was given")
	}
}

func TestParseTaints(t *testing.T) {
	got, err := parseTaints([]string{"gpu=true:NoSchedule", "dedicated:NoExecute"})
	if err != nil || len(got) != 2 || got[0] != (corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}) || got[1].Key != "dedicated" || got[1].Value != "" {
		t.Errorf("got %+v %v", got, err)
	}
	for _, bad := range []string{"gpu", ":NoSchedule", "gpu=true:"} {
		if _, err := parseTaints([]string{bad}); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}
