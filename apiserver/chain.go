package apiserver

import (
	"net/http"

	"github.com/trustplane/trustplane/apiserver/filters"
)

// filter is one named stage of the request pipeline.
type filter struct {
	name string
	wrap func(http.Handler) http.Handler
}

// buildChain wraps handler in filters so that they run in the order given:
// filters[0] sees the request first. observe, when not nil, is called with
// each filter's name as the request enters it; tests use it to check the
// order.
func buildChain(handler http.Handler, filters []filter, observe func(name string)) http.Handler {
	h := handler
	for i := len(filters) - 1; i >= 0; i-- {
		f := filters[i]
		h = f.wrap(h)
		if observe != nil {
			inner := h
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				observe(f.name)
				inner.ServeHTTP(w, r)
			})
		}
	}
	return h
}

// pipeline is the request pipeline of DESIGN.md, in execution order. TLS
// comes before it, in the listener.
func (s *Server) pipeline() []filter {
	return []filter{
		{"recovery", func(h http.Handler) http.Handler { return filters.WithRecovery(h, s.logger, s.policies.growStack) }},
		{"requestinfo", func(h http.Handler) http.Handler { return filters.WithRequestInfo(h, s.requestInfo) }},
		{"authentication", func(h http.Handler) http.Handler {
			return filters.WithAuthentication(h, s.authn, s.anonymous, filters.WithFailedAuthenticationAudit(s.auditor), s.logger)
		}},
		{"audit", func(h http.Handler) http.Handler { return filters.WithAudit(h, s.auditor) }},
		{"impersonation", func(h http.Handler) http.Handler { return filters.WithImpersonation(h, s.authz, s.logger) }},
		{"authorization", func(h http.Handler) http.Handler { return filters.WithAuthorization(h, s.authz, s.logger) }},
		{"limits", func(h http.Handler) http.Handler { return filters.WithLimits(h, s.limits) }},
	}
}
