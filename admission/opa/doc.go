// Package opa is the Rego admission stage of the API server, run by OPA's
// Go packages: a policy Set is compiled once, its own tests passing
// first, and evaluated for each request; the Plugin runs it as a mutating
// (patch) and a validating (deny, warn) admission plugin.
//
// Policies follow the convention of kube-mgmt and OPA's Kubernetes
// admission tutorial, so that one written for them runs unchanged: input
// is the request's admission.k8s.io/v1 AdmissionReview (see Input);
// package kubernetes.admission; deny contains msg refuses, warn contains
// msg warns, patch contains op (JSONPatch) mutates. A METADATA annotation
// with custom.enforcement (deny, warn or dryrun) says what a policy's
// deny messages do.
package opa
