# METADATA
# title: Only named groups set the namespace labels the Secret policies read
# description: >-
#   Risk: lifting a policy from one's own namespace by relabelling it. The
#   Secret policies decide by namespace labels: trustplane.io/secrets
#   (secrets_namespace.rego), trustplane.io/environment
#   (secrets_immutable.rego) and trustplane.io/secrets-as
#   (pods_secrets_as_volumes.rego). A user who may patch a namespace, which
#   RBAC may grant to a namespace's owner, could otherwise remove
#   environment=production or secrets-as=volumes, or add secrets=allowed, and
#   with it the policy. Setting, changing or removing those labels, on create
#   or update of a Namespace, is refused to every user in none of the groups
#   below; every other label, and every other change, passes.
# custom:
#   enforcement: deny
package kubernetes.admission

# The groups whose members may set the labels.
namespaces_policy_labels_groups := {"trustplane:cluster-admins"}

# The labels the library's policies read.
namespaces_policy_labels_labels := {
	"trustplane.io/secrets",
	"trustplane.io/environment",
	"trustplane.io/secrets-as",
}

deny contains msg if {
	input.request.kind.kind == "Namespace"
	input.request.kind.group == ""
	input.request.operation in {"CREATE", "UPDATE"}
	some label in namespaces_policy_labels_labels
	namespaces_policy_labels_value(namespaces_policy_labels_object, label) != namespaces_policy_labels_value(namespaces_policy_labels_old_object, label)
	count(namespaces_policy_labels_user_groups & namespaces_policy_labels_groups) == 0
	msg := sprintf(
		"user %q may not set, change or remove label %q of Namespace %q: the Secret policies read it, and only members of the groups %s may",
		[
			object.get(input.request, ["userInfo", "username"], ""),
			label,
			object.get(input.request, "name", ""),
			concat(", ", sort(namespaces_policy_labels_groups)),
		],
	)
}

namespaces_policy_labels_object := object.get(input.request, "object", null)

namespaces_policy_labels_old_object := object.get(input.request, "oldObject", null)

# The label's value, or null when obj or the label is absent.
namespaces_policy_labels_value(obj, label) := v if {
	is_object(obj)
	v := object.get(obj, ["metadata", "labels", label], null)
} else := null

namespaces_policy_labels_user_groups := {g | some g in object.get(input.request, ["userInfo", "groups"], [])}
