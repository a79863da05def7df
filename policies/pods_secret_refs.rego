# METADATA
# title: Pods use only the Secrets their ServiceAccount lists
# description: >-
#   Risk: reading any Secret of a namespace by creating a pod. RBAC lets a
#   user who may create pods, but not read Secrets, name any Secret of the
#   namespace in a pod and have the node hand it over, as an environment
#   variable, a file or an image pull credential. Here a pod may reference a
#   Secret only if the annotation trustplane.io/allowed-secrets of its
#   ServiceAccount (spec.serviceAccountName, else "default"; read from
#   data.kubernetes.serviceaccounts) lists it, comma-separated; an image pull
#   Secret is also allowed when it is among the ServiceAccount's own
#   imagePullSecrets (which kube's ServiceAccount admission copies into pods).
#   Every way a pod names a Secret counts: env valueFrom.secretKeyRef and
#   envFrom.secretRef of containers, init and ephemeral containers; secret
#   and projected volumes; the secret references of the other volume types
#   (CSI, Azure File, CephFS, Cinder, FlexVolume, iSCSI, RBD, ScaleIO,
#   StorageOS); imagePullSecrets. The pod templates of Deployments,
#   ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs and
#   ReplicationControllers are checked too, so that a workload is refused
#   when it is written rather than its pods later. On update only Secrets
#   the object did not reference before are checked, so that a pod whose
#   ServiceAccount has since changed can still report its status and be
#   deleted. The annotation is only as trustworthy as those who may edit the
#   ServiceAccount: keep that to those who may read the Secrets.
# custom:
#   enforcement: deny
package kubernetes.admission

# The ServiceAccount annotation that lists the Secrets its pods may use.
pods_secret_refs_annotation := "trustplane.io/allowed-secrets"

# Where the pod spec is in each kind that holds one, by "group/kind".
pods_secret_refs_spec_paths := {
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
	pods_secret_refs_spec_paths[pods_secret_refs_kind]
	some secret in pods_secret_refs_new_names
	refs := {ref | some ref in pods_secret_refs_refs(pods_secret_refs_spec); ref.name == secret}
	some ref in refs
	not pods_secret_refs_allowed(ref)
	msg := sprintf(
		"%s %q in namespace %q references Secret %q (%s), which its ServiceAccount %q does not list in annotation %s%s",
		[
			input.request.kind.kind, pods_secret_refs_name, pods_secret_refs_namespace, secret,
			concat(", ", sort({r.via | some r in refs})), pods_secret_refs_service_account, pods_secret_refs_annotation,
			pods_secret_refs_missing_note,
		],
	)
}

pods_secret_refs_kind := sprintf("%s/%s", [object.get(input.request.kind, "group", ""), input.request.kind.kind])

pods_secret_refs_namespace := object.get(input.request, "namespace", "")

pods_secret_refs_spec := pods_secret_refs_spec_of(object.get(input.request, "object", null))

pods_secret_refs_old_spec := pods_secret_refs_spec_of(object.get(input.request, "oldObject", null))

# The pod spec of obj, a kind the policy knows; {} when there is none.
pods_secret_refs_spec_of(obj) := spec if {
	is_object(obj)
	spec := object.get(obj, pods_secret_refs_spec_paths[pods_secret_refs_kind], {})
	is_object(spec)
} else := {}

# The names of the Secrets the object references that it did not before
# (all of them, on create).
pods_secret_refs_new_names := {ref.name | some ref in pods_secret_refs_refs(pods_secret_refs_spec)} - {ref.name | some ref in pods_secret_refs_refs(pods_secret_refs_old_spec)}

pods_secret_refs_service_account := sa if {
	sa := object.get(pods_secret_refs_spec, "serviceAccountName", "")
	sa != ""
} else := sa if {
	sa := object.get(pods_secret_refs_spec, "serviceAccount", "")
	sa != ""
} else := "default"

# The Secrets the ServiceAccount's annotation lists; none when the
# ServiceAccount or its annotation is missing.
pods_secret_refs_listed := {name |
	sa := data.kubernetes.serviceaccounts[pods_secret_refs_namespace][pods_secret_refs_service_account]
	some part in split(sa.metadata.annotations[pods_secret_refs_annotation], ",")
	name := trim_space(part)
	name != ""
}

pods_secret_refs_sa_pull_secrets := {s.name |
	sa := data.kubernetes.serviceaccounts[pods_secret_refs_namespace][pods_secret_refs_service_account]
	some s in sa.imagePullSecrets
}

pods_secret_refs_missing_note := "" if {
	data.kubernetes.serviceaccounts[pods_secret_refs_namespace][pods_secret_refs_service_account]
} else := " (the ServiceAccount is not in the policy's replicated data)"

pods_secret_refs_allowed(ref) if ref.name in pods_secret_refs_listed

pods_secret_refs_allowed(ref) if {
	ref.via == "imagePullSecrets"
	ref.name in pods_secret_refs_sa_pull_secrets
}

# Every reference to a Secret in a pod spec, as {"name", "via"}.
pods_secret_refs_refs(spec) := (((containers | volumes) | projected) | others) | pulls if {
	containers := {{"name": n, "via": v} |
		some field in ["containers", "initContainers", "ephemeralContainers"]
		some c in object.get(spec, field, [])
		some [n, v] in pods_secret_refs_container_refs(c)
	}
	volumes := {{"name": v.secret.secretName, "via": "secret volume"} |
		some v in object.get(spec, "volumes", [])
	}
	projected := {{"name": s.secret.name, "via": "projected volume"} |
		some v in object.get(spec, "volumes", [])
		some s in v.projected.sources
	}
	others := {{"name": n, "via": sprintf("%s volume", [type])} |
		some v in object.get(spec, "volumes", [])
		some type, path in pods_secret_refs_volume_paths
		n := object.get(v, array.concat([type], path), null)
		is_string(n)
	}
	pulls := {{"name": s.name, "via": "imagePullSecrets"} |
		some s in object.get(spec, "imagePullSecrets", [])
	}
}

pods_secret_refs_container_refs(c) := {[e.valueFrom.secretKeyRef.name, "env"] | some e in c.env} | {[e.secretRef.name, "envFrom"] | some e in c.envFrom}

# The Secret reference of each other volume type, from the volume's field.
pods_secret_refs_volume_paths := {
	"azureFile": ["secretName"],
	"cephfs": ["secretRef", "name"],
	"cinder": ["secretRef", "name"],
	"csi": ["nodePublishSecretRef", "name"],
	"flexVolume": ["secretRef", "name"],
	"iscsi": ["secretRef", "name"],
	"rbd": ["secretRef", "name"],
	"scaleIO": ["secretRef", "name"],
	"storageos": ["secretRef", "name"],
}

pods_secret_refs_name := name if {
	name := object.get(input.request, "name", "")
	name != ""
} else := concat("", [object.get(input.request, ["object", "metadata", "generateName"], ""), "*"])
