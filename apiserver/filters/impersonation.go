package filters

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/trustplane/trustplane/apiserver/responses"
	"github.com/trustplane/trustplane/audit"
)

// WithImpersonation acts as another user when the request carries
// Impersonate-* headers and the caller may impersonate each attribute: the
// user (or service account), every group, the uid and every extra. Any
// attribute the caller may not impersonate refuses the request; the headers
// are removed either way.
func WithImpersonation(next http.Handler, authz authorizer.Authorizer, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want, err := impersonationRequest(r.Header)
		for k := range r.Header {
			if strings.HasPrefix(k, "Impersonate-") {
				r.Header.Del(k)
			}
		}
		if err != nil {
			st := apierrors.NewBadRequest(err.Error()).Status()
			responses.WriteStatus(w, &st)
			return
		}
		if want == nil {
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		caller, _ := request.UserFrom(ctx)
		for _, check := range impersonationChecks(want) {
			attrs := authorizer.AttributesRecord{
				User: caller, Verb: "impersonate", ResourceRequest: true,
				APIGroup: check.group, Resource: check.resource, Subresource: check.subresource,
				Namespace: check.namespace, Name: check.name,
			}
			decision, reason, err := authz.Authorize(ctx, attrs)
			if decision == authorizer.DecisionAllow {
				continue
			}
			if err != nil {
				logger.ErrorContext(ctx, "impersonation authorization failed", "user", caller.GetName(), "err", err)
			}
			msg := fmt.Sprintf("User %q cannot impersonate resource %q in API group %q", caller.GetName(), check.resource, check.group)
			if check.name != "" {
				msg = fmt.Sprintf("User %q cannot impersonate %s %q", caller.GetName(), strings.TrimSuffix(check.resource, "s"), check.name)
			}
			if reason != "" {
				msg += ": " + reason
			}
			audit.Annotate(ctx, DecisionAnnotation, "forbid")
			audit.Annotate(ctx, ReasonAnnotation, "impersonation refused")
			st := apierrors.NewForbidden(schema.GroupResource{Group: check.group, Resource: check.resource}, check.name, errors.New(msg)).Status()
			responses.WriteStatus(w, &st)
			return
		}
		audit.LogImpersonated(ctx, want)
		next.ServeHTTP(w, r.WithContext(request.WithUser(ctx, want)))
	})
}

// impersonationRequest reads the Impersonate-* headers; nil means none.
func impersonationRequest(h http.Header) (*user.DefaultInfo, error) {
	name := h.Get(authenticationv1.ImpersonateUserHeader)
	groups := h.Values(authenticationv1.ImpersonateGroupHeader)
	uid := h.Get(authenticationv1.ImpersonateUIDHeader)
	extra := map[string][]string{}
	for k, vs := range h {
		if key, ok := strings.CutPrefix(k, textproto.CanonicalMIMEHeaderKey(authenticationv1.ImpersonateUserExtraHeaderPrefix)); ok {
			unescaped, err := url.PathUnescape(key)
			if err != nil {
				return nil, fmt.Errorf("malformed impersonation extra key %q", key)
			}
			extra[strings.ToLower(unescaped)] = append(extra[strings.ToLower(unescaped)], vs...)
		}
	}
	if name == "" {
		if len(groups) > 0 || uid != "" || len(extra) > 0 {
			return nil, errors.New("requested impersonation of groups, a uid or extras without impersonating a user")
		}
		return nil, nil
	}
	u := &user.DefaultInfo{Name: name, UID: uid, Groups: groups}
	if len(extra) > 0 {
		u.Extra = extra
	}
	if ns, _, err := serviceaccount.SplitUsername(name); err == nil {
		// A service account is in its own groups, as when it
		// authenticates itself.
		u.Groups = append(u.Groups, serviceaccount.AllServiceAccountsGroup, serviceaccount.MakeNamespaceGroupName(ns))
	}
	if name != user.Anonymous && !slices.Contains(u.Groups, user.AllAuthenticated) {
		u.Groups = append(u.Groups, user.AllAuthenticated)
	} else if name == user.Anonymous && !slices.Contains(u.Groups, user.AllUnauthenticated) {
		u.Groups = append(u.Groups, user.AllUnauthenticated)
	}
	return u, nil
}

// impersonationCheck is one attribute the caller must be allowed to
// impersonate.
type impersonationCheck struct {
	group, resource, subresource, namespace, name string
}

// impersonationChecks are kube-apiserver's: users (or serviceaccounts),
// groups, uids and userextras/<key>.
func impersonationChecks(want *user.DefaultInfo) []impersonationCheck {
	var checks []impersonationCheck
	if ns, sa, err := serviceaccount.SplitUsername(want.Name); err == nil {
		checks = append(checks, impersonationCheck{resource: "serviceaccounts", namespace: ns, name: sa})
	} else {
		checks = append(checks, impersonationCheck{resource: "users", name: want.Name})
	}
	for _, g := range want.Groups {
		if g == user.AllAuthenticated || g == user.AllUnauthenticated || g == serviceaccount.AllServiceAccountsGroup || strings.HasPrefix(g, serviceaccount.ServiceAccountGroupPrefix) {
			// Added by the server, as kube-apiserver does.
			continue
		}
		checks = append(checks, impersonationCheck{resource: "groups", name: g})
	}
	if want.UID != "" {
		checks = append(checks, impersonationCheck{group: authenticationv1.GroupName, resource: "uids", name: want.UID})
	}
	for k, vs := range want.Extra {
		for _, v := range vs {
			checks = append(checks, impersonationCheck{group: authenticationv1.GroupName, resource: "userextras", subresource: k, name: v})
		}
	}
	return checks
}
