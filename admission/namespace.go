package admission

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// SystemNamespaces are the namespaces a cluster starts with, as
// kube-apiserver creates them, and may never be deleted. kube-apiserver
// protects the first three; kube-node-lease is protected too, because a
// node agent whose Lease namespace vanishes takes its node down with it.
func SystemNamespaces() []string {
	return []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}
}

// NamespaceGetter reads a namespace; a missing one is an API NotFound error.
type NamespaceGetter interface {
	GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error)
}

// NamespaceLifecycle refuses writes into a namespace that does not exist,
// new objects in a namespace that is terminating, and the deletion of the
// system namespaces.
type NamespaceLifecycle struct {
	*admission.Handler
	namespaces NamespaceGetter
}

var _ admission.ValidationInterface = (*NamespaceLifecycle)(nil)

// NewNamespaceLifecycle returns the plugin; g must not be nil.
func NewNamespaceLifecycle(g NamespaceGetter) (*NamespaceLifecycle, error) {
	if g == nil {
		return nil, errors.New("namespace lifecycle admission: namespace getter is nil")
	}
	return &NamespaceLifecycle{
		Handler:    admission.NewHandler(admission.Create, admission.Update, admission.Delete),
		namespaces: g,
	}, nil
}

var (
	namespaceKind      = schema.GroupKind{Kind: "Namespace"}
	localAccessReviews = schema.GroupResource{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}
)

// Validate implements admission.ValidationInterface.
func (l *NamespaceLifecycle) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetKind().GroupKind() == namespaceKind {
		if a.GetOperation() == admission.Delete && a.GetSubresource() == "" {
			for _, name := range SystemNamespaces() {
				if a.GetName() == name {
					return admission.NewForbidden(a, errors.New("this namespace may not be deleted"))
				}
			}
		}
		return nil
	}
	if a.GetNamespace() == "" || a.GetOperation() == admission.Delete {
		return nil
	}
	if a.GetResource().GroupResource() == localAccessReviews {
		// As kube-apiserver: an access review may ask about any
		// namespace; answering that it does not exist would tell more
		// than the review does.
		return nil
	}
	ns, err := l.namespaces.GetNamespace(ctx, a.GetNamespace())
	if err != nil {
		if apierrors.IsNotFound(err) {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, a.GetNamespace())
		}
		// Not an API error: the server logs the cause and answers a
		// generic 500, keeping the cause from the client.
		return fmt.Errorf("namespace lifecycle admission: %w", err)
	}
	if a.GetOperation() == admission.Create && (ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating) {
		err := admission.NewForbidden(a, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.GetNamespace()))
		if s, ok := err.(apierrors.APIStatus); ok {
			st := s.Status()
			st.Details.Causes = append(st.Details.Causes, metav1.StatusCause{Type: corev1.NamespaceTerminatingCause, Message: a.GetNamespace(), Field: "metadata.namespace"})
			return &apierrors.StatusError{ErrStatus: st}
		}
		return err
	}
	return nil
}
