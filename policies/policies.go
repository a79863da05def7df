// Package policies holds the Rego admission policies shipped with
// trustplane, Secrets first, each beside its tests.
//
// Each policy is one file in package kubernetes.admission, in the input
// convention of kube-mgmt and OPA's Kubernetes admission tutorial: input is
// an admission.k8s.io/v1 AdmissionReview, "deny contains msg" refuses, "warn
// contains msg" warns, and a "# METADATA" annotation at package scope gives
// the policy's title, the control-plane risk it guards against
// (description), and its enforcement (custom.enforcement: deny, warn or
// dryrun). A policy never calls a rule of another file, and its test file
// needs only it: the engine gives each policy, with its test file, a
// namespace of its own. (Plain OPA cannot load the directory as it is: it
// refuses two package-scope annotations of one package.) Every rule and
// test name starts with its file's name all the same, so that the files
// also load together once their annotations are set aside.
//
// Every deny, warn and patch rule starts with a condition on input.request
// that OPA's rule index can use (the kind, the operation, the namespace,
// equal to a constant or in a set of constants), before any helper rule:
// a request of another kind then skips the rule (the engine leaves a rule
// out of the query of a kind and operation it names neither of, and OPA's
// rule index skips it otherwise) instead of evaluating it. The kind's group is compared the same
// way (input.request.kind.group == ""), not through object.get with a
// default: the index then uses it too, and the body does not call a
// builtin (5% of a Secret create's evaluation). The API server's
// AdmissionReview, like kube-apiserver's, always has the group ("" for the
// core group), and so has the input that policy eval and policy verify
// build (from a whole review too); only a Rego test's own input can lack
// it, and no rule that names the group then holds for it.
//
// The policies read other objects from data.kubernetes, replicated as
// kube-mgmt does: data.kubernetes.namespaces[name] and
// data.kubernetes.serviceaccounts[namespace][name]. Those that depend on
// a namespace's labels refuse what they cannot decide when the namespace
// is not there, so the engine must replicate namespaces and
// serviceaccounts for them.
package policies

import "embed"

// FS is the shipped library that `trustplane init` installs into
// DIR/policies: every policy and its _test.rego file. The tests ship too,
// because the engine runs a policy set's tests before it loads the set.
//
//go:embed *.rego
var FS embed.FS

// Files are the library's files by name, as the engine compiles them.
func Files() (map[string][]byte, error) {
	entries, err := FS.ReadDir(".")
	if err != nil {
		return nil, err
	}
	files := make(map[string][]byte, len(entries))
	for _, e := range entries {
		if files[e.Name()], err = FS.ReadFile(e.Name()); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// The label, and its value, that secrets_namespace.rego requires of a
// namespace before Secrets may be created in it; the API server gives it
// to kube-system when it creates it.
const (
	SecretsNamespaceLabel   = "trustplane.io/secrets"
	SecretsNamespaceAllowed = "allowed"
)
