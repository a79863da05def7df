package filters

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
)

const (
	listPods  = "/api/v1/namespaces/ns/pods"
	watchPods = "/api/v1/namespaces/ns/pods?watch=true"
)

// With one request held in next, a second is served only if one of the
// two is a watch, which takes no in-flight slot; once the held request
// ends, its slot is free again.
func TestLimitsInFlight(t *testing.T) {
	for _, tt := range []struct {
		name, held, second string
		wantCode           int
	}{
		{"a list while a list is served", listPods, listPods, http.StatusTooManyRequests},
		{"a list while a watch is served", watchPods, listPods, http.StatusOK},
		{"a watch while a list is served", listPods, watchPods, http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			h := WithLimits(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Hold") != "" {
					close(entered)
					<-release
				}
			}), NewLimits(1<<20, time.Minute, 1))
			// serve is safe off the test's goroutine: newRequest, which
			// may call t.Fatal, is not.
			serve := func(r *http.Request) *httptest.ResponseRecorder {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				return rec
			}
			get := func(target string) *http.Request {
				return newRequest(t, http.MethodGet, target, &user.DefaultInfo{Name: "x"})
			}
			held := get(tt.held)
			held.Header.Set("X-Hold", "1")
			heldDone := make(chan *httptest.ResponseRecorder)
			go func() { heldDone <- serve(held) }()
			select {
			case <-entered:
			case rec := <-heldDone:
				t.Fatalf("the first request was not held: %d %s", rec.Code, rec.Body)
			}

			second := serve(get(tt.second))
			if tt.wantCode == http.StatusTooManyRequests {
				checkRefusal(t, second, tt.wantCode, "too many requests in flight, please try again later")
				if got := second.Header().Get("Retry-After"); got != "1" {
					t.Errorf("Retry-After %q, want 1", got)
				}
			} else if second.Code != tt.wantCode {
				t.Errorf("second request: %d %s, want %d", second.Code, second.Body, tt.wantCode)
			}

			close(release)
			if rec := <-heldDone; rec.Code != http.StatusOK {
				t.Errorf("held request: %d %s, want 200", rec.Code, rec.Body)
			}
			if after := serve(get(listPods)); after.Code != http.StatusOK {
				t.Errorf("a list once the held request ended: %d %s, want 200", after.Code, after.Body)
			}
		})
	}
}

// What next sees of the request: a body that fails to read past the
// limit, and a deadline unless it is a watch.
func TestLimitsWhatNextSees(t *testing.T) {
	const maxBody, timeout = 8, time.Minute
	for _, tt := range []struct {
		name, method, target string
		body                 string
		wantTooLarge         bool
		wantDeadline         bool
	}{
		{"a body at the limit", "POST", listPods, "12345678", false, true},
		{"a body over the limit", "POST", listPods, "123456789", true, true},
		{"a watch", "GET", watchPods, "", false, false},
		{"a watch with a body over the limit", "GET", watchPods, "123456789", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var (
				read        []byte
				readErr     error
				deadline    time.Time
				hasDeadline bool
			)
			h := WithLimits(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				read, readErr = io.ReadAll(r.Body)
				deadline, hasDeadline = r.Context().Deadline()
			}), NewLimits(maxBody, timeout, 1))
			r := newRequest(t, tt.method, tt.target, &user.DefaultInfo{Name: "x"})
			r.Body = io.NopCloser(strings.NewReader(tt.body))
			before := time.Now()
			h.ServeHTTP(httptest.NewRecorder(), r)
			after := time.Now()

			var tooLarge *http.MaxBytesError
			switch {
			case !tt.wantTooLarge && (readErr != nil || string(read) != tt.body):
				t.Errorf("read %q, %v; want %q", read, readErr, tt.body)
			case tt.wantTooLarge && (!errors.As(readErr, &tooLarge) || tooLarge.Limit != maxBody):
				t.Errorf("read error %v, want an *http.MaxBytesError at %d bytes", readErr, maxBody)
			}
			switch {
			case hasDeadline != tt.wantDeadline:
				t.Errorf("next has a deadline: %v, want %v", hasDeadline, tt.wantDeadline)
			case hasDeadline && (deadline.Before(before.Add(timeout)) || deadline.After(after.Add(timeout))):
				t.Errorf("deadline %v, want %v after the request came, between %v and %v", deadline, timeout, before.Add(timeout), after.Add(timeout))
			}
		})
	}
}
