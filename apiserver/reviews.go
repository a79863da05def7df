package apiserver

import (
	"context"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/trustplane/trustplane/audit"
)

// review is a create-only resource that is computed, never stored:
// validate checks the question (nil: nothing to check), answer answers it
// in the object's status.
type review struct {
	validate func(ctx context.Context, q *restRequest, obj runtime.Object) field.ErrorList
	answer   func(ctx context.Context, s *Server, q *restRequest, obj runtime.Object) runtime.Object
}

// reviewResources are the authorization and authentication reviews.
func reviewResources() []*resource {
	authz := authorizationv1.SchemeGroupVersion
	authn := authenticationv1.SchemeGroupVersion
	return []*resource{
		{
			gvr: authz.WithResource("selfsubjectaccessreviews"), kind: "SelfSubjectAccessReview", singular: "selfsubjectaccessreview",
			newObject: func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
			newList:   func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
			review: &review{
				validate: func(ctx context.Context, _ *restRequest, obj runtime.Object) field.ErrorList {
					r := obj.(*authorizationv1.SelfSubjectAccessReview)
					_, errs := reviewAttributes(userFrom(ctx), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
					return errs
				},
				answer: func(ctx context.Context, s *Server, _ *restRequest, obj runtime.Object) runtime.Object {
					r := obj.(*authorizationv1.SelfSubjectAccessReview)
					attrs, _ := reviewAttributes(userFrom(ctx), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
					r.Status = s.accessReview(ctx, attrs)
					return r
				},
			},
		},
		{
			gvr: authz.WithResource("selfsubjectrulesreviews"), kind: "SelfSubjectRulesReview", singular: "selfsubjectrulesreview",
			newObject: func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
			newList:   func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
			review: &review{
				answer: func(ctx context.Context, s *Server, _ *restRequest, obj runtime.Object) runtime.Object {
					r := obj.(*authorizationv1.SelfSubjectRulesReview)
					rules, incomplete, err := s.rbac.RulesFor(ctx, userFrom(ctx), r.Spec.Namespace)
					r.Status = rulesReviewStatus(rules, incomplete)
					if err != nil {
						s.logger.ErrorContext(ctx, "rules review incomplete", "err", err)
						r.Status.EvaluationError = "some rules could not be read"
					}
					return r
				},
			},
		},
		{
			gvr: authz.WithResource("subjectaccessreviews"), kind: "SubjectAccessReview", singular: "subjectaccessreview",
			newObject: func() runtime.Object { return &authorizationv1.SubjectAccessReview{} },
			newList:   func() runtime.Object { return &authorizationv1.SubjectAccessReview{} },
			review: &review{
				validate: func(_ context.Context, _ *restRequest, obj runtime.Object) field.ErrorList {
					r := obj.(*authorizationv1.SubjectAccessReview)
					_, errs := reviewAttributes(subjectOf(r.Spec), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
					return append(errs, requireSubject(r.Spec)...)
				},
				answer: func(ctx context.Context, s *Server, _ *restRequest, obj runtime.Object) runtime.Object {
					r := obj.(*authorizationv1.SubjectAccessReview)
					attrs, _ := reviewAttributes(subjectOf(r.Spec), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
					r.Status = s.accessReview(ctx, attrs)
					return r
				},
			},
		},
		{
			gvr: authz.WithResource("localsubjectaccessreviews"), kind: "LocalSubjectAccessReview", singular: "localsubjectaccessreview",
			namespaced: true,
			newObject:  func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} },
			newList:    func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} },
			review: &review{
				validate: func(_ context.Context, q *restRequest, obj runtime.Object) field.ErrorList {
					r := obj.(*authorizationv1.LocalSubjectAccessReview)
					_, errs := reviewAttributes(subjectOf(r.Spec), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
					if r.Spec.ResourceAttributes == nil {
						errs = append(errs, field.Required(field.NewPath("spec", "resourceAttributes"), "a local review is about a resource"))
					} else if r.Spec.ResourceAttributes.Namespace != q.namespace {
						// A local review may only ask about its own namespace.
						errs = append(errs, field.Invalid(field.NewPath("spec", "resourceAttributes", "namespace"), r.Spec.ResourceAttributes.Namespace, "must match the namespace of the request: "+q.namespace))
					}
					return append(errs, requireSubject(r.Spec)...)
				},
				answer: func(ctx context.Context, s *Server, q *restRequest, obj runtime.Object) runtime.Object {
					r := obj.(*authorizationv1.LocalSubjectAccessReview)
					attrs, _ := reviewAttributes(subjectOf(r.Spec), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
					r.Namespace = q.namespace
					r.Status = s.accessReview(ctx, attrs)
					return r
				},
			},
		},
		{
			gvr: authn.WithResource("tokenreviews"), kind: "TokenReview", singular: "tokenreview",
			newObject: func() runtime.Object { return &authenticationv1.TokenReview{} },
			newList:   func() runtime.Object { return &authenticationv1.TokenReview{} },
			review: &review{
				validate: func(_ context.Context, _ *restRequest, obj runtime.Object) field.ErrorList {
					if obj.(*authenticationv1.TokenReview).Spec.Token == "" {
						return field.ErrorList{field.Required(field.NewPath("spec", "token"), "")}
					}
					return nil
				},
				answer: tokenReview,
			},
		},
		{
			gvr: authn.WithResource("selfsubjectreviews"), kind: "SelfSubjectReview", singular: "selfsubjectreview",
			newObject: func() runtime.Object { return &authenticationv1.SelfSubjectReview{} },
			newList:   func() runtime.Object { return &authenticationv1.SelfSubjectReview{} },
			review: &review{
				answer: func(ctx context.Context, _ *Server, _ *restRequest, obj runtime.Object) runtime.Object {
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
func (s *Server) accessReview(ctx context.Context, attrs authorizer.Attributes) authorizationv1.SubjectAccessReviewStatus {
	decision, reason, err := s.authz.Authorize(ctx, attrs)
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: decision == authorizer.DecisionAllow, Denied: decision == authorizer.DecisionDeny, Reason: reason}
	if err != nil && !st.Allowed {
		s.logger.ErrorContext(ctx, "access review evaluation failed", "err", err)
		st.EvaluationError = "the authorization decision could not be made"
	}
	return st
}

// reviewRoute answers a review resource: create only, 201 with the
// review and its status.
func (s *Server) reviewRoute(q *restRequest) *writeRoute {
	kind := q.res.gvk()
	return &writeRoute{
		op:     admission.Create,
		kind:   kind,
		decode: s.decodeCreate(kind, q.res.newObject),
		build:  takeRequestObject,
		validate: func(ctx context.Context, _ *writeInput, a *attempt) error {
			if q.res.review.validate == nil {
				return nil
			}
			if errs := q.res.review.validate(ctx, q, a.obj); len(errs) > 0 {
				return apierrors.NewInvalid(kind.GroupKind(), "", errs)
			}
			return nil
		},
		store: func(ctx context.Context, _ *writeInput, a *attempt) (runtime.Object, error) {
			return q.res.review.answer(ctx, s, q, a.obj), nil
		},
		respond: s.respondOne(http.StatusCreated),
	}
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
