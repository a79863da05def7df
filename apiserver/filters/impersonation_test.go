package filters

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// impersonationKey names what an impersonate check asks for: "users bob",
// "serviceaccounts default/builder", "authentication.k8s.io/uids 42".
func impersonationKey(a authorizer.Attributes) string {
	resource, name := a.GetResource(), a.GetName()
	if g := a.GetAPIGroup(); g != "" {
		resource = g + "/" + resource
	}
	if sub := a.GetSubresource(); sub != "" {
		resource += "/" + sub
	}
	if ns := a.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return resource + " " + name
}

func TestImpersonation(t *testing.T) {
	carol := &user.DefaultInfo{Name: "carol", Groups: []string{"staff", user.AllAuthenticated}}
	const internal = "rbac: cache of 10.0.0.7 not synced"
	for _, tt := range []struct {
		name    string
		headers http.Header
		// allowed are the impersonation keys the authorizer allows carol;
		// authzErr, if set, is its error for every other.
		allowed  []string
		authzErr error
		// want is the user next sees; nil means the request is refused
		// with wantCode and wantMessage, and next never runs.
		want        *authenticationv1.UserInfo
		wantCode    int
		wantMessage string
	}{
		{
			name: "no Impersonate headers",
			want: userOf(carol),
		},
		{
			name:    "a user",
			headers: http.Header{"Impersonate-User": {"bob"}}, allowed: []string{"users bob"},
			want: &authenticationv1.UserInfo{Username: "bob", Groups: []string{user.AllAuthenticated}},
		},
		{
			name:    "a user, refused",
			headers: http.Header{"Impersonate-User": {"bob"}}, allowed: []string{"users alice"},
			wantCode: http.StatusForbidden, wantMessage: `users "bob" is forbidden: User "carol" cannot impersonate user "bob"`,
		},
		{
			name:    "a user with groups",
			headers: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"admins", "ops"}}, allowed: []string{"users bob", "groups admins", "groups ops"},
			want: &authenticationv1.UserInfo{Username: "bob", Groups: []string{"admins", "ops", user.AllAuthenticated}},
		},
		{
			name:    "a user allowed, one group refused",
			headers: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"admins", "system:masters"}}, allowed: []string{"users bob", "groups admins"},
			wantCode: http.StatusForbidden, wantMessage: `groups "system:masters" is forbidden: User "carol" cannot impersonate group "system:masters"`,
		},
		{
			name:    "a user allowed, the uid refused",
			headers: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Uid": {"42"}}, allowed: []string{"users bob"},
			wantCode: http.StatusForbidden, wantMessage: `uids.authentication.k8s.io "42" is forbidden: User "carol" cannot impersonate uid "42"`,
		},
		{
			name:    "a user with a uid and an extra",
			headers: http.Header{"Impersonate-User": {"bob"}, "Impersonate-Uid": {"42"}, "Impersonate-Extra-Scopes": {"view"}},
			allowed: []string{"users bob", "authentication.k8s.io/uids 42", "authentication.k8s.io/userextras/scopes view"},
			want:    &authenticationv1.UserInfo{Username: "bob", UID: "42", Groups: []string{user.AllAuthenticated}, Extra: map[string]authenticationv1.ExtraValue{"scopes": {"view"}}},
		},
		{
			name:    "a service account",
			headers: http.Header{"Impersonate-User": {"system:serviceaccount:default:builder"}}, allowed: []string{"serviceaccounts default/builder"},
			want: &authenticationv1.UserInfo{Username: "system:serviceaccount:default:builder", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", user.AllAuthenticated}},
		},
		{
			// The service account check is namespaced: users bob does
			// not cover it.
			name:    "a service account, refused",
			headers: http.Header{"Impersonate-User": {"system:serviceaccount:kube-system:admin"}}, allowed: []string{"users system:serviceaccount:kube-system:admin"},
			wantCode: http.StatusForbidden, wantMessage: `serviceaccounts "admin" is forbidden: User "carol" cannot impersonate serviceaccount "admin"`,
		},
		{
			name:    "anonymous",
			headers: http.Header{"Impersonate-User": {user.Anonymous}}, allowed: []string{"users system:anonymous"},
			want: &authenticationv1.UserInfo{Username: user.Anonymous, Groups: []string{user.AllUnauthenticated}},
		},
		{
			name:    "groups without a user",
			headers: http.Header{"Impersonate-Group": {"system:masters"}}, allowed: []string{"groups system:masters"},
			wantCode: http.StatusBadRequest, wantMessage: "requested impersonation of groups, a uid or extras without impersonating a user",
		},
		{
			name:    "a uid without a user",
			headers: http.Header{"Impersonate-Uid": {"42"}}, allowed: []string{"authentication.k8s.io/uids 42"},
			wantCode: http.StatusBadRequest, wantMessage: "requested impersonation of groups, a uid or extras without impersonating a user",
		},
		{
			name:    "an authorizer error",
			headers: http.Header{"Impersonate-User": {"bob"}}, authzErr: errors.New(internal),
			wantCode: http.StatusForbidden, wantMessage: `users "bob" is forbidden: User "carol" cannot impersonate user "bob"`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
				if a.GetVerb() == "impersonate" && a.IsResourceRequest() && a.GetUser().GetName() == "carol" {
					for _, key := range tt.allowed {
						if impersonationKey(a) == key {
							return authorizer.DecisionAllow, "", nil
						}
					}
				}
				return authorizer.DecisionNoOpinion, "", tt.authzErr
			})
			var got *authenticationv1.UserInfo
			var gotHeaders []string
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				u, _ := request.UserFrom(r.Context())
				got = userOf(u)
				gotHeaders = impersonateHeaders(r.Header)
			})
			logger, log := newLogger()
			r, record := withAuditRecord(newRequest(t, "GET", "/api/v1/namespaces", carol))
			for k, vs := range tt.headers {
				r.Header[k] = vs
			}
			rec := httptest.NewRecorder()
			WithImpersonation(next, authz, logger).ServeHTTP(rec, r)

			if left := impersonateHeaders(r.Header); len(left) > 0 || len(gotHeaders) > 0 {
				t.Errorf("Impersonate headers left on the request: %q, seen by next: %q", left, gotHeaders)
			}
			ev := filled(record)
			var wantImpersonated *authenticationv1.UserInfo
			if len(tt.headers) > 0 {
				wantImpersonated = tt.want
			}
			if !reflect.DeepEqual(ev.ImpersonatedUser, wantImpersonated) {
				t.Errorf("audited impersonating %+v, want %+v", ev.ImpersonatedUser, wantImpersonated)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("next saw %+v, want %+v", got, tt.want)
			}
			if tt.want != nil {
				return
			}
			checkRefusal(t, rec, tt.wantCode, tt.wantMessage)
			if tt.wantCode == http.StatusForbidden && ev.Annotations[DecisionAnnotation] != "forbid" {
				t.Errorf("audit annotations %v, want the decision forbid", ev.Annotations)
			}
			if tt.authzErr != nil && (strings.Contains(rec.Body.String(), internal) || !strings.Contains(log.String(), internal)) {
				t.Errorf("the authorizer's error reached the client (%s) or missed the log (%s)", rec.Body, log)
			}
		})
	}
}

// impersonateHeaders lists the Impersonate-* headers in h.
func impersonateHeaders(h http.Header) []string {
	var names []string
	for k, vs := range h {
		if strings.HasPrefix(k, "Impersonate-") {
			names = append(names, fmt.Sprintf("%s: %s", k, vs))
		}
	}
	return names
}
