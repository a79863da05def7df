package apiserver

import (
	"log/slog"
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// publicPaths are served to callers without credentials, as
// system:anonymous; they are still authorized and audited.
var publicPaths = map[string]bool{"/livez": true, "/readyz": true, "/healthz": true}

// withAuthentication establishes who is calling. A request whose
// credential is present but invalid, or that has none outside the public
// paths, goes to failed. The credential is removed from the request once
// it has been checked.
func withAuthentication(next http.Handler, auth authenticator.Request, failed http.Handler, logger *slog.Logger) http.Handler {
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
		case publicPaths[r.URL.Path]:
			u = &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
		default:
			failed.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
	})
}
