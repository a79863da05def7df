package responses

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// MetadataSubresource is the subresource a grant names to give the
// metadata of a kind's objects and nothing else: "secrets/metadata"
// allows get, list, watch, patch, delete and deletecollection of Secrets
// answered with PartialObjectMetadata only, and patches that change
// only metadata. It is what the garbage collector and the namespace
// controller need of Secrets: their owners and finalizers, never their
// data. kube-apiserver has no such grant; its controllers read whole
// Secrets.
const MetadataSubresource = "metadata"

type metadataOnlyKey struct{}

// WithMetadataOnly marks a request allowed only by a grant on the
// metadata subresource: everything it is answered with is metadata.
func WithMetadataOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, metadataOnlyKey{}, true)
}

// MetadataOnly reports whether the request may see and change only
// metadata (WithMetadataOnly).
func MetadataOnly(ctx context.Context) bool {
	only, _ := ctx.Value(metadataOnlyKey{}).(bool)
	return only
}

// metadataConversion is the conversion forced on a metadata-only
// request, whatever it asked for: PartialObjectMetadata, or
// PartialObjectMetadataList for a list (Transform tells them apart).
var metadataConversion = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata")

// hideFromMetadata removes from m, a copy to be answered under a grant on
// metadata, what holds or describes a Secret's data: kubectl apply's
// last-applied configuration, a copy of the whole object, and the
// managed fields, which name the data's keys.
func hideFromMetadata(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	delete(m.Annotations, corev1.LastAppliedConfigAnnotation)
}

// SameButMetadata reports whether old and updated differ at most in their
// metadata: what a patch allowed only by a metadata grant may change.
func SameButMetadata(old, updated runtime.Object) (bool, error) {
	o, err := runtime.DefaultUnstructuredConverter.ToUnstructured(old)
	if err != nil {
		return false, err
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(updated)
	if err != nil {
		return false, err
	}
	for _, m := range []map[string]any{o, u} {
		delete(m, "metadata")
		delete(m, "apiVersion")
		delete(m, "kind")
	}
	return equality.Semantic.DeepEqual(o, u), nil
}
