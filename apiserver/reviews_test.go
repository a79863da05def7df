package apiserver

import (
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAccessReviews(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	ssar := func(verb, resource, ns string) bool {
		t.Helper()
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: resource, Namespace: ns}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	if !ssar("create", "secrets", "default") {
		t.Error("admin may not create secrets, says its review")
	}
	sar := func(u string, groups []string, verb, resource, ns string) bool {
		t.Helper()
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: u, Groups: groups, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: resource, Namespace: ns}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	if sar("system:kube-scheduler", nil, "get", "secrets", "default") {
		t.Error("the scheduler may get secrets, says a subject access review")
	}
	if !sar("system:kube-scheduler", nil, "list", "nodes", "") {
		t.Error("the scheduler may not list nodes, says a subject access review")
	}
	if sar("mallory", []string{"system:masters"}, "get", "secrets", "default") {
		t.Error("system:masters may get secrets, says a subject access review")
	}
	if _, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "x"}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("review without a question: %v, want Invalid", err)
	}
	// A local review asks about its own namespace only.
	_, err := cs.AuthorizationV1().LocalSubjectAccessReviews("default").Create(ctx, &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "x", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "kube-system"}}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("local review of another namespace: %v, want Invalid", err)
	}
	// Reviews are not stored and take no other verb.
	if _, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("review without attributes: %v, want Invalid", err)
	}
	who, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || who.Status.UserInfo.Username != "admin" {
		t.Errorf("self subject review: %+v %v", who, err)
	}
	// Asking another's rights is an admin's question.
	alice := ts.clientset(t, &identity{user: "alice"})
	if _, err := alice.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "admin", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets"}}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice reviewing admin: %v, want Forbidden", err)
	}
}
