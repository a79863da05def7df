package filters

import (
	"log/slog"
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// AnonymousPolicy says which paths serve callers without credentials, as
// system:anonymous; those requests are still authorized and audited.
type AnonymousPolicy struct {
	// all serves every path anonymously (an AuthenticationConfiguration
	// with anonymous enabled and no conditions).
	all   bool
	paths map[string]bool
}

// NewAnonymousPolicy serves the given paths anonymously, or every path
// when all is set.
func NewAnonymousPolicy(all bool, paths []string) *AnonymousPolicy {
	p := &AnonymousPolicy{all: all, paths: map[string]bool{}}
	for _, path := range paths {
		p.paths[path] = true
	}
	return p
}

// HealthOnly is the default: the health probes alone.
func HealthOnly() *AnonymousPolicy {
	return &AnonymousPolicy{paths: map[string]bool{"/livez": true, "/readyz": true, "/healthz": true}}
}

func (p *AnonymousPolicy) allows(path string) bool { return p.all || p.paths[path] }

// WithAuthentication establishes who is calling. A request whose
// credential is present but invalid, or that has none outside the public
// paths, goes to failed. The credential is removed from the request once
// it has been checked.
func WithAuthentication(next http.Handler, auth authenticator.Request, anonymous *AnonymousPolicy, failed http.Handler, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := auth.AuthenticateRequest(r)
		r.Header.Del("Authorization")
		if err != nil {
			// The reason goes to the log only: it may describe the
			// credential.
			logger.InfoContext(r.Context(), "authentication failed", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			failed.ServeHTTP(w, r)
			return
		}
		var u user.Info
		switch {
		case ok:
			u = resp.User
		case anonymous.allows(r.URL.Path):
			u = &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
		default:
			failed.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
	})
}
