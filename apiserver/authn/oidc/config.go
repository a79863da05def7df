package oidc

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	api "k8s.io/apiserver/pkg/apis/apiserver"
	apiv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	apiv1beta1 "k8s.io/apiserver/pkg/apis/apiserver/v1beta1"
	"k8s.io/apiserver/pkg/apis/apiserver/validation"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
)

// reservedPrefix starts the names of trustplane's own identities
// (components, nodes, ServiceAccounts, built-in groups). No OIDC identity
// may carry it.
const reservedPrefix = "system:"

// Config is a loaded, validated AuthenticationConfiguration.
//
// The zero value has no issuers and serves only the health paths
// anonymously.
type Config struct {
	// AnonymousEnabled reports the anonymous block of the file. When it is
	// false (no anonymous block, or enabled: false), anonymous requests are
	// served on the health paths (/livez, /readyz, /healthz) only, which
	// is trustplane's default. When it is true, anonymous requests are
	// served on AnonymousPaths, or on every path if AnonymousPaths is
	// empty (enabled: true without conditions, as in kube-apiserver).
	AnonymousEnabled bool
	// AnonymousPaths are the exact request paths of the anonymous block's
	// conditions, when it is enabled with conditions.
	AnonymousPaths []string

	// jwt holds one authenticator configuration per issuer, in file order.
	jwt []api.JWTAuthenticator
	// serviceAccountIssuers are refused as OIDC issuers, again by kube's
	// authenticator when it is built.
	serviceAccountIssuers []string
	// compiler compiled the CEL expressions at Load; kept because building
	// its environment is expensive, and it is safe for concurrent use.
	compiler authenticationcel.Compiler
}

// Load reads the AuthenticationConfiguration file at path and validates
// it. serviceAccountIssuers, the iss of the ServiceAccount tokens the
// server issues or accepts, are refused as OIDC issuers.
//
// The file is decoded strictly: unknown or duplicate fields are errors.
// Every problem found is reported, each naming its field, for example
//
//	jwt[0].issuer.url: Invalid value: "http://login.example.com": URL scheme must be https
func Load(path string, serviceAccountIssuers []string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read authentication config: %w", err)
	}
	c, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("decode authentication config %s: %w", path, err)
	}
	compiler := authenticationcel.NewDefaultCompiler()
	errs := validation.ValidateAuthenticationConfiguration(compiler, c, serviceAccountIssuers)
	errs = append(errs, validateTrustplane(c)...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid authentication config %s:\n%w", path, joinFieldErrors(errs))
	}

	cfg := &Config{
		jwt:                   c.JWT,
		serviceAccountIssuers: append([]string(nil), serviceAccountIssuers...),
		compiler:              compiler,
	}
	if a := c.Anonymous; a != nil && a.Enabled {
		cfg.AnonymousEnabled = true
		for _, cond := range a.Conditions {
			cfg.AnonymousPaths = append(cfg.AnonymousPaths, cond.Path)
		}
	}
	return cfg, nil
}

// decode reads an AuthenticationConfiguration in any version trustplane
// accepts and converts it to the internal type. The scheme is built per
// call: loading happens once at start, and a shared scheme would be
// package-level state.
func decode(data []byte) (*api.AuthenticationConfiguration, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{api.AddToScheme, apiv1beta1.AddToScheme, apiv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	if err := scheme.SetVersionPriority(apiv1.SchemeGroupVersion, apiv1beta1.ConfigSchemeGroupVersion); err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}
	codecs := serializer.NewCodecFactory(scheme, serializer.EnableStrict)
	obj, gvk, err := codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	c, ok := obj.(*api.AuthenticationConfiguration)
	if !ok {
		return nil, fmt.Errorf("kind: got %s, want AuthenticationConfiguration", gvk.Kind)
	}
	return c, nil
}

// validateTrustplane adds trustplane's own rules to kube's validation.
func validateTrustplane(c *api.AuthenticationConfiguration) field.ErrorList {
	var errs field.ErrorList
	for i, j := range c.JWT {
		p := field.NewPath("jwt").Index(i)
		if j.Issuer.EgressSelectorType != "" {
			errs = append(errs, field.NotSupported(p.Child("issuer", "egressSelectorType"), j.Issuer.EgressSelectorType, []string{""}))
		}
		// A prefix that starts with system: would mint system: names for
		// every user or group. A mapping without prefix, or by CEL
		// expression, can produce system: names only for some tokens:
		// those are refused one by one when authenticated.
		m := p.Child("claimMappings")
		if pre := j.ClaimMappings.Username.Prefix; pre != nil && strings.HasPrefix(*pre, reservedPrefix) {
			errs = append(errs, field.Invalid(m.Child("username", "prefix"), *pre, fmt.Sprintf("must not start with %q: OIDC identities can never be %s*", reservedPrefix, reservedPrefix)))
		}
		if pre := j.ClaimMappings.Groups.Prefix; pre != nil && strings.HasPrefix(*pre, reservedPrefix) {
			errs = append(errs, field.Invalid(m.Child("groups", "prefix"), *pre, fmt.Sprintf("must not start with %q: OIDC identities can never be in %s* groups", reservedPrefix, reservedPrefix)))
		}
	}
	if a := c.Anonymous; a != nil {
		seen := sets.New[string]()
		for i, cond := range a.Conditions {
			p := field.NewPath("anonymous", "conditions").Index(i).Child("path")
			switch {
			case cond.Path == "":
				errs = append(errs, field.Required(p, ""))
			case !strings.HasPrefix(cond.Path, "/"):
				errs = append(errs, field.Invalid(p, cond.Path, "must be an absolute request path, starting with /"))
			case seen.Has(cond.Path):
				errs = append(errs, field.Duplicate(p, cond.Path))
			}
			seen.Insert(cond.Path)
		}
	}
	return errs
}

// joinFieldErrors keeps one problem per line, each naming its field,
// where field.ErrorList.ToAggregate would put them all on one.
func joinFieldErrors(list field.ErrorList) error {
	errs := make([]error, 0, len(list))
	for _, e := range list {
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}
