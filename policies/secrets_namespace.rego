# METADATA
# title: Secrets only in namespaces labelled for them
# description: >-
#   Risk: credentials scattered into namespaces nobody chose to hold them, where
#   every role that reads Secrets or creates pods there can take them, and into
#   "default", where any kubectl command without -n and many tools land, so that
#   it ends up holding what nobody meant to share. A new Secret is refused unless
#   its namespace carries the label trustplane.io/secrets=allowed (read from the
#   replicated Namespace, data.kubernetes.namespaces); one in "default" is refused
#   whatever its labels. Existing Secrets are not touched: updates and deletes
#   pass. Ships with enforcement warn because the README's quick start creates a
#   Secret in "default". The API server creates kube-system with the label, for
#   the bootstrap tokens `trustplane token create` writes there (who may write
#   Secrets in kube-system is secrets_kube_system.rego's to decide). To make it
#   deny: label the namespaces that hold Secrets, move the Secrets out of
#   "default", check with `trustplane policy audit`, then change the enforcement
#   below to deny.
# custom:
#   enforcement: warn
package kubernetes.admission

# The label a namespace needs before Secrets may be created in it.
secrets_namespace_label := "trustplane.io/secrets"

secrets_namespace_label_value := "allowed"

deny contains msg if {
	input.request.kind.kind == "Secret"
	input.request.operation == "CREATE"
	input.request.namespace == "default"
	input.request.kind.group == ""
	msg := sprintf(
		"Secret %q may not be created in namespace \"default\"; create it in a namespace labelled trustplane.io/secrets=allowed",
		[secrets_namespace_name],
	)
}

deny contains msg if {
	input.request.kind.kind == "Secret"
	input.request.operation == "CREATE"
	input.request.kind.group == ""

	# A request without a namespace is treated as one in no labelled
	# namespace: refused, not let through.
	ns := object.get(input.request, "namespace", "")
	ns != "default"

	# secrets_namespace_label=secrets_namespace_label_value, written out
	# here and in the messages: each reference to a rule costs the
	# evaluation of every Secret create a few microseconds.
	# test_secrets_namespace_checks_the_named_label fails if they differ.
	not data.kubernetes.namespaces[ns].metadata.labels["trustplane.io/secrets"] == "allowed"
	msg := sprintf(
		"Secret %q may not be created in namespace %q: the namespace is not labelled trustplane.io/secrets=allowed",
		[secrets_namespace_name, ns],
	)
}

# The Secret's name, or its generateName followed by "*".
secrets_namespace_name := name if {
	name := object.get(input.request, "name", "")
	name != ""
} else := concat("", [object.get(input.request, ["object", "metadata", "generateName"], ""), "*"])
