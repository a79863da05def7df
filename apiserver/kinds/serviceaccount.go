package kinds

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateServiceAccount validates a service account on create (old == nil)
// or update. kube checks only a service account's metadata, which is the
// caller's, so there is nothing left to refuse: the secrets and
// imagePullSecrets it lists are references that need not exist yet.
func ValidateServiceAccount(sa, old *corev1.ServiceAccount) field.ErrorList {
	return nil
}
