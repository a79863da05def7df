package opa

import "github.com/open-policy-agent/opa/v1/ast"

// stringTerm is s as a term: for the strings every input holds (the
// AdmissionReview's keys, an object's metadata keys, common kinds and
// values) one term made once and shared by every input, otherwise a new
// one. A term for each string was most of the input's allocations (78 of
// 156 for a small Secret), and an input is built for each request. AST
// values are not changed once built, and OPA shares the terms of
// ast.InternedTerm the same way.
func stringTerm(s string) *ast.Term {
	if len(s) <= sharedStrings.longest {
		if t, ok := sharedStrings.terms[s]; ok {
			return t
		}
	}
	return ast.StringTerm(s)
}

// sharedStrings are the terms of the strings stringTerm shares, and the
// length of the longest: a longer string (a Secret's value) is not hashed
// to be looked up.
var sharedStrings = func() (shared struct {
	terms   map[string]*ast.Term
	longest int
}) {
	shared.terms = map[string]*ast.Term{}
	for _, s := range []string{
		// The AdmissionReview.
		"", "apiVersion", "kind", "request", "uid", "kind", "resource", "subResource",
		"requestKind", "requestResource", "requestSubResource", "name", "namespace",
		"operation", "userInfo", "username", "groups", "extra", "object", "oldObject",
		"dryRun", "options", "group", "version", "admission.k8s.io/v1", "AdmissionReview",
		"CREATE", "UPDATE", "DELETE", "CONNECT", "system:authenticated",
		"CreateOptions", "UpdateOptions", "DeleteOptions", "PatchOptions", "meta.k8s.io/v1",
		"fieldManager", "fieldValidation", "propagationPolicy", "gracePeriodSeconds",
		// Object metadata, and its managed fields.
		"metadata", "generateName", "resourceVersion", "generation", "creationTimestamp",
		"deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
		"ownerReferences", "finalizers", "managedFields", "manager", "time", "fieldsType",
		"fieldsV1", "FieldsV1", "Update", "Apply", "subresource", "controller",
		"blockOwnerDeletion", "f:metadata", "f:labels", "f:annotations", "f:data",
		"f:stringData", "f:binaryData", "f:type", "f:immutable", "f:spec", ".", "f:.",
		// Kinds and their fields the policies read.
		"v1", "apps/v1", "batch/v1", "Secret", "ConfigMap", "Namespace", "Pod",
		"ServiceAccount", "secrets", "configmaps", "namespaces", "pods", "serviceaccounts",
		"data", "stringData", "binaryData", "type", "immutable", "Opaque",
		"kubernetes.io/service-account-token", "spec", "status", "containers",
		"initContainers", "ephemeralContainers", "image", "volumes", "env", "envFrom",
		"valueFrom", "secretKeyRef", "secretRef", "configMapKeyRef", "secret",
		"secretName", "key", "optional", "imagePullSecrets", "serviceAccountName", "token",
	} {
		shared.terms[s] = ast.InternedTerm(s)
		shared.longest = max(shared.longest, len(s))
	}
	return shared
}()
