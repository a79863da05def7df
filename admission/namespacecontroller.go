package admission

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// NamespaceControllerRestriction holds the namespace controller to its
// one job, emptying namespaces that are being deleted. Its role lets it
// delete, in every namespace, each kind it must empty, and update any
// namespace's status and finalizers; with that alone its token could
// delete kube-system's RoleBindings, ServiceAccounts or Leases, or mark a
// live namespace Terminating (NamespaceLifecycle then refuses every
// create in it). Here each update or delete it makes must concern a
// namespace that has a deletionTimestamp, which only a delete of the
// namespace sets and nothing unsets: for a namespaced object (each object
// of a deletecollection is admitted on its own), the object's namespace;
// for a Namespace (its status or finalize subresource), the namespace
// itself. The phase is not trusted: the status it would write is what
// it is refused. A write of another cluster-scoped object is refused, as
// emptying a namespace needs none. Its reads are not admission's, and
// other users are untouched.
type NamespaceControllerRestriction struct {
	*admission.Handler
	user       string
	namespaces NamespaceGetter
}

var _ admission.ValidationInterface = (*NamespaceControllerRestriction)(nil)

// NewNamespaceControllerRestriction returns the plugin for the namespace
// controller's user name; g must not be nil.
func NewNamespaceControllerRestriction(user string, g NamespaceGetter) (*NamespaceControllerRestriction, error) {
	if user == "" {
		return nil, errors.New("namespace controller admission: the controller's user name is required")
	}
	if g == nil {
		return nil, errors.New("namespace controller admission: namespace getter is nil")
	}
	return &NamespaceControllerRestriction{
		Handler:    admission.NewHandler(admission.Update, admission.Delete),
		user:       user,
		namespaces: g,
	}, nil
}

var namespacesResource = schema.GroupResource{Resource: "namespaces"}

// Validate implements admission.ValidationInterface.
func (p *NamespaceControllerRestriction) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if u := a.GetUserInfo(); u == nil || u.GetName() != p.user {
		return nil
	}
	name := a.GetNamespace()
	if a.GetResource().GroupResource() == namespacesResource {
		name = a.GetName()
	}
	if name == "" {
		return admission.NewForbidden(a, errors.New("the namespace controller may write only in namespaces being deleted, and this object is in none"))
	}
	ns, err := p.namespaces.GetNamespace(ctx, name)
	if apierrors.IsNotFound(err) {
		return admission.NewForbidden(a, fmt.Errorf("namespace %s not found: the namespace controller may delete and finalize only in namespaces being deleted", name))
	}
	if err != nil {
		// Refused; as in NamespaceLifecycle, the cause goes to the log,
		// not to the client.
		return fmt.Errorf("namespace controller admission: %w", err)
	}
	if ns.DeletionTimestamp == nil {
		return admission.NewForbidden(a, fmt.Errorf("namespace %s is not being deleted: the namespace controller may delete and finalize only in namespaces being deleted", name))
	}
	return nil
}
