// Package kinds holds the per-kind rules kube-apiserver applies to a write
// before it reaches storage: defaulting, validation of create and update, and
// the fields a field selector may match on; and what kube's strategies
// decide for a kind that the caller applies: a pod's QoS class when it is
// created (QOSClass) and how long a deleted pod waits (PodGracePeriod).
//
// Kubernetes keeps these rules in k8s.io/kubernetes (pkg/apis/*/v1/defaults.go,
// pkg/apis/*/validation, pkg/registry/*/strategy.go) and runs them on its
// internal types after converting the request. trustplane stores the external
// v1 types as they are, so the rules here are written against those types,
// with apimachinery's validation helpers, and aim to return the same field
// paths, error types and messages a client gets from kube. Where kube's
// conversion to the internal types would hide a v1-only difference (the
// deprecated spec.serviceAccount, status.podIP next to status.podIPs,
// spec.podCIDR next to spec.podCIDRs) the Default functions settle it the way
// a round trip through kube would.
//
// The caller owns everything generic: object metadata (name, generateName,
// namespace, labels, annotations, finalizers, owner references), resource
// versions, and the per-verb preparation kube's strategies do before
// validation (clearing status on create, carrying status over on a spec
// update and spec over on a status update, bumping metadata.generation).
//
// A write is handled in this order, as in kube's REST handlers:
//
//	DefaultDeployment(d)           // what decoding does in kube
//	// prepare for create or update (caller)
//	errs := ValidateDeployment(d, old)
//	if len(errs) > 0 {
//		// apierrors.NewInvalid(kind, name, errs)
//	}
//
// Every function accepts nil and zero-valued objects: a nil object is
// treated as the zero value, and a nil old object means create.
package kinds
