package admission

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// TestControllerIdentities tries the garbage collector's patch right on
// what it is not for, and pods that would run as a controller.
func TestControllerIdentities(t *testing.T) {
	const gc = "system:serviceaccount:kube-system:generic-garbage-collector"
	const manager = "system:kube-controller-manager"
	const holder = "system:serviceaccount:kube-system:kube-controller-manager"
	p, err := NewControllerIdentities(ControllerIdentitiesConfig{GarbageCollector: gc, ControllerManager: manager, LeaseHolder: holder, Lease: "kube-controller-manager", Namespace: "kube-system",
		ServiceAccounts: []string{"generic-garbage-collector", "replicaset-controller"}, APIAudiences: []string{"https://trustplane.example"}})
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "u1"}
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", ResourceVersion: "5", OwnerReferences: []metav1.OwnerReference{owner}, Finalizers: []string{"foregroundDeletion"}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}}}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:controller:generic-garbage-collector"}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "kube-system"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: new("scheduler-1")}}
	update := func(who string, resource, subresource string, old runtime.Object, change func(runtime.Object)) admission.Attributes {
		obj := old.DeepCopyObject()
		change(obj)
		m := obj.(metav1.Object)
		return admission.NewAttributesRecord(obj, old, schema.GroupVersionKind{}, m.GetNamespace(), m.GetName(), schema.GroupVersionResource{Resource: resource}, subresource,
			admission.Update, &metav1.UpdateOptions{}, false, &user.DefaultInfo{Name: who})
	}
	pod := func(namespace, serviceAccount string) admission.Attributes {
		obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: namespace}, Spec: corev1.PodSpec{ServiceAccountName: serviceAccount}}
		return admission.NewAttributesRecord(obj, nil, corev1.SchemeGroupVersion.WithKind("Pod"), namespace, "p", corev1.SchemeGroupVersion.WithResource("pods"), "",
			admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "system:serviceaccount:kube-system:replicaset-controller"})
	}
	// token is a TokenRequest of who for the garbage collector's
	// account, as admission sees it: defaulted.
	token := func(who string, change func(*authenticationv1.TokenRequestSpec)) admission.Attributes {
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"https://trustplane.example"}, ExpirationSeconds: new(int64(3600))}}
		change(&tr.Spec)
		return admission.NewAttributesRecord(tr, nil, authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"), "kube-system", "generic-garbage-collector",
			corev1.SchemeGroupVersion.WithResource("serviceaccounts"), "token", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: who})
	}
	newLease := func(who, namespace, name string) admission.Attributes {
		obj := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
		return admission.NewAttributesRecord(obj, nil, coordinationv1.SchemeGroupVersion.WithKind("Lease"), namespace, name,
			coordinationv1.SchemeGroupVersion.WithResource("leases"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: who})
	}
	for _, tc := range []struct {
		name      string
		a         admission.Attributes
		forbidden bool
	}{
		{"the holder creates the controller manager's Lease", newLease(holder, "kube-system", "kube-controller-manager"), false},
		{"the holder creates the scheduler's Lease", newLease(holder, "kube-system", "kube-scheduler"), true},
		{"the scheduler creates its Lease", newLease("system:kube-scheduler", "kube-system", "kube-scheduler"), false},
		{"the manager's hour-long token for the API", token(manager, func(*authenticationv1.TokenRequestSpec) {}), false},
		{"the manager's token for another audience", token(manager, func(s *authenticationv1.TokenRequestSpec) { s.Audiences = []string{"https://vault.example"} }), true},
		{"the manager's token for the API and more", token(manager, func(s *authenticationv1.TokenRequestSpec) { s.Audiences = append(s.Audiences, "https://vault.example") }), true},
		{"the manager's day-long token", token(manager, func(s *authenticationv1.TokenRequestSpec) { s.ExpirationSeconds = new(int64(86400)) }), true},
		{"the manager's token bound to a pod", token(manager, func(s *authenticationv1.TokenRequestSpec) {
			s.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p"}
		}), true},
		{"an admin's day-long token", token("admin", func(s *authenticationv1.TokenRequestSpec) { s.ExpirationSeconds = new(int64(86400)) }), false},
		{"the collector releases a dependent", update(gc, "deployments", "", deployment, func(o runtime.Object) {
			o.(*appsv1.Deployment).OwnerReferences = nil
			o.(*appsv1.Deployment).ResourceVersion = "6"
		}), false},
		{"the collector removes a finalizer", update(gc, "deployments", "", deployment, func(o runtime.Object) { o.(*appsv1.Deployment).Finalizers = nil }), false},
		{"the collector changes a template", update(gc, "deployments", "", deployment, func(o runtime.Object) {
			o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image = "evil:1"
		}), true},
		{"the collector aggregates its role into view", update(gc, "clusterroles", "", role, func(o runtime.Object) {
			o.(*rbacv1.ClusterRole).Labels = map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}
		}), true},
		{"the collector takes the scheduler's Lease", update(gc, "leases", "", lease, func(o runtime.Object) {
			o.(*coordinationv1.Lease).Spec.HolderIdentity = new("attacker")
		}), true},
		{"the collector writes a status", update(gc, "deployments", "status", deployment, func(o runtime.Object) { o.(*appsv1.Deployment).Finalizers = nil }), true},
		{"an admin labels a role", update("admin", "clusterroles", "", role, func(o runtime.Object) {
			o.(*rbacv1.ClusterRole).Labels = map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}
		}), false},
		{"a pod as a controller", pod("kube-system", "generic-garbage-collector"), true},
		{"a pod as the ReplicaSet controller", pod("kube-system", "replicaset-controller"), true},
		{"a pod as kube-system's default", pod("kube-system", "default"), false},
		{"a pod as an account of the same name elsewhere", pod("team", "generic-garbage-collector"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Validate(context.Background(), tc.a, nil)
			if tc.forbidden != (err != nil) || (err != nil && !apierrors.IsForbidden(err)) {
				t.Errorf("Validate: %v, want forbidden %v", err, tc.forbidden)
			}
		})
	}
}
