package filters

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/trustplane/trustplane/apiserver/responses"
	"github.com/trustplane/trustplane/audit"
)

// Audit annotations of the authorization decision, as kube-apiserver
// writes them.
const (
	DecisionAnnotation = "authorization.k8s.io/decision"
	ReasonAnnotation   = "authorization.k8s.io/reason"
	// MetadataOnlyAnnotation marks, "true", a request allowed only by a
	// grant on metadata (secrets/metadata): what it was allowed is the
	// metadata subresource, which the event's objectRef does not say.
	MetadataOnlyAnnotation = "authorization.trustplane.io/metadata-only"
	// noRuleAllows is the audited reason of a refusal no authorizer
	// explained.
	noRuleAllows = "no rule allows it"
)

// WithAuthorization lets the request through only if the authorizer
// explicitly allows it. No opinion, a denial and an authorizer error all
// refuse it.
func WithAuthorization(next http.Handler, authz authorizer.Authorizer, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		attrs := attributesFrom(ctx, r)
		decision, reason, err := authz.Authorize(ctx, attrs)
		if decision == authorizer.DecisionNoOpinion && err == nil && metadataGrantable(attrs) {
			// Not allowed the Secret itself, nor denied it outright:
			// maybe its metadata.
			meta := metadataAttributes(attrs)
			if d, why, err := authz.Authorize(ctx, meta); d == authorizer.DecisionAllow && err == nil {
				audit.Annotate(ctx, DecisionAnnotation, "allow")
				audit.Annotate(ctx, ReasonAnnotation, why+" (metadata only)")
				audit.Annotate(ctx, MetadataOnlyAnnotation, "true")
				next.ServeHTTP(w, r.WithContext(responses.WithMetadataOnly(ctx)))
				return
			}
		}
		if decision == authorizer.DecisionAllow {
			audit.Annotate(ctx, DecisionAnnotation, "allow")
			audit.Annotate(ctx, ReasonAnnotation, reason)
			next.ServeHTTP(w, r)
			return
		}
		audit.Annotate(ctx, DecisionAnnotation, "forbid")
		if err != nil {
			logger.ErrorContext(ctx, "authorization failed", "user", attrs.GetUser().GetName(), "err", err)
			audit.Annotate(ctx, ReasonAnnotation, "authorizer error")
			st := apierrors.NewInternalError(errors.New("the authorization decision could not be made")).Status()
			responses.WriteStatus(w, &st)
			return
		}
		if reason == "" {
			// RBAC gives no reason for what no rule allows; the audit
			// event still says why, the client's message stays kube's.
			audit.Annotate(ctx, ReasonAnnotation, noRuleAllows)
		} else {
			audit.Annotate(ctx, ReasonAnnotation, reason)
		}
		msg := forbiddenMessage(attrs)
		if reason != "" {
			msg += ": " + reason
		}
		gr := schema.GroupResource{Group: attrs.GetAPIGroup(), Resource: attrs.GetResource()}
		st := apierrors.NewForbidden(gr, attrs.GetName(), errors.New(msg)).Status()
		responses.WriteStatus(w, &st)
	})
}

// metadataGrantable reports whether a grant on the metadata subresource
// (responses.MetadataSubresource) may allow the request: a read, a patch or
// a delete of Secrets themselves. Only Secrets have one: theirs is the
// data no controller that only tracks owners and finalizers should see.
func metadataGrantable(a authorizer.Attributes) bool {
	if !a.IsResourceRequest() || a.GetAPIGroup() != "" || a.GetResource() != "secrets" || a.GetSubresource() != "" {
		return false
	}
	switch a.GetVerb() {
	case "get", "list", "watch", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// metadataAttributes is a, asked of the metadata subresource.
func metadataAttributes(a authorizer.Attributes) authorizer.Attributes {
	return authorizer.AttributesRecord{
		User:            a.GetUser(),
		Verb:            a.GetVerb(),
		Namespace:       a.GetNamespace(),
		APIGroup:        a.GetAPIGroup(),
		APIVersion:      a.GetAPIVersion(),
		Resource:        a.GetResource(),
		Subresource:     responses.MetadataSubresource,
		Name:            a.GetName(),
		ResourceRequest: true,
		Path:            a.GetPath(),
	}
}

// forbiddenMessage words a refusal as kube-apiserver does.
func forbiddenMessage(a authorizer.Attributes) string {
	name := a.GetUser().GetName()
	if !a.IsResourceRequest() {
		return fmt.Sprintf("User %q cannot %s path %q", name, a.GetVerb(), a.GetPath())
	}
	resource := a.GetResource()
	if a.GetSubresource() != "" {
		resource += "/" + a.GetSubresource()
	}
	if ns := a.GetNamespace(); ns != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, a.GetVerb(), resource, a.GetAPIGroup(), ns)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, a.GetVerb(), resource, a.GetAPIGroup())
}
