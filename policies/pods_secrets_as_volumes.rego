# METADATA
# title: Secrets as files, not environment variables, where a namespace asks
# description: >-
#   Risk: credentials leaking out of a process's environment. Environment
#   variables are inherited by every child process, readable in
#   /proc/PID/environ by anything sharing the process's user or PID
#   namespace, printed by crash reports, debug endpoints and `env` in a shell,
#   and never change while the container runs, so a rotated Secret stays
#   stale in them; a Secret mounted as a volume is a file with its own
#   permissions that the kubelet updates in place. In a namespace labelled
#   trustplane.io/secrets-as=volumes (read from data.kubernetes.namespaces), a
#   pod, or the pod template of a Deployment, ReplicaSet, StatefulSet,
#   DaemonSet, Job, CronJob or ReplicationController, may not take a Secret
#   through env valueFrom.secretKeyRef or envFrom.secretRef in any container,
#   init container or ephemeral container. On update only what the object did
#   not already take that way is refused, so that existing pods can still
#   report status and be deleted. When the namespace is not in the replicated
#   data the policy cannot tell, and refuses Secrets in the environment.
# custom:
#   enforcement: deny
package kubernetes.admission

pods_secrets_as_volumes_label := "trustplane.io/secrets-as"

pods_secrets_as_volumes_label_value := "volumes"

# Where the pod spec is in each kind that holds one, by "group/kind".
pods_secrets_as_volumes_spec_paths := {
	"/Pod": ["spec"],
	"/ReplicationController": ["spec", "template", "spec"],
	"apps/Deployment": ["spec", "template", "spec"],
	"apps/ReplicaSet": ["spec", "template", "spec"],
	"apps/StatefulSet": ["spec", "template", "spec"],
	"apps/DaemonSet": ["spec", "template", "spec"],
	"batch/Job": ["spec", "template", "spec"],
	"batch/CronJob": ["spec", "jobTemplate", "spec", "template", "spec"],
}

deny contains msg if {
	input.request.kind.kind in {"Pod", "ReplicationController", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"}
	input.request.operation in {"CREATE", "UPDATE"}
	pods_secrets_as_volumes_spec_paths[pods_secrets_as_volumes_kind]
	pods_secrets_as_volumes_volumes_only
	some secret in pods_secrets_as_volumes_new_names
	msg := sprintf(
		"%s %q in namespace %q takes Secret %q as environment variables (%s); the namespace is labelled %s=%s: mount the Secret as a volume instead",
		[
			input.request.kind.kind, pods_secrets_as_volumes_name, pods_secrets_as_volumes_namespace, secret,
			pods_secrets_as_volumes_via(secret), pods_secrets_as_volumes_label, pods_secrets_as_volumes_label_value,
		],
	)
}

# Fail closed: without the namespace, its label cannot be read.
deny contains msg if {
	input.request.kind.kind in {"Pod", "ReplicationController", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"}
	input.request.operation in {"CREATE", "UPDATE"}
	pods_secrets_as_volumes_spec_paths[pods_secrets_as_volumes_kind]
	not data.kubernetes.namespaces[pods_secrets_as_volumes_namespace]
	some secret in pods_secrets_as_volumes_new_names
	msg := sprintf(
		"%s %q takes Secret %q as environment variables (%s), and namespace %q is not in the policy's replicated data, so whether it is labelled %s=%s cannot be told; retry once it is",
		[
			input.request.kind.kind, pods_secrets_as_volumes_name, secret, pods_secrets_as_volumes_via(secret),
			pods_secrets_as_volumes_namespace, pods_secrets_as_volumes_label, pods_secrets_as_volumes_label_value,
		],
	)
}

pods_secrets_as_volumes_volumes_only if {
	data.kubernetes.namespaces[pods_secrets_as_volumes_namespace].metadata.labels[pods_secrets_as_volumes_label] == pods_secrets_as_volumes_label_value
}

pods_secrets_as_volumes_kind := sprintf("%s/%s", [object.get(input.request.kind, "group", ""), input.request.kind.kind])

pods_secrets_as_volumes_namespace := object.get(input.request, "namespace", "")

pods_secrets_as_volumes_refs := pods_secrets_as_volumes_env_refs(pods_secrets_as_volumes_spec_of(object.get(input.request, "object", null)))

pods_secrets_as_volumes_old_refs := pods_secrets_as_volumes_env_refs(pods_secrets_as_volumes_spec_of(object.get(input.request, "oldObject", null)))

# The Secrets the object takes as environment variables that it did not
# before (all of them, on create).
pods_secrets_as_volumes_new_names := {r.name | some r in pods_secrets_as_volumes_refs} - {r.name | some r in pods_secrets_as_volumes_old_refs}

pods_secrets_as_volumes_via(secret) := concat(", ", sort({r.via | some r in pods_secrets_as_volumes_refs; r.name == secret}))

# The pod spec of obj, a kind the policy knows; {} when there is none.
pods_secrets_as_volumes_spec_of(obj) := spec if {
	is_object(obj)
	spec := object.get(obj, pods_secrets_as_volumes_spec_paths[pods_secrets_as_volumes_kind], {})
	is_object(spec)
} else := {}

# Each Secret a pod spec takes as environment variables, as {"name", "via"}.
pods_secrets_as_volumes_env_refs(spec) := env | env_from if {
	env := {{"name": e.valueFrom.secretKeyRef.name, "via": sprintf("env of %s %q", [what, object.get(c, "name", "")])} |
		some field, what in pods_secrets_as_volumes_container_fields
		some c in object.get(spec, field, [])
		some e in c.env
	}
	env_from := {{"name": e.secretRef.name, "via": sprintf("envFrom of %s %q", [what, object.get(c, "name", "")])} |
		some field, what in pods_secrets_as_volumes_container_fields
		some c in object.get(spec, field, [])
		some e in c.envFrom
	}
}

pods_secrets_as_volumes_container_fields := {
	"containers": "container",
	"initContainers": "init container",
	"ephemeralContainers": "ephemeral container",
}

pods_secrets_as_volumes_name := name if {
	name := object.get(input.request, "name", "")
	name != ""
} else := concat("", [object.get(input.request, ["object", "metadata", "generateName"], ""), "*"])
