package filters

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A panic's value may be anything the handler held: it goes to the log,
// and the client gets a generic 500.
func TestRecoveryHidesThePanic(t *testing.T) {
	for _, tt := range []struct {
		name   string
		value  any
		logged string
	}{
		{"a string", "token s3cr3t-token in the handler", "s3cr3t-token"},
		{"an error", errors.New("etcd: dial 10.0.0.7:2379: password hunter2 rejected"), "hunter2"},
		// Since Go 1.21 recover() returns a *runtime.PanicNilError here,
		// not nil: the panic must not pass for a normal return.
		{"nil", nil, "panic called with nil argument"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			logger, log := newLogger()
			h := WithRecovery(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(tt.value) }), logger, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil))

			checkRefusal(t, rec, http.StatusInternalServerError, "Internal error occurred: an internal error occurred; see the server log")
			if strings.Contains(rec.Body.String(), tt.logged) {
				t.Errorf("the client got the panic value: %s", rec.Body)
			}
			for _, want := range []string{"panic serving request", tt.logged, "path=/api/v1/pods", "stack="} {
				if !strings.Contains(log.String(), want) {
					t.Errorf("log lacks %q: %s", want, log)
				}
			}
		})
	}
}

// http.ErrAbortHandler is how a handler asks net/http to drop the
// connection; the filter must let it through, and answer nothing.
func TestRecoveryRepanicsAbortHandler(t *testing.T) {
	logger, log := newLogger()
	h := WithRecovery(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }), logger, nil)
	rec := httptest.NewRecorder()
	got := func() (p any) {
		defer func() { p = recover() }()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil))
		return nil
	}()
	if got != http.ErrAbortHandler {
		t.Errorf("recovered %v, want http.ErrAbortHandler", got)
	}
	if rec.Body.Len() != 0 || len(rec.Header()) != 0 {
		t.Errorf("answered %v %q, want nothing", rec.Header(), rec.Body)
	}
	if log.Len() != 0 {
		t.Errorf("logged %q, want nothing", log)
	}
}
