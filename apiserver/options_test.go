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
