package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trustplane/trustplane/admission"
	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/policies"
	"github.com/trustplane/trustplane/rbac"
)

// maxUpdateAttempts bounds retries of a server-side reconciliation that
// races with other writers.
const maxUpdateAttempts = 5

// autoupdateAnnotation marks a bootstrap object the server may add
// missing rules and subjects to; set it to "false" to keep an object as
// edited.
const autoupdateAnnotation = "rbac.authorization.kubernetes.io/autoupdate"

// reconcile restores what a stored bootstrap ClusterRole or
// ClusterRoleBinding lacks of its bootstrap form: missing rules and
// subjects come back, additions stay, as kube-apiserver reconciles its
// policy at start. What is missing is decided by rbac.Uncovered, the
// authorizer's own matching.
func (s *Server) reconcile(ctx context.Context, gr schema.GroupResource, want runtime.Object) (bool, error) {
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		var stored runtime.Object
		switch want.(type) {
		case *rbacv1.ClusterRole:
			stored = &rbacv1.ClusterRole{}
		case *rbacv1.ClusterRoleBinding:
			stored = &rbacv1.ClusterRoleBinding{}
		case *rbacv1.Role:
			stored = &rbacv1.Role{}
		case *rbacv1.RoleBinding:
			stored = &rbacv1.RoleBinding{}
		default:
			return false, nil
		}
		accessor, _ := meta.Accessor(want)
		key := storage.Key(gr, accessor.GetNamespace(), accessor.GetName())
		if err := s.store.Get(ctx, gr, key, stored); err != nil {
			return false, err
		}
		storedMeta, _ := meta.Accessor(stored)
		if storedMeta.GetAnnotations()[autoupdateAnnotation] == "false" {
			return false, nil
		}
		changed := false
		switch w := want.(type) {
		case *rbacv1.ClusterRole:
			role := stored.(*rbacv1.ClusterRole)
			if missing := rbac.Uncovered(role.Rules, w.Rules); len(missing) > 0 {
				role.Rules = append(role.Rules, missing...)
				changed = true
			}
			if w.AggregationRule != nil && role.AggregationRule == nil {
				role.AggregationRule = w.AggregationRule
				changed = true
			}
		case *rbacv1.ClusterRoleBinding:
			b := stored.(*rbacv1.ClusterRoleBinding)
			if b.RoleRef != w.RoleRef {
				// roleRef is immutable; a changed one is the operator's.
				return false, nil
			}
			b.Subjects, changed = withSubjects(b.Subjects, w.Subjects)
		case *rbacv1.Role:
			role := stored.(*rbacv1.Role)
			if missing := rbac.Uncovered(role.Rules, w.Rules); len(missing) > 0 {
				role.Rules = append(role.Rules, missing...)
				changed = true
			}
		case *rbacv1.RoleBinding:
			b := stored.(*rbacv1.RoleBinding)
			if b.RoleRef != w.RoleRef {
				return false, nil
			}
			b.Subjects, changed = withSubjects(b.Subjects, w.Subjects)
		}
		if !changed {
			return false, nil
		}
		rev, _ := storage.ParseResourceVersion(storedMeta.GetResourceVersion())
		err := s.store.Update(ctx, gr, key, rev, stored)
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		return err == nil, err
	}
	return false, fmt.Errorf("still changing after %d attempts", maxUpdateAttempts)
}

// withSubjects is subjects with those of want it lacks, and whether it
// lacked any.
func withSubjects(subjects, want []rbacv1.Subject) ([]rbacv1.Subject, bool) {
	changed := false
	for _, subj := range want {
		if !slices.Contains(subjects, subj) {
			subjects = append(subjects, subj)
			changed = true
		}
	}
	return subjects, changed
}

// bootstrap creates what a cluster starts with and is missing: the system
// namespaces, the bootstrap RBAC policy and the controllers'
// ServiceAccounts. Existing objects are kept as
// they are.
func (s *Server) bootstrap(ctx context.Context) error {
	var objs []struct {
		gr  schema.GroupResource
		obj runtime.Object
	}
	add := func(gr schema.GroupResource, obj runtime.Object) {
		objs = append(objs, struct {
			gr  schema.GroupResource
			obj runtime.Object
		}{gr, obj})
	}
	for _, name := range admission.SystemNamespaces() {
		labels := map[string]string{corev1.LabelMetadataName: name}
		if name == metav1.NamespaceSystem {
			// kube-system holds the cluster's own credentials
			// (bootstrap tokens), which secrets_namespace.rego allows
			// only in a namespace so labelled; who may write them there
			// is secrets_kube_system.rego's to decide.
			labels[policies.SecretsNamespaceLabel] = policies.SecretsNamespaceAllowed
		}
		add(namespacesGR, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		})
	}
	roles, bindings := rbac.BootstrapPolicy()
	for _, r := range roles {
		add(clusterRolesGR, r)
	}
	for _, b := range bindings {
		add(clusterRoleBindingsGR, b)
	}
	// The controller manager's: its controllers' ServiceAccounts, and
	// its certificate's one grant, to obtain their tokens.
	for _, sa := range rbac.ControllerServiceAccounts() {
		add(serviceAccountsGR, sa)
	}
	nsRoles, nsBindings := rbac.BootstrapNamespacedPolicy()
	for _, r := range nsRoles {
		add(rolesGR, r)
	}
	for _, b := range nsBindings {
		add(roleBindingsGR, b)
	}
	created := 0
	for _, o := range objs {
		accessor, err := meta.Accessor(o.obj)
		if err != nil {
			return err
		}
		accessor.SetUID(types.UID(uuid.NewString()))
		accessor.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
		err = s.store.Create(ctx, o.gr, storage.Key(o.gr, accessor.GetNamespace(), accessor.GetName()), o.obj)
		switch {
		case errors.Is(err, storage.ErrAlreadyExists):
			changed, err := s.reconcile(ctx, o.gr, o.obj)
			if err != nil {
				return fmt.Errorf("reconcile %s %q: %w", o.gr, accessor.GetName(), err)
			}
			if changed {
				s.logger.Info("bootstrap object reconciled", "resource", o.gr.String(), "name", accessor.GetName())
			}
		case err != nil:
			return fmt.Errorf("bootstrap %s %q: %w", o.gr, accessor.GetName(), err)
		default:
			created++
		}
	}
	if created > 0 {
		s.logger.Info("bootstrap objects created", "count", created)
	}
	return nil
}
