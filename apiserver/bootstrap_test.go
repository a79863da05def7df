package apiserver

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/trustplane/trustplane/apiserver/responses"
	"github.com/trustplane/trustplane/policies"
	"github.com/trustplane/trustplane/rbac"
)

// A restart restores what was removed from the bootstrap policy and keeps
// what was added, unless autoupdate is off.
func TestBootstrapReconciles(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	role, err := cs.RbacV1().ClusterRoles().Get(ctx, "system:kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bootstrapRules := role.Rules
	role.Rules = append(role.Rules[1:], rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"added"}})
	if _, err := cs.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "system:discovery", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	binding.Subjects = nil
	if _, err := cs.RbacV1().ClusterRoleBindings().Update(ctx, binding, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kept, err := cs.RbacV1().ClusterRoles().Get(ctx, "system:public-info-viewer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kept.Annotations[autoupdateAnnotation] = "false"
	kept.Rules = nil
	if _, err := cs.RbacV1().ClusterRoles().Update(ctx, kept, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := ts.server.bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	role, _ = cs.RbacV1().ClusterRoles().Get(ctx, "system:kube-scheduler", metav1.GetOptions{})
	if missing := rbac.Uncovered(role.Rules, bootstrapRules); len(missing) > 0 {
		t.Errorf("reconciled scheduler role lacks %v", missing)
	}
	if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.ResourceNames, "added") }) {
		t.Error("reconcile dropped the added rule")
	}
	binding, _ = cs.RbacV1().ClusterRoleBindings().Get(ctx, "system:discovery", metav1.GetOptions{})
	if len(binding.Subjects) == 0 {
		t.Error("reconcile did not restore the discovery binding's subjects")
	}
	kept, _ = cs.RbacV1().ClusterRoles().Get(ctx, "system:public-info-viewer", metav1.GetOptions{})
	if len(kept.Rules) != 0 {
		t.Error("reconcile changed a role whose autoupdate is false")
	}
}

// A fresh cluster has kube's four system namespaces, labelled with their
// names, and none of them can be deleted, by the cluster admin either.
func TestSystemNamespaces(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("namespace %s: %v", name, err)
			continue
		}
		if ns.Status.Phase != corev1.NamespaceActive {
			t.Errorf("namespace %s is %s, want Active", name, ns.Status.Phase)
		}
		// kube-system holds the bootstrap tokens: secrets_namespace.rego
		// lets Secrets be created only where this label allows them.
		want := map[string]string{corev1.LabelMetadataName: name}
		if name == "kube-system" {
			want[policies.SecretsNamespaceLabel] = policies.SecretsNamespaceAllowed
		}
		if !maps.Equal(ns.Labels, want) {
			t.Errorf("namespace %s has labels %v, want %v", name, ns.Labels, want)
		}
		err = cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("delete namespace %s: %v, want Forbidden", name, err)
		}
	}
}

// The namespace controller may list and delete every namespaced resource
// the server serves, and so empty any namespace: a kind added to the
// registry without a rule in its role would leave namespaces stuck in
// Terminating.
func TestNamespaceControllerCoversEveryNamespacedResource(t *testing.T) {
	ts := startServer(t)
	ctx := testContext(t)
	u := &user.DefaultInfo{Name: rbac.ControllerUser("namespace-controller"), Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", user.AllAuthenticated}}
	n := 0
	for _, res := range ts.server.registry.All() {
		verbs := res.Verbs()
		if !res.Namespaced || !slices.Contains(verbs, "list") || !slices.Contains(verbs, "deletecollection") {
			continue
		}
		n++
		for _, verb := range []string{"list", "deletecollection", "delete"} {
			attrs := authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: res.GVR.Group, APIVersion: res.GVR.Version, Resource: res.GVR.Resource, Namespace: "team", ResourceRequest: true}
			if res.GVR.Group == "" && res.GVR.Resource == "secrets" {
				// Of Secrets it has their metadata only, which the
				// authorization filter asks for when secrets are refused.
				attrs.Subresource = responses.MetadataSubresource
			}
			if d, reason, err := ts.server.authz.Authorize(ctx, attrs); d != authorizer.DecisionAllow {
				t.Errorf("the namespace controller may not %s %s: %s %v", verb, res.GVR.GroupResource(), reason, err)
			}
		}
	}
	if n < 10 {
		t.Errorf("%d namespaced resources checked; the server serves more", n)
	}
}

// The garbage collector may list, watch, patch and delete every resource
// the server serves that can own or be owned, cluster-scoped ones
// included: a kind added to the registry without a rule in its role would
// never be collected, nor its dependents. It may get nothing (it looks
// owners up by lists of their name) and create nothing, and of Secrets it
// has only their metadata.
func TestGarbageCollectorCoversEveryResource(t *testing.T) {
	ts := startServer(t)
	ctx := testContext(t)
	u := &user.DefaultInfo{Name: rbac.ControllerUser("generic-garbage-collector"), Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", user.AllAuthenticated}}
	authorize := func(verb string, gvr schema.GroupVersionResource, namespaced bool, subresource string) authorizer.Decision {
		attrs := authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: gvr.Group, APIVersion: gvr.Version, Resource: gvr.Resource, Subresource: subresource, ResourceRequest: true}
		if namespaced {
			attrs.Namespace = "team"
		}
		d, _, _ := ts.server.authz.Authorize(ctx, attrs)
		return d
	}
	n, clusterScoped := 0, 0
	for _, res := range ts.server.registry.All() {
		verbs := res.Verbs()
		if res.GVR.Resource == "events" {
			// Ignored, as by kube's collector.
			continue
		}
		if !slices.Contains(verbs, "list") || !slices.Contains(verbs, "watch") || !slices.Contains(verbs, "delete") {
			// The reviews, which every user may create of himself.
			continue
		}
		// Of Secrets it has their metadata only, which the
		// authorization filter asks for when secrets are refused.
		sub, secrets := "", res.GVR.Group == "" && res.GVR.Resource == "secrets"
		if secrets {
			sub = responses.MetadataSubresource
		}
		for _, verb := range []string{"get", "create", "update"} {
			if authorize(verb, res.GVR, res.Namespaced, sub) == authorizer.DecisionAllow {
				t.Errorf("the garbage collector may %s %s", verb, res.GVR.GroupResource())
			}
		}
		if secrets {
			for _, verb := range []string{"get", "list", "watch", "patch", "delete"} {
				if authorize(verb, res.GVR, res.Namespaced, "") == authorizer.DecisionAllow {
					t.Errorf("the garbage collector may %s whole %s", verb, res.GVR.GroupResource())
				}
			}
		}
		n++
		if !res.Namespaced {
			clusterScoped++
		}
		for _, verb := range []string{"list", "watch", "patch", "delete"} {
			if authorize(verb, res.GVR, res.Namespaced, sub) != authorizer.DecisionAllow {
				t.Errorf("the garbage collector may not %s %s", verb, res.GVR.GroupResource())
			}
		}
	}
	if n < 12 || clusterScoped < 4 {
		t.Errorf("%d resources checked, %d cluster-scoped; the server serves more", n, clusterScoped)
	}
}
