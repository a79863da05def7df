# METADATA
# title: Only named groups write Secrets in kube-system
# description: >-
#   Risk: taking over the control plane through its own namespace. The
#   Secrets of kube-system are the credentials of the cluster's own
#   components (controllers' and add-ons' tokens, bootstrap tokens, registry
#   and cloud credentials): whoever may create or replace one can give a
#   system component their own credential, and whoever may delete one can
#   take a component down. A RoleBinding in kube-system granted too widely, or
#   an aggregated role that grows, is enough to give that away; this policy
#   is a second lock that RBAC alone cannot open. Creating, updating and
#   deleting Secrets in kube-system is refused to every user who is in none of
#   the groups below: trustplane's administrators (admin.conf is in
#   trustplane:cluster-admins) and the ServiceAccounts of kube-system, which
#   the controllers run as. No group is special otherwise: system:masters
#   passes nothing here, as it passes nothing in trustplane's RBAC. The API
#   server writes no Secret at bootstrap, so enforcement is deny.
# custom:
#   enforcement: deny
package kubernetes.admission

# The groups whose members may write Secrets in kube-system.
secrets_kube_system_groups := {
	"trustplane:cluster-admins",
	"system:serviceaccounts:kube-system",
}

deny contains msg if {
	input.request.namespace == "kube-system"
	input.request.operation in {"CREATE", "UPDATE", "DELETE"}
	secrets_kube_system_secret
	count(secrets_kube_system_user_groups & secrets_kube_system_groups) == 0
	msg := sprintf(
		"user %q may not %s Secret %q in namespace \"kube-system\": only members of the groups %s may",
		[
			object.get(input.request, ["userInfo", "username"], ""),
			lower(input.request.operation),
			object.get(input.request, "name", ""),
			concat(", ", sort(secrets_kube_system_groups)),
		],
	)
}

# A Secret by kind or by resource: either is enough to be checked.
secrets_kube_system_secret if {
	input.request.kind.kind == "Secret"
	input.request.kind.group == ""
}

secrets_kube_system_secret if {
	input.request.resource.resource == "secrets"
	input.request.resource.group == ""
}

secrets_kube_system_user_groups := {g | some g in object.get(input.request, ["userInfo", "groups"], [])}
