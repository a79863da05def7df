package filters

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// tokens knows one bearer token, alice's; any other is an error, and no
// Authorization header is no opinion.
var tokens = authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
	switch r.Header.Get("Authorization") {
	case "":
		return nil, false, nil
	case "Bearer alice-token":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "alice", Groups: []string{"dev", user.AllAuthenticated}}}, true, nil
	default:
		return nil, false, errors.New("invalid bearer token")
	}
})

func TestAuthentication(t *testing.T) {
	alice := &authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev", user.AllAuthenticated}}
	anonymous := &authenticationv1.UserInfo{Username: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	for _, tt := range []struct {
		name       string
		policy     *AnonymousPolicy
		path, auth string
		// want is the user next sees; nil means the request goes to
		// failed, and next never runs.
		want *authenticationv1.UserInfo
	}{
		{"a valid credential", HealthOnly(), "/api/v1/pods", "Bearer alice-token", alice},
		{"a valid credential on a health path", HealthOnly(), "/livez", "Bearer alice-token", alice},
		{"an invalid credential", HealthOnly(), "/api/v1/pods", "Bearer s3cr3t-forged", nil},
		{"an invalid credential is not made anonymous on a health path", HealthOnly(), "/livez", "Bearer s3cr3t-forged", nil},
		{"an invalid credential is not made anonymous where all paths are", NewAnonymousPolicy(true, nil), "/api/v1/pods", "Bearer s3cr3t-forged", nil},
		{"none on /livez", HealthOnly(), "/livez", "", anonymous},
		{"none on /readyz", HealthOnly(), "/readyz", "", anonymous},
		{"none on /healthz", HealthOnly(), "/healthz", "", anonymous},
		{"none elsewhere", HealthOnly(), "/api/v1/namespaces", "", nil},
		{"none on /version", HealthOnly(), "/version", "", nil},
		{"none on a path that climbs out of /livez", HealthOnly(), "/livez/../api/v1/secrets", "", nil},
		{"none where all paths are anonymous", NewAnonymousPolicy(true, nil), "/api/v1/namespaces", "", anonymous},
		{"none on the one anonymous path", NewAnonymousPolicy(false, []string{"/x"}), "/x", "", anonymous},
		{"none below the one anonymous path", NewAnonymousPolicy(false, []string{"/x"}), "/x/y", "", nil},
		{"none on /livez when only /x is anonymous", NewAnonymousPolicy(false, []string{"/x"}), "/livez", "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// seen is what a handler saw: the user in the context, if
			// any, and the Authorization header.
			type seen struct {
				user *authenticationv1.UserInfo
				auth string
			}
			see := func(into **seen) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					u, _ := request.UserFrom(r.Context())
					*into = &seen{userOf(u), r.Header.Get("Authorization")}
				})
			}
			var next, failed *seen
			logger, log := newLogger()
			h := WithAuthentication(see(&next), tokens, tt.policy, see(&failed), logger)
			r := httptest.NewRequest(http.MethodGet, tt.path, nil)
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			h.ServeHTTP(httptest.NewRecorder(), r)

			switch {
			case tt.want == nil && next != nil:
				t.Errorf("next ran as %+v, want the request to fail", next.user)
			case tt.want == nil && failed == nil:
				t.Error("failed did not run")
			case tt.want != nil && failed != nil:
				t.Error("failed ran, want next to")
			case tt.want != nil && next == nil:
				t.Error("next did not run")
			case tt.want != nil && !reflect.DeepEqual(next.user, tt.want):
				t.Errorf("next saw user %+v, want %+v", next.user, tt.want)
			}
			if next != nil && next.auth != "" {
				t.Errorf("next saw the Authorization header %q", next.auth)
			}
			if failed != nil && (failed.auth != "" || failed.user != nil) {
				t.Errorf("failed saw the Authorization header %q and user %+v, want neither", failed.auth, failed.user)
			}
			if strings.Contains(log.String(), "s3cr3t") {
				t.Errorf("the log holds the credential: %s", log)
			}
		})
	}
}

// The authenticator's reason for a refusal goes to the log, for the
// operator; failed, which answers the client, is not given it.
func TestAuthenticationLogsTheReason(t *testing.T) {
	logger, log := newLogger()
	h := WithAuthentication(http.NotFoundHandler(), tokens, HealthOnly(), http.NotFoundHandler(), logger)
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
	r.Header.Set("Authorization", "Bearer forged")
	h.ServeHTTP(httptest.NewRecorder(), r)
	for _, want := range []string{`msg="authentication failed"`, "path=/api/v1/pods", `err="invalid bearer token"`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q: %s", want, log)
		}
	}
}
