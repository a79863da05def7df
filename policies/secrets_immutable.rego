# METADATA
# title: Secrets in production namespaces are immutable
# description: >-
#   Risk: a credential in production swapped in place. A mutable Secret can be
#   rewritten by anyone allowed to update it, and every pod that mounts it picks
#   the new value up without a rollout, a review or a restart; and the kubelets
#   keep watching every mutable Secret their pods use, a load on the API server
#   that immutable ones do not cost. In a namespace labelled
#   trustplane.io/environment=production (read from the replicated Namespace,
#   data.kubernetes.namespaces), a Secret must be created with immutable: true,
#   and an existing mutable one may change its data only in the update that
#   makes it immutable; to change a credential, create a new Secret and roll the
#   workloads to it. An update of a mutable Secret's metadata alone (labels,
#   finalizers, owners) passes with a warning, so that a namespace labelled
#   after the fact can still be cleaned up and deleted. When the namespace is
#   not in the replicated data the policy cannot tell, and refuses.
# custom:
#   enforcement: deny
package kubernetes.admission

# The label, and its value, that mark a namespace as production.
secrets_immutable_label := "trustplane.io/environment"

secrets_immutable_label_value := "production"

deny contains msg if {
	input.request.kind.kind == "Secret"
	input.request.operation == "CREATE"
	input.request.kind.group == ""

	# secrets_immutable_production, written out for the path every Secret
	# create takes: each reference to a rule costs it a few microseconds.
	# test_secrets_immutable_checks_the_named_label fails if the label
	# here and secrets_immutable_label=secrets_immutable_label_value differ.
	# The namespace first: most Secrets are mutable, and most namespaces
	# are not production, so this is where most creates stop.
	data.kubernetes.namespaces[input.request.namespace].metadata.labels["trustplane.io/environment"] == "production"
	not input.request.object.immutable == true
	msg := sprintf(
		"Secret %q in namespace %q must be created with immutable: true: the namespace is labelled %s=%s",
		[secrets_immutable_name, secrets_immutable_namespace, secrets_immutable_label, secrets_immutable_label_value],
	)
}

deny contains msg if {
	input.request.kind.kind == "Secret"
	input.request.operation == "UPDATE"
	input.request.kind.group == ""
	secrets_immutable_production
	not secrets_immutable_object_immutable
	secrets_immutable_data_changed
	msg := sprintf(
		"Secret %q in namespace %q may change its data only in the update that makes it immutable (immutable: true): the namespace is labelled %s=%s; to change a credential, create a new Secret",
		[secrets_immutable_name, secrets_immutable_namespace, secrets_immutable_label, secrets_immutable_label_value],
	)
}

# Fail closed: without the namespace, production cannot be told apart. A
# create writes data; an update, when it changes it. (Two rules, not one for
# both operations: the rule index then chooses them by the operation, which
# it cannot do for "operation in {...}".)
deny contains msg if {
	input.request.kind.kind == "Secret"
	input.request.operation == "CREATE"
	input.request.kind.group == ""
	not data.kubernetes.namespaces[input.request.namespace]
	not input.request.object.immutable == true
	msg := secrets_immutable_unknown_namespace_message
}

deny contains msg if {
	input.request.kind.kind == "Secret"
	input.request.operation == "UPDATE"
	input.request.kind.group == ""
	not input.request.object.immutable == true
	not data.kubernetes.namespaces[input.request.namespace]
	secrets_immutable_data_changed
	msg := secrets_immutable_unknown_namespace_message
}

secrets_immutable_unknown_namespace_message := sprintf(
	"Secret %q: namespace %q is not in the policy's replicated data, so whether it is labelled %s=%s cannot be told; retry once it is, or make the Secret immutable",
	[secrets_immutable_name, secrets_immutable_namespace, secrets_immutable_label, secrets_immutable_label_value],
)

warn contains msg if {
	input.request.kind.kind == "Secret"
	input.request.operation == "UPDATE"
	input.request.kind.group == ""
	secrets_immutable_production
	not secrets_immutable_object_immutable
	not secrets_immutable_data_changed
	msg := sprintf(
		"Secret %q in namespace %q is mutable in a namespace labelled %s=%s; replace it with an immutable one",
		[secrets_immutable_name, secrets_immutable_namespace, secrets_immutable_label, secrets_immutable_label_value],
	)
}

secrets_immutable_namespace := object.get(input.request, "namespace", "")

secrets_immutable_production if {
	data.kubernetes.namespaces[secrets_immutable_namespace].metadata.labels[secrets_immutable_label] == secrets_immutable_label_value
}

secrets_immutable_object_immutable if input.request.object.immutable == true

# The update would store other data than is stored: data itself, stringData
# (which the server writes into data), or the type.
secrets_immutable_data_changed if {
	secrets_immutable_field(secrets_immutable_object, "data", {}) != secrets_immutable_field(secrets_immutable_old_object, "data", {})
}

secrets_immutable_data_changed if {
	count(secrets_immutable_field(secrets_immutable_object, "stringData", {})) > 0
}

secrets_immutable_data_changed if {
	secrets_immutable_field(secrets_immutable_object, "type", "") != secrets_immutable_field(secrets_immutable_old_object, "type", "")
}

secrets_immutable_object := object.get(input.request, "object", null)

secrets_immutable_old_object := object.get(input.request, "oldObject", null)

# obj[field], or default_value when obj is not an object or the field is
# absent or null.
secrets_immutable_field(obj, field, default_value) := v if {
	is_object(obj)
	v := object.get(obj, field, null)
	v != null
} else := default_value

secrets_immutable_name := name if {
	name := object.get(input.request, "name", "")
	name != ""
} else := concat("", [object.get(input.request, ["object", "metadata", "generateName"], ""), "*"])
