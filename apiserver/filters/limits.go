package filters

import (
	"context"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/trustplane/trustplane/apiserver/responses"
)

// Limits bound what one request may take.
type Limits struct {
	maxBodyBytes int64
	timeout      time.Duration
	// inFlight holds a token per request being served.
	inFlight chan struct{}
}

// NewLimits bounds request bodies to maxBodyBytes, requests to timeout,
// and the requests served at once to maxInFlight.
func NewLimits(maxBodyBytes int64, timeout time.Duration, maxInFlight int) *Limits {
	return &Limits{maxBodyBytes: maxBodyBytes, timeout: timeout, inFlight: make(chan struct{}, maxInFlight)}
}

// WithLimits refuses requests beyond the in-flight bound with 429 and a
// Retry-After, caps the request body, and gives the request a deadline.
func WithLimits(next http.Handler, l *Limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, l.maxBodyBytes)
		if isLongRunning(r.Context()) {
			// A watch holds no in-flight slot and ends on its own
			// timeout.
			next.ServeHTTP(w, r)
			return
		}
		select {
		case l.inFlight <- struct{}{}:
			defer func() { <-l.inFlight }()
		default:
			st := apierrors.NewTooManyRequests("too many requests in flight, please try again later", 1).Status()
			responses.WriteStatus(w, &st)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), l.timeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
