package registry

import (
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// NewScheme registers the served kinds and the meta types.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, rbacv1.AddToScheme, appsv1.AddToScheme, coordinationv1.AddToScheme, autoscalingv1.AddToScheme, authorizationv1.AddToScheme, authenticationv1.AddToScheme, eventsv1.AddToScheme, discoveryv1.AddToScheme, certificatesv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Group: "meta.k8s.io", Version: "v1"})
	if err := metav1.AddMetaToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewCodecs serves JSON, YAML and protobuf without conversion: trustplane
// stores and serves each kind in its one external version. As in
// kube-apiserver, each media type's Serializer drops unknown fields and
// takes the last of duplicate keys; its StrictSerializer reports them, for
// fieldValidation.
func NewCodecs(s *runtime.Scheme) runtime.NegotiatedSerializer {
	return serializer.NewCodecFactory(s).WithoutConversion()
}
