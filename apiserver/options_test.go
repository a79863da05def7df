package apiserver

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trustplane/trustplane/datadir"
)

// A bad AuthenticationConfiguration stops the start with a message that
// names the field.
func TestOptionsRefuseBadAuthenticationConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := datadir.Init(datadir.Options{Dir: dir, APIServerURL: "https://127.0.0.1:6443"}); err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct{ config, want string }{
		"http issuer": {`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: http://idp.example.com
    audiences: [trustplane]
  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
`, "jwt[0].issuer.url"},
		"the service account issuer": {`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: ` + DefaultServiceAccountIssuer + `
    audiences: [trustplane]
  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
`, "jwt[0].issuer.url"},
		"a system: prefix": {`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: https://idp.example.com
    audiences: [trustplane]
  claimMappings:
    username: {claim: sub, prefix: "system:"}
`, "prefix"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "authn.yaml")
			if err := os.WriteFile(path, []byte(tt.config), 0o600); err != nil {
				t.Fatal(err)
			}
			o := NewOptions()
			o.DataDir = dir
			o.AuthenticationConfig = path
			_, _, err := o.Config(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one naming %s", err, tt.want)
			}
		})
	}
}

// Negative default toleration seconds are refused, each named.
func TestOptionsRefuseNegativeTolerationSeconds(t *testing.T) {
	o := NewOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	if o.DefaultNotReadyTolerationSeconds != 300 || o.DefaultUnreachableTolerationSeconds != 300 {
		t.Errorf("default toleration seconds %d and %d, want kube-apiserver's 300", o.DefaultNotReadyTolerationSeconds, o.DefaultUnreachableTolerationSeconds)
	}
	o.DefaultNotReadyTolerationSeconds, o.DefaultUnreachableTolerationSeconds = -1, -2
	err := o.Validate()
	for _, want := range []string{"--default-not-ready-toleration-seconds -1", "--default-unreachable-toleration-seconds -2"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to name %s", err, want)
		}
	}
}

// The ranges sent plain default to loopback; a range that is not a CIDR
// stops the start, named; an empty flag compresses for every client.
func TestOptionsDisableCompressionForClientIPs(t *testing.T) {
	o := NewOptions()
	got, err := parseClientCIDRs(o.DisableCompressionForClientIPs)
	if err != nil || len(got) != 2 || got[0].String() != "127.0.0.0/8" || got[1].String() != "::1/128" {
		t.Errorf("default ranges %v, %v; want 127.0.0.0/8 and ::1/128", got, err)
	}
	o.DisableCompressionForClientIPs = []string{"10.0.0.0/8", "127.0.0.1", "localhost"}
	err = o.Validate()
	for _, want := range []string{"--disable-compression-for-client-ips", `"127.0.0.1" is not a CIDR`, `"localhost" is not a CIDR`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to name %s", err, want)
		}
	}
	if got, err := parseClientCIDRs([]string{"::ffff:127.0.0.0/104"}); err != nil || len(got) != 1 || got[0].String() != "127.0.0.0/8" {
		t.Errorf("a range written IPv4-mapped: %v, %v; want 127.0.0.0/8, as clients' addresses are judged", got, err)
	}
	if got, err := parseClientCIDRs([]string{""}); err != nil || len(got) != 0 {
		t.Errorf("an empty flag: %v, %v; want no ranges", got, err)
	}
}
