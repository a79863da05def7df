# METADATA
# title: No ServiceAccount token Secrets (bound tokens only)
# description: >-
#   Risk: a ServiceAccount credential that never expires and is bound to
#   nothing. A Secret of type kubernetes.io/service-account-token holds a token
#   valid until the Secret is deleted, readable by everyone who may read Secrets
#   in its namespace, and usable from anywhere, long after the pod it was meant
#   for is gone. trustplane issues bound tokens instead (the TokenRequest API,
#   `kubectl create token`): short-lived, bound to a pod, Secret or node when
#   asked, and looked up on every request. Such
#   a Secret may not be created, nor may an existing one (from before this
#   policy) have a token written into it; an update of its metadata alone
#   passes with a warning, and deleting it passes.
# custom:
#   enforcement: deny
package kubernetes.admission

secrets_sa_token_type := "kubernetes.io/service-account-token"

# Each rule names the type as a literal, not by secrets_sa_token_type: the
# rule index then skips the policy for every other Secret.

deny contains msg if {
	input.request.kind.kind == "Secret"
	input.request.operation == "CREATE"
	input.request.object.type == "kubernetes.io/service-account-token"
	input.request.kind.group == ""
	msg := sprintf(
		"Secret %q in namespace %q is of type %s, a token that never expires; use a bound token instead (the TokenRequest API: kubectl create token SERVICEACCOUNT)",
		[secrets_sa_token_name, secrets_sa_token_namespace, secrets_sa_token_type],
	)
}

deny contains msg if {
	input.request.kind.kind == "Secret"
	input.request.operation == "UPDATE"
	input.request.object.type == "kubernetes.io/service-account-token"
	input.request.kind.group == ""
	secrets_sa_token_data_changed
	msg := sprintf(
		"Secret %q in namespace %q is of type %s: no token may be written into it; use a bound token instead (the TokenRequest API: kubectl create token SERVICEACCOUNT)",
		[secrets_sa_token_name, secrets_sa_token_namespace, secrets_sa_token_type],
	)
}

warn contains msg if {
	input.request.kind.kind == "Secret"
	input.request.operation == "UPDATE"
	input.request.object.type == "kubernetes.io/service-account-token"
	input.request.kind.group == ""
	not secrets_sa_token_data_changed
	msg := sprintf(
		"Secret %q in namespace %q is of type %s, a token that never expires; delete it and use bound tokens",
		[secrets_sa_token_name, secrets_sa_token_namespace, secrets_sa_token_type],
	)
}

secrets_sa_token_namespace := object.get(input.request, "namespace", "")

secrets_sa_token_object := object.get(input.request, "object", null)

secrets_sa_token_old_object := object.get(input.request, "oldObject", null)

# The update would store other data, or another type, than is stored.
secrets_sa_token_data_changed if {
	secrets_sa_token_field(secrets_sa_token_object, "data", {}) != secrets_sa_token_field(secrets_sa_token_old_object, "data", {})
}

secrets_sa_token_data_changed if {
	count(secrets_sa_token_field(secrets_sa_token_object, "stringData", {})) > 0
}

secrets_sa_token_data_changed if {
	secrets_sa_token_field(secrets_sa_token_object, "type", "") != secrets_sa_token_field(secrets_sa_token_old_object, "type", "")
}

# obj[field], or default_value when obj is not an object or the field is
# absent or null.
secrets_sa_token_field(obj, field, default_value) := v if {
	is_object(obj)
	v := object.get(obj, field, null)
	v != null
} else := default_value

secrets_sa_token_name := name if {
	name := object.get(input.request, "name", "")
	name != ""
} else := concat("", [object.get(input.request, ["object", "metadata", "generateName"], ""), "*"])
