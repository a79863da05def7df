package registry

import (
	"context"
	"log/slog"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/trustplane/trustplane/audit"
)

// Review is a create-only resource that is computed, never stored:
// Validate checks the question (nil: nothing to check), Answer answers it
// in the object's status. namespace is the request's, for a namespaced
// review.
type Review struct {
	Validate func(ctx context.Context, namespace string, obj runtime.Object) field.ErrorList
	Answer   func(ctx context.Context, rv Reviewer, namespace string, obj runtime.Object) runtime.Object
}

// Reviewer answers what the reviews ask, and logs what it cannot answer
// for the server's operator, not the client.
type Reviewer interface {
	authorizer.Authorizer
	authenticator.Token
	// RulesFor is what RBAC grants u in namespace; incomplete when some
	// rules could not be read.
	RulesFor(ctx context.Context, u user.Info, namespace string) (rules []rbacv1.PolicyRule, incomplete bool, err error)
	Logger() *slog.Logger
}

func userFrom(ctx context.Context) user.Info {
	u, _ := request.UserFrom(ctx)
	return u
}

// reviewResources are the authorization and authentication reviews.
func reviewResources() []*Resource {
	authz := authorizationv1.SchemeGroupVersion
	authn := authenticationv1.SchemeGroupVersion
	return []*Resource{
		{
			GVR: authz.WithResource("selfsubjectaccessreviews"), Kind: "SelfSubjectAccessReview", Singular: "selfsubjectaccessreview",
			NewObject: func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
			NewList:   func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
			Review: &Review{
				Validate: func(ctx context.Context, _ string, obj runtime.Object) field.ErrorList {
					r := obj.(*authorizationv1.SelfSubjectAccessReview)
					_, errs := reviewAttributes(userFrom(ctx), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
					return errs
				},
				Answer: func(ctx context.Context, rv Reviewer, _ string, obj runtime.Object) runtime.Object {
					r := obj.(*authorizationv1.SelfSubjectAccessReview)
					attrs, _ := reviewAttributes(userFrom(ctx), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
					r.Status = accessReview(ctx, rv, attrs)
					return r
				},
			},
		},
		{
			GVR: authz.WithResource("selfsubjectrulesreviews"), Kind: "SelfSubjectRulesReview", Singular: "selfsubjectrulesreview",
			NewObject: func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
			NewList:   func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
			Review: &Review{
				Answer: func(ctx context.Context, rv Reviewer, _ string, obj runtime.Object) runtime.Object {
					r := obj.(*authorizationv1.SelfSubjectRulesReview)
					rules, incomplete, err := rv.RulesFor(ctx, userFrom(ctx), r.Spec.Namespace)
					r.Status = rulesReviewStatus(rules, incomplete)
					if err != nil {
						rv.Logger().ErrorContext(ctx, "rules review incomplete", "err", err)
						r.Status.EvaluationError = "some rules could not be read"
					}
					return r
				},
			},
		},
		{
			GVR: authz.WithResource("subjectaccessreviews"), Kind: "SubjectAccessReview", Singular: "subjectaccessreview",
			NewObject: func() runtime.Object { return &authorizationv1.SubjectAccessReview{} },
			NewList:   func() runtime.Object { return &authorizationv1.SubjectAccessReview{} },
			Review: &Review{
				Validate: func(_ context.Context, _ string, obj runtime.Object) field.ErrorList {
					r := obj.(*authorizationv1.SubjectAccessReview)
					_, errs := reviewAttributes(subjectOf(r.Spec), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
					return append(errs, requireSubject(r.Spec)...)
				},
				Answer: func(ctx context.Context, rv Reviewer, _ string, obj runtime.Object) runtime.Object {
					r := obj.(*authorizationv1.SubjectAccessReview)
					attrs, _ := reviewAttributes(subjectOf(r.Spec), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
					r.Status = accessReview(ctx, rv, attrs)
					return r
				},
			},
		},
		{
			GVR: authz.WithResource("localsubjectaccessreviews"), Kind: "LocalSubjectAccessReview", Singular: "localsubjectaccessreview",
			Namespaced: true,
			NewObject:  func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} },
			NewList:    func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} },
			Review: &Review{
				Validate: func(_ context.Context, namespace string, obj runtime.Object) field.ErrorList {
					r := obj.(*authorizationv1.LocalSubjectAccessReview)
					_, errs := reviewAttributes(subjectOf(r.Spec), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
					if r.Spec.ResourceAttributes == nil {
						errs = append(errs, field.Required(field.NewPath("spec", "resourceAttributes"), "a local review is about a resource"))
					} else if r.Spec.ResourceAttributes.Namespace != namespace {
						// A local review may only ask about its own namespace.
						errs = append(errs, field.Invalid(field.NewPath("spec", "resourceAttributes", "namespace"), r.Spec.ResourceAttributes.Namespace, "must match the namespace of the request: "+namespace))
					}
					return append(errs, requireSubject(r.Spec)...)
				},
				Answer: func(ctx context.Context, rv Reviewer, namespace string, obj runtime.Object) runtime.Object {
					r := obj.(*authorizationv1.LocalSubjectAccessReview)
					attrs, _ := reviewAttributes(subjectOf(r.Spec), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
					r.Namespace = namespace
					r.Status = accessReview(ctx, rv, attrs)
					return r
				},
			},
		},
		{
			GVR: authn.WithResource("tokenreviews"), Kind: "TokenReview", Singular: "tokenreview",
			NewObject: func() runtime.Object { return &authenticationv1.TokenReview{} },
			NewList:   func() runtime.Object { return &authenticationv1.TokenReview{} },
			Review: &Review{
				Validate: func(_ context.Context, _ string, obj runtime.Object) field.ErrorList {
					if obj.(*authenticationv1.TokenReview).Spec.Token == "" {
						return field.ErrorList{field.Required(field.NewPath("spec", "token"), "")}
					}
					return nil
				},
				Answer: tokenReview,
			},
		},
		{
			GVR: authn.WithResource("selfsubjectreviews"), Kind: "SelfSubjectReview", Singular: "selfsubjectreview",
			NewObject: func() runtime.Object { return &authenticationv1.SelfSubjectReview{} },
			NewList:   func() runtime.Object { return &authenticationv1.SelfSubjectReview{} },
			Review: &Review{
				Answer: func(ctx context.Context, _ Reviewer, _ string, obj runtime.Object) runtime.Object {
					r := obj.(*authenticationv1.SelfSubjectReview)
					r.Status.UserInfo = audit.UserInfo(userFrom(ctx))
					return r
				},
			},
		},
	}
}

// requireSubject refuses a SubjectAccessReview that names nobody.
func requireSubject(spec authorizationv1.SubjectAccessReviewSpec) field.ErrorList {
	if spec.User == "" && len(spec.Groups) == 0 {
		return field.ErrorList{field.Required(field.NewPath("spec", "user"), "at least one of user or group must be specified")}
	}
	return nil
}

// subjectOf is the user a SubjectAccessReview asks about.
func subjectOf(spec authorizationv1.SubjectAccessReviewSpec) user.Info {
	u := &user.DefaultInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

// reviewAttributes are the authorizer attributes of a review's question.
func reviewAttributes(u user.Info, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) (authorizer.AttributesRecord, field.ErrorList) {
	spec := field.NewPath("spec")
	switch {
	case res != nil && nonRes != nil:
		return authorizer.AttributesRecord{}, field.ErrorList{field.Invalid(spec.Child("nonResourceAttributes"), nonRes, "cannot be specified in combination with resourceAttributes")}
	case res != nil:
		return authorizer.AttributesRecord{
			User: u, Verb: res.Verb, ResourceRequest: true,
			APIGroup: res.Group, APIVersion: res.Version, Resource: res.Resource,
			Subresource: res.Subresource, Namespace: res.Namespace, Name: res.Name,
		}, nil
	case nonRes != nil:
		return authorizer.AttributesRecord{User: u, Verb: nonRes.Verb, Path: nonRes.Path}, nil
	}
	return authorizer.AttributesRecord{}, field.ErrorList{field.Required(spec.Child("resourceAttributes"), "exactly one of nonResourceAttributes or resourceAttributes must be specified")}
}

// accessReview asks the authorizer. An evaluation error is reported in the
// status, without its internal detail, and the answer is no.
func accessReview(ctx context.Context, rv Reviewer, attrs authorizer.Attributes) authorizationv1.SubjectAccessReviewStatus {
	decision, reason, err := rv.Authorize(ctx, attrs)
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: decision == authorizer.DecisionAllow, Denied: decision == authorizer.DecisionDeny, Reason: reason}
	if err != nil && !st.Allowed {
		rv.Logger().ErrorContext(ctx, "access review evaluation failed", "err", err)
		st.EvaluationError = "the authorization decision could not be made"
	}
	return st
}

// rulesReviewStatus splits RBAC rules into the review's resource and
// non-resource rules.
func rulesReviewStatus(rules []rbacv1.PolicyRule, incomplete bool) authorizationv1.SubjectRulesReviewStatus {
	st := authorizationv1.SubjectRulesReviewStatus{Incomplete: incomplete, ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
			continue
		}
		st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	return st
}

// tokenReview answers whether a token authenticates, and as whom.
func tokenReview(ctx context.Context, rv Reviewer, _ string, obj runtime.Object) runtime.Object {
	r := obj.(*authenticationv1.TokenReview)
	reviewCtx := ctx
	if len(r.Spec.Audiences) > 0 {
		reviewCtx = authenticator.WithAudiences(ctx, r.Spec.Audiences)
	}
	resp, ok, err := rv.AuthenticateToken(reviewCtx, r.Spec.Token)
	// The token is not echoed back.
	r.Spec.Token = ""
	if err != nil || !ok {
		if err != nil {
			rv.Logger().InfoContext(ctx, "token review: token refused", "err", err)
		}
		r.Status = authenticationv1.TokenReviewStatus{Authenticated: false, Error: "the token is not valid"}
		return r
	}
	audiences := resp.Audiences
	if len(r.Spec.Audiences) > 0 {
		audiences = intersect(r.Spec.Audiences, resp.Audiences)
		if len(audiences) == 0 {
			r.Status = authenticationv1.TokenReviewStatus{Authenticated: false, Error: "the token is not for the requested audiences"}
			return r
		}
	}
	r.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: audit.UserInfo(resp.User), Audiences: audiences}
	return r
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
				break
			}
		}
	}
	return out
}
