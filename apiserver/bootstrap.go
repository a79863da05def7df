package apiserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/rbac"
)

// systemNamespaces exist from the first start.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem}

// bootstrap creates what a cluster starts with and is missing: the system
// namespaces and the bootstrap RBAC policy. Existing objects are kept as
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
	for _, name := range systemNamespaces {
		add(namespacesGR, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}},
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
	created := 0
	for _, o := range objs {
		accessor, err := meta.Accessor(o.obj)
		if err != nil {
			return err
		}
		accessor.SetUID(types.UID(uuid.NewString()))
		accessor.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
		err = s.store.Create(ctx, o.gr, storage.Key(o.gr, "", accessor.GetName()), o.obj)
		switch {
		case errors.Is(err, storage.ErrAlreadyExists):
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
