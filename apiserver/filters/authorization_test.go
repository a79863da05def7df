package filters

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/trustplane/trustplane/apiserver/responses"
)

// attrsString is what the authorizer is asked, in one line.
func attrsString(a authorizer.Attributes) string {
	if !a.IsResourceRequest() {
		return fmt.Sprintf("%s %s %s", a.GetUser().GetName(), a.GetVerb(), a.GetPath())
	}
	return fmt.Sprintf("%s %s %s/%s/%s %s/%s", a.GetUser().GetName(), a.GetVerb(), a.GetAPIGroup(), a.GetResource(), a.GetSubresource(), a.GetNamespace(), a.GetName())
}

func TestAuthorization(t *testing.T) {
	const internal = "rbac: cache of 10.0.0.7 not synced"
	for _, tt := range []struct {
		name           string
		method, target string
		decision       authorizer.Decision
		reason         string
		err            error
		asked          string
		// wantCode 0 means next runs.
		wantCode    int
		wantMessage string
		wantAudit   map[string]string
	}{
		{
			name: "allow", method: "GET", target: "/api/v1/namespaces/ns/pods/p",
			decision: authorizer.DecisionAllow, reason: `RBAC: allowed by RoleBinding "r/ns"`,
			asked:     "x get /pods/ ns/p",
			wantAudit: map[string]string{DecisionAnnotation: "allow", ReasonAnnotation: `RBAC: allowed by RoleBinding "r/ns"`},
		},
		{
			name: "deny", method: "GET", target: "/api/v1/namespaces/ns/pods/p",
			decision: authorizer.DecisionDeny,
			asked:    "x get /pods/ ns/p", wantCode: http.StatusForbidden,
			wantMessage: `pods "p" is forbidden: User "x" cannot get resource "pods" in API group "" in the namespace "ns"`,
			wantAudit:   map[string]string{DecisionAnnotation: "forbid", ReasonAnnotation: noRuleAllows},
		},
		{
			name: "no opinion", method: "GET", target: "/api/v1/namespaces/ns/pods/p",
			decision: authorizer.DecisionNoOpinion,
			asked:    "x get /pods/ ns/p", wantCode: http.StatusForbidden,
			wantMessage: `pods "p" is forbidden: User "x" cannot get resource "pods" in API group "" in the namespace "ns"`,
			wantAudit:   map[string]string{DecisionAnnotation: "forbid", ReasonAnnotation: noRuleAllows},
		},
		{
			name: "deny with a reason", method: "GET", target: "/api/v1/namespaces/ns/pods",
			decision: authorizer.DecisionDeny, reason: "node n1 may not list pods",
			asked: "x list /pods/ ns/", wantCode: http.StatusForbidden,
			wantMessage: `pods is forbidden: User "x" cannot list resource "pods" in API group "" in the namespace "ns": node n1 may not list pods`,
			wantAudit:   map[string]string{DecisionAnnotation: "forbid", ReasonAnnotation: "node n1 may not list pods"},
		},
		{
			name: "no opinion on a cluster-scoped subresource", method: "GET", target: "/api/v1/nodes/n1/proxy",
			decision: authorizer.DecisionNoOpinion,
			asked:    "x get /nodes/proxy /n1", wantCode: http.StatusForbidden,
			wantMessage: `nodes "n1" is forbidden: User "x" cannot get resource "nodes/proxy" in API group "" at the cluster scope`,
			wantAudit:   map[string]string{DecisionAnnotation: "forbid", ReasonAnnotation: noRuleAllows},
		},
		{
			name: "no opinion in a named group", method: "DELETE", target: "/apis/apps/v1/namespaces/ns/deployments/d",
			decision: authorizer.DecisionNoOpinion,
			asked:    "x delete apps/deployments/ ns/d", wantCode: http.StatusForbidden,
			wantMessage: `deployments.apps "d" is forbidden: User "x" cannot delete resource "deployments" in API group "apps" in the namespace "ns"`,
			wantAudit:   map[string]string{DecisionAnnotation: "forbid", ReasonAnnotation: noRuleAllows},
		},
		{
			name: "no opinion on a path", method: "GET", target: "/version",
			decision: authorizer.DecisionNoOpinion,
			asked:    "x get /version", wantCode: http.StatusForbidden,
			wantMessage: `forbidden: User "x" cannot get path "/version"`,
			wantAudit:   map[string]string{DecisionAnnotation: "forbid", ReasonAnnotation: noRuleAllows},
		},
		{
			name: "an authorizer error", method: "GET", target: "/api/v1/namespaces/ns/pods/p",
			decision: authorizer.DecisionNoOpinion, err: errors.New(internal),
			asked: "x get /pods/ ns/p", wantCode: http.StatusInternalServerError,
			wantMessage: "Internal error occurred: the authorization decision could not be made",
			wantAudit:   map[string]string{DecisionAnnotation: "forbid", ReasonAnnotation: "authorizer error"},
		},
		{
			// The authorizer's error text is internal even when it denies.
			name: "a denial with an error", method: "GET", target: "/api/v1/namespaces/ns/pods/p",
			decision: authorizer.DecisionDeny, err: errors.New(internal),
			asked: "x get /pods/ ns/p", wantCode: http.StatusInternalServerError,
			wantMessage: "Internal error occurred: the authorization decision could not be made",
			wantAudit:   map[string]string{DecisionAnnotation: "forbid", ReasonAnnotation: "authorizer error"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
				asked = append(asked, attrsString(a))
				return tt.decision, tt.reason, tt.err
			})
			nextRan := false
			logger, log := newLogger()
			h := WithAuthorization(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { nextRan = true }), authz, logger)
			r, record := withAuditRecord(newRequest(t, tt.method, tt.target, &user.DefaultInfo{Name: "x", Groups: []string{user.AllAuthenticated}}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)

			if len(asked) != 1 || asked[0] != tt.asked {
				t.Errorf("the authorizer was asked %q, want [%q]", asked, tt.asked)
			}
			if got := filled(record).Annotations; !maps.Equal(got, tt.wantAudit) {
				t.Errorf("audit annotations %v, want %v", got, tt.wantAudit)
			}
			if tt.wantCode == 0 {
				if !nextRan {
					t.Errorf("next did not run; the client got %d %s", rec.Code, rec.Body)
				}
				return
			}
			if nextRan {
				t.Error("next ran")
			}
			checkRefusal(t, rec, tt.wantCode, tt.wantMessage)
			if tt.err == nil {
				return
			}
			if strings.Contains(rec.Body.String(), internal) {
				t.Errorf("the client got the authorizer's error: %s", rec.Body)
			}
			if !strings.Contains(log.String(), internal) {
				t.Errorf("the log lacks the authorizer's error: %s", log)
			}
		})
	}
}

