package filters

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
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
