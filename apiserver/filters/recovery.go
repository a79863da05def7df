package filters

import (
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/trustplane/trustplane/apiserver/responses"
)

// WithRecovery turns a panic in a handler into a 500 Status and a log
// entry, so one bad request cannot take the server down. First, it grows
// the request's stack to what its handling needs (see growStack); grow,
// when not nil, grows it further for a request that needs more, here
// where growing copies few frames.
func WithRecovery(next http.Handler, logger *slog.Logger, grow func(*http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		growStack()
		if grow != nil {
			grow(r)
		}
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			logger.ErrorContext(r.Context(), "panic serving request", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			st := apierrors.NewInternalError(errors.New("an internal error occurred; see the server log")).Status()
			responses.WriteStatus(w, &st)
		}()
		next.ServeHTTP(w, r)
	})
}