// TestAuthorizationMetadataGrant: a request no authorizer allows on secrets
// is asked again of secrets/metadata, and allowed by it only as metadata;
// no other resource, subresource or verb is, and an error or an explicit
// denial asks nothing more.
func TestAuthorizationMetadataGrant(t *testing.T) {
	for _, tt := range []struct {
		name           string
		method, target string
		firstErr       error
		firstDenies    bool
		wantAsked      []string
		wantMetadata   bool // next runs, with responses.MetadataOnly
	}{
		{name: "list", method: "GET", target: "/api/v1/namespaces/ns/secrets",
			wantAsked: []string{"x list /secrets/ ns/", "x list /secrets/metadata ns/"}, wantMetadata: true},
		{name: "watch across namespaces", method: "GET", target: "/api/v1/secrets?watch=1",
			wantAsked: []string{"x watch /secrets/ /", "x watch /secrets/metadata /"}, wantMetadata: true},
		{name: "patch", method: "PATCH", target: "/api/v1/namespaces/ns/secrets/s",
			wantAsked: []string{"x patch /secrets/ ns/s", "x patch /secrets/metadata ns/s"}, wantMetadata: true},
		{name: "deletecollection", method: "DELETE", target: "/api/v1/namespaces/ns/secrets",
			wantAsked: []string{"x deletecollection /secrets/ ns/", "x deletecollection /secrets/metadata ns/"}, wantMetadata: true},
		{name: "create", method: "POST", target: "/api/v1/namespaces/ns/secrets",
			wantAsked: []string{"x create /secrets/ ns/"}},
		{name: "update", method: "PUT", target: "/api/v1/namespaces/ns/secrets/s",
			wantAsked: []string{"x update /secrets/ ns/s"}},
		{name: "another resource", method: "GET", target: "/api/v1/namespaces/ns/configmaps",
			wantAsked: []string{"x list /configmaps/ ns/"}},
		{name: "secrets of another group", method: "GET", target: "/apis/example.com/v1/namespaces/ns/secrets",
			wantAsked: []string{"x list example.com/secrets/ ns/"}},
		{name: "an authorizer error", method: "GET", target: "/api/v1/namespaces/ns/secrets", firstErr: errors.New("not synced"),
			wantAsked: []string{"x list /secrets/ ns/"}},
		{name: "an explicit denial", method: "GET", target: "/api/v1/namespaces/ns/secrets", firstDenies: true,
			wantAsked: []string{"x list /secrets/ ns/"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
				asked = append(asked, attrsString(a))
				if len(asked) == 1 && tt.firstDenies {
					return authorizer.DecisionDeny, "denied", nil
				}
				if len(asked) == 1 {
					return authorizer.DecisionNoOpinion, "", tt.firstErr
				}
				if a.GetSubresource() == responses.MetadataSubresource {
					return authorizer.DecisionAllow, `RBAC: allowed by ClusterRoleBinding "gc"`, nil
				}
				return authorizer.DecisionNoOpinion, "", nil
			})
			ran, metadataOnly := false, false
			logger, _ := newLogger()
			h := WithAuthorization(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				ran, metadataOnly = true, responses.MetadataOnly(r.Context())
			}), authz, logger)
			r, record := withAuditRecord(newRequest(t, tt.method, tt.target, &user.DefaultInfo{Name: "x"}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if !slices.Equal(asked, tt.wantAsked) {
				t.Errorf("asked %q, want %q", asked, tt.wantAsked)
			}
			if ran != tt.wantMetadata || metadataOnly != tt.wantMetadata {
				t.Fatalf("next ran %v, metadata only %v; want %v (answered %d %s)", ran, metadataOnly, tt.wantMetadata, rec.Code, rec.Body)
			}
			if tt.wantMetadata {
				want := `RBAC: allowed by ClusterRoleBinding "gc" (metadata only)`
				if got := filled(record).Annotations[ReasonAnnotation]; got != want {
					t.Errorf("audited reason %q, want %q", got, want)
				}
			}
			if got, want := filled(record).Annotations[MetadataOnlyAnnotation], map[bool]string{true: "true"}[tt.wantMetadata]; got != want {
				t.Errorf("audited %s %q, want %q", MetadataOnlyAnnotation, got, want)
			}
		})
	}
}
