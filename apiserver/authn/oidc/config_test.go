package oidc

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const header = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n"

// jwtEntry is a valid jwt entry for issuer url, with the username mapping
// given.
func jwtEntry(url, username string) string {
	return `- issuer:
    url: ` + url + `
    audiences: [trustplane]
  claimMappings:
    username: ` + username + "\n"
}

func TestLoadRefuses(t *testing.T) {
	tests := []struct {
		name string
		file string
		// want are parts of the error: the field, and what is wrong.
		want []string
	}{{
		name: "issuer not https",
		file: header + "jwt:\n" + jwtEntry("http://login.example.com", `{claim: sub, prefix: "oidc:"}`),
		want: []string{`jwt[0].issuer.url: Invalid value: "http://login.example.com": URL scheme must be https`},
	}, {
		name: "issuer is the ServiceAccount issuer",
		file: header + "jwt:\n" + jwtEntry(saIssuer, `{claim: sub, prefix: "oidc:"}`),
		want: []string{`jwt[0].issuer.url: Invalid value: "` + saIssuer + `": URL must not overlap with disallowed issuers`},
	}, {
		name: "username claim without prefix",
		file: header + "jwt:\n" + jwtEntry("https://login.example.com", `{claim: sub}`),
		want: []string{"jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set"},
	}, {
		name: "username prefix system:",
		file: header + "jwt:\n" + jwtEntry("https://login.example.com", `{claim: sub, prefix: "system:"}`),
		want: []string{`jwt[0].claimMappings.username.prefix: Invalid value: "system:": must not start with "system:"`},
	}, {
		name: "username prefix system:node:",
		file: header + "jwt:\n" + jwtEntry("https://login.example.com", `{claim: sub, prefix: "system:node:"}`),
		want: []string{`jwt[0].claimMappings.username.prefix: Invalid value: "system:node:"`},
	}, {
		name: "groups prefix system:",
		file: header + "jwt:\n" + jwtEntry("https://login.example.com", `{claim: sub, prefix: "oidc:"}`) +
			`    groups: {claim: groups, prefix: "system:"}` + "\n",
		want: []string{`jwt[0].claimMappings.groups.prefix: Invalid value: "system:": must not start with "system:"`},
	}, {
		name: "no username mapping",
		file: header + "jwt:\n" + jwtEntry("https://login.example.com", `{}`),
		want: []string{"jwt[0].claimMappings.username: Required value: claim or expression is required"},
	}, {
		name: "bad CEL",
		file: header + "jwt:\n" + jwtEntry("https://login.example.com", `{expression: "claims.sub +"}`),
		want: []string{"jwt[0].claimMappings.username.expression: Invalid value"},
	}, {
		name: "email without email_verified",
		file: header + "jwt:\n" + jwtEntry("https://login.example.com", `{expression: "claims.email"}`),
		want: []string{"jwt[0].claimMappings.username.expression: Invalid value", "claims.email_verified must be used"},
	}, {
		name: "duplicate issuers",
		file: header + "jwt:\n" + jwtEntry("https://login.example.com", `{claim: sub, prefix: "a:"}`) +
			jwtEntry("https://login.example.com", `{claim: sub, prefix: "b:"}`),
		want: []string{`jwt[1].issuer.url: Duplicate value: "https://login.example.com"`},
	}, {
		name: "no audience",
		file: header + "jwt:\n- issuer: {url: https://login.example.com}\n  claimMappings:\n    username: {claim: sub, prefix: ''}\n",
		want: []string{"jwt[0].issuer.audiences: Required value"},
	}, {
		name: "bad certificate authority",
		file: header + "jwt:\n- issuer:\n    url: https://login.example.com\n    audiences: [trustplane]\n" +
			"    certificateAuthority: not a certificate\n  claimMappings:\n    username: {claim: sub, prefix: ''}\n",
		want: []string{"jwt[0].issuer.certificateAuthority: Invalid value"},
	}, {
		name: "egress selector",
		file: header + "jwt:\n- issuer:\n    url: https://login.example.com\n    audiences: [trustplane]\n" +
			"    egressSelectorType: cluster\n  claimMappings:\n    username: {claim: sub, prefix: ''}\n",
		want: []string{`jwt[0].issuer.egressSelectorType: Unsupported value: "cluster"`},
	}, {
		name: "every problem is reported",
		file: header + "jwt:\n" + jwtEntry("http://a.example.com", `{claim: sub}`) +
			jwtEntry("https://b.example.com", `{claim: sub, prefix: "system:"}`),
		want: []string{"jwt[0].issuer.url: Invalid value", "jwt[0].claimMappings.username.prefix: Required value",
			"jwt[1].claimMappings.username.prefix: Invalid value"},
	}, {
		name: "malformed YAML",
		file: header + "jwt:\n- issuer:\n    url: [https://login.example.com\n",
		want: []string{"yaml: line 5: did not find expected"},
	}, {
		name: "unknown field",
		file: header + "jwt:\n- issuer:\n    url: https://login.example.com\n    audience: trustplane\n",
		want: []string{`unknown field "jwt[0].issuer.audience"`},
	}, {
		name: "duplicate field",
		file: header + "jwt: []\njwt: []\n",
		want: []string{`strict decoding error`, `key "jwt" already set`},
	}, {
		name: "another kind",
		file: "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers: []\n",
		want: []string{"kind: got AuthorizationConfiguration, want AuthenticationConfiguration"},
	}, {
		name: "unknown version",
		file: "apiVersion: apiserver.config.k8s.io/v2\nkind: AuthenticationConfiguration\n",
		want: []string{"apiserver.config.k8s.io/v2"},
	}, {
		name: "empty file",
		file: "",
		want: []string{"Kind"},
	}, {
		name: "anonymous conditions while disabled",
		file: header + "anonymous:\n  enabled: false\n  conditions:\n  - path: /livez\n",
		want: []string{"anonymous.conditions: Invalid value", "enabled should be set to true when conditions are defined"},
	}, {
		name: "anonymous condition without path",
		file: header + "anonymous:\n  enabled: true\n  conditions:\n  - path: ''\n",
		want: []string{"anonymous.conditions[0].path: Required value"},
	}, {
		name: "anonymous condition relative path",
		file: header + "anonymous:\n  enabled: true\n  conditions:\n  - path: livez\n",
		want: []string{`anonymous.conditions[0].path: Invalid value: "livez": must be an absolute request path`},
	}, {
		name: "anonymous condition twice",
		file: header + "anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n  - path: /livez\n",
		want: []string{`anonymous.conditions[1].path: Duplicate value: "/livez"`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.file, nil)
			cfg, err := Load(path, []string{saIssuer})
			if err == nil {
				t.Fatalf("Load = %+v, want an error containing %q", cfg, tt.want)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("Load error %q does not name the file %s", err, path)
			}
			// The file name holds the test name: look past it.
			msg := strings.ReplaceAll(err.Error(), path, "FILE")
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Load error:\n%s\nwant it to contain %q", msg, w)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.yaml")
	if _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Load(%s) error = %v, want one naming the file", path, err)
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name      string
		file      string
		issuers   int
		anonymous bool
		paths     []string
	}{{
		name:    "v1, one issuer, no anonymous block: health paths only",
		file:    header + "jwt:\n" + jwtEntry("https://login.example.com", `{claim: sub, prefix: "oidc:"}`),
		issuers: 1,
	}, {
		name: "v1beta1, empty prefix, expression mappings",
		file: "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: AuthenticationConfiguration\njwt:\n" +
			jwtEntry("https://a.example.com", `{claim: email, prefix: ""}`) +
			jwtEntry("https://b.example.com", `{expression: "'b:' + claims.sub"}`) +
			"    uid: {claim: sub}\n    extra:\n    - key: example.com/team\n      valueExpression: claims.team\n" +
			"  userValidationRules:\n  - expression: \"!user.username.startsWith('b:bad')\"\n",
		issuers: 2,
	}, {
		name: "anonymous disabled: health paths only",
		file: header + "anonymous:\n  enabled: false\n",
	}, {
		name:      "anonymous everywhere",
		file:      header + "anonymous:\n  enabled: true\n",
		anonymous: true,
	}, {
		name:      "anonymous on some paths",
		file:      header + "anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n  - path: /version\n",
		anonymous: true,
		paths:     []string{"/livez", "/version"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, tt.file)
			if len(cfg.jwt) != tt.issuers {
				t.Errorf("issuers = %d, want %d", len(cfg.jwt), tt.issuers)
			}
			if cfg.AnonymousEnabled != tt.anonymous || !slices.Equal(cfg.AnonymousPaths, tt.paths) {
				t.Errorf("anonymous = %v %q, want %v %q", cfg.AnonymousEnabled, cfg.AnonymousPaths, tt.anonymous, tt.paths)
			}
		})
	}
}
