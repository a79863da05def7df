package kubernetes.admission

# Every refusal of pods_secret_refs.rego names the annotation.
pods_secret_refs_test_marker := "does not list in annotation trustplane.io/allowed-secrets"

pods_secret_refs_test_service_accounts := {
	"team-a": {
		"default": {"metadata": {"name": "default", "namespace": "team-a"}},
		"app": {
			"metadata": {
				"name": "app",
				"namespace": "team-a",
				"annotations": {"trustplane.io/allowed-secrets": "db, tls ,registry,,"},
			},
			"imagePullSecrets": [{"name": "pull"}],
		},
		"star": {"metadata": {
			"name": "star",
			"namespace": "team-a",
			"annotations": {"trustplane.io/allowed-secrets": "*"},
		}},
	},
	"team-b": {"default": {"metadata": {"name": "default", "namespace": "team-b"}}},
}

pods_secret_refs_test_pod(spec) := {
	"apiVersion": "v1",
	"kind": "Pod",
	"metadata": {"name": "web", "namespace": "team-a"},
	"spec": object.union({"containers": [{"name": "app", "image": "registry.example.com/app:1"}]}, spec),
}

pods_secret_refs_test_request(op, kind, obj, old) := {
	"uid": "6b3d6f34-0000-4000-8000-000000000006",
	"kind": kind,
	"resource": {"group": kind.group, "version": kind.version, "resource": concat("", [lower(kind.kind), "s"])},
	"name": "web",
	"namespace": "team-a",
	"operation": op,
	"userInfo": {"username": "dev", "groups": ["team-a:developers", "system:authenticated"]},
	"object": obj,
	"oldObject": old,
}

pods_secret_refs_test_pod_kind := {"group": "", "version": "v1", "kind": "Pod"}

pods_secret_refs_test_create(spec) := pods_secret_refs_test_request("CREATE", pods_secret_refs_test_pod_kind, pods_secret_refs_test_pod(spec), null)

pods_secret_refs_test_denies(request) := {m | some m in all; contains(m, pods_secret_refs_test_marker)} if {
	all := deny with input as {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
		with data.kubernetes.serviceaccounts as pods_secret_refs_test_service_accounts
}

pods_secret_refs_test_msg(kind, secret, via, sa) := sprintf(
	"%s \"web\" in namespace \"team-a\" references Secret %q (%s), which its ServiceAccount %q does not list in annotation trustplane.io/allowed-secrets",
	[kind, secret, via, sa],
)

pods_secret_refs_test_env(secret) := [{"name": "app", "image": "app", "env": [
	{"name": "MODE", "value": "strict"},
	{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": secret, "key": "password"}}},
]}]

pods_secret_refs_test_env_from(secret) := [{"name": "app", "image": "app", "envFrom": [
	{"configMapRef": {"name": "settings"}},
	{"secretRef": {"name": secret}},
]}]

test_pods_secret_refs_refused[note] if {
	some note, tc in {
		"env of a container": {
			"spec": {"serviceAccountName": "app", "containers": pods_secret_refs_test_env("other")},
			"msg": pods_secret_refs_test_msg("Pod", "other", "env", "app"),
		},
		"an optional env reference": {
			"spec": {"serviceAccountName": "app", "containers": [{"name": "app", "image": "app", "env": [
				{"name": "X", "valueFrom": {"secretKeyRef": {"name": "other", "key": "x", "optional": true}}},
			]}]},
			"msg": pods_secret_refs_test_msg("Pod", "other", "env", "app"),
		},
		"envFrom of an init container": {
			"spec": {"serviceAccountName": "app", "initContainers": pods_secret_refs_test_env_from("other")},
			"msg": pods_secret_refs_test_msg("Pod", "other", "envFrom", "app"),
		},
		"env of an ephemeral container": {
			"spec": {"serviceAccountName": "app", "ephemeralContainers": pods_secret_refs_test_env("other")},
			"msg": pods_secret_refs_test_msg("Pod", "other", "env", "app"),
		},
		"a secret volume": {
			"spec": {"serviceAccountName": "app", "volumes": [{"name": "s", "secret": {"secretName": "other"}}]},
			"msg": pods_secret_refs_test_msg("Pod", "other", "secret volume", "app"),
		},
		"a projected volume": {
			"spec": {"serviceAccountName": "app", "volumes": [{"name": "s", "projected": {"sources": [
				{"configMap": {"name": "settings"}},
				{"secret": {"name": "other"}},
			]}}]},
			"msg": pods_secret_refs_test_msg("Pod", "other", "projected volume", "app"),
		},
		"imagePullSecrets": {
			"spec": {"serviceAccountName": "app", "imagePullSecrets": [{"name": "other"}]},
			"msg": pods_secret_refs_test_msg("Pod", "other", "imagePullSecrets", "app"),
		},
		"an image pull Secret of the ServiceAccount used as a volume": {
			"spec": {"serviceAccountName": "app", "volumes": [{"name": "s", "secret": {"secretName": "pull"}}]},
			"msg": pods_secret_refs_test_msg("Pod", "pull", "secret volume", "app"),
		},
		"one Secret several ways": {
			"spec": {
				"serviceAccountName": "app",
				"containers": pods_secret_refs_test_env("other"),
				"volumes": [{"name": "s", "secret": {"secretName": "other"}}],
				"imagePullSecrets": [{"name": "other"}],
			},
			"msg": pods_secret_refs_test_msg("Pod", "other", "env, imagePullSecrets, secret volume", "app"),
		},
		"the default ServiceAccount, unannotated": {
			"spec": {"volumes": [{"name": "s", "secret": {"secretName": "db"}}]},
			"msg": pods_secret_refs_test_msg("Pod", "db", "secret volume", "default"),
		},
		"an empty serviceAccountName is default": {
			"spec": {"serviceAccountName": "", "volumes": [{"name": "s", "secret": {"secretName": "db"}}]},
			"msg": pods_secret_refs_test_msg("Pod", "db", "secret volume", "default"),
		},
		"a ServiceAccount that is not there": {
			"spec": {"serviceAccountName": "ghost", "volumes": [{"name": "s", "secret": {"secretName": "db"}}]},
			"msg": concat("", [
				pods_secret_refs_test_msg("Pod", "db", "secret volume", "ghost"),
				" (the ServiceAccount is not in the policy's replicated data)",
			]),
		},
		"a star is not a wildcard": {
			"spec": {"serviceAccountName": "star", "volumes": [{"name": "s", "secret": {"secretName": "db"}}]},
			"msg": pods_secret_refs_test_msg("Pod", "db", "secret volume", "star"),
		},
		"a name that a listed one starts with": {
			"spec": {"serviceAccountName": "app", "volumes": [{"name": "s", "secret": {"secretName": "d"}}]},
			"msg": pods_secret_refs_test_msg("Pod", "d", "secret volume", "app"),
		},
		"a name that starts with a listed one": {
			"spec": {"serviceAccountName": "app", "volumes": [{"name": "s", "secret": {"secretName": "db-admin"}}]},
			"msg": pods_secret_refs_test_msg("Pod", "db-admin", "secret volume", "app"),
		},
		"the whole annotation as one name": {
			"spec": {"serviceAccountName": "app", "volumes": [{"name": "s", "secret": {"secretName": "db, tls ,registry,,"}}]},
			"msg": pods_secret_refs_test_msg("Pod", "db, tls ,registry,,", "secret volume", "app"),
		},
	}
	got := pods_secret_refs_test_denies(pods_secret_refs_test_create(tc.spec))
	got == {tc.msg}
}

# The Secret references of the other volume types, each refused.
test_pods_secret_refs_refused_volume_types[type] if {
	some type, source in {
		"azureFile": {"secretName": "other", "shareName": "s"},
		"cephfs": {"monitors": ["m"], "secretRef": {"name": "other"}},
		"cinder": {"volumeID": "v", "secretRef": {"name": "other"}},
		"csi": {"driver": "d", "nodePublishSecretRef": {"name": "other"}},
		"flexVolume": {"driver": "d", "secretRef": {"name": "other"}},
		"iscsi": {"targetPortal": "t", "iqn": "i", "lun": 0, "secretRef": {"name": "other"}},
		"rbd": {"monitors": ["m"], "image": "i", "secretRef": {"name": "other"}},
		"scaleIO": {"gateway": "g", "system": "s", "secretRef": {"name": "other"}},
		"storageos": {"volumeName": "v", "secretRef": {"name": "other"}},
	}
	spec := {"serviceAccountName": "app", "volumes": [{"name": "v", type: source}]}
	got := pods_secret_refs_test_denies(pods_secret_refs_test_create(spec))
	got == {pods_secret_refs_test_msg("Pod", "other", sprintf("%s volume", [type]), "app")}
}

test_pods_secret_refs_refused_workloads[note] if {
	template := {"spec": {"serviceAccountName": "app", "volumes": [{"name": "s", "secret": {"secretName": "other"}}], "containers": [{"name": "a", "image": "a"}]}}
	some note, tc in {
		"Deployment": {"kind": {"group": "apps", "version": "v1", "kind": "Deployment"}, "object": {"spec": {"template": template}}},
		"ReplicaSet": {"kind": {"group": "apps", "version": "v1", "kind": "ReplicaSet"}, "object": {"spec": {"template": template}}},
		"StatefulSet": {"kind": {"group": "apps", "version": "v1", "kind": "StatefulSet"}, "object": {"spec": {"template": template}}},
		"DaemonSet": {"kind": {"group": "apps", "version": "v1", "kind": "DaemonSet"}, "object": {"spec": {"template": template}}},
		"Job": {"kind": {"group": "batch", "version": "v1", "kind": "Job"}, "object": {"spec": {"template": template}}},
		"CronJob": {"kind": {"group": "batch", "version": "v1", "kind": "CronJob"}, "object": {"spec": {"jobTemplate": {"spec": {"template": template}}}}},
		"ReplicationController": {"kind": {"group": "", "version": "v1", "kind": "ReplicationController"}, "object": {"spec": {"template": template}}},
	}
	request := pods_secret_refs_test_request("CREATE", tc.kind, object.union({"metadata": {"name": "web"}}, tc.object), null)
	got := pods_secret_refs_test_denies(request)
	got == {pods_secret_refs_test_msg(tc.kind.kind, "other", "secret volume", "app")}
}

test_pods_secret_refs_refused_updates[note] if {
	some note, tc in {
		"an ephemeral container added with a new Secret": {
			"old": pods_secret_refs_test_pod({"serviceAccountName": "app"}),
			"new": pods_secret_refs_test_pod({"serviceAccountName": "app", "ephemeralContainers": pods_secret_refs_test_env_from("other")}),
			"extra": {"subResource": "ephemeralcontainers"},
			"msg": pods_secret_refs_test_msg("Pod", "other", "envFrom", "app"),
		},
		"a Deployment's template changed to a new Secret": {
			"old": {"spec": {"template": {"spec": {"serviceAccountName": "app", "volumes": [{"name": "s", "secret": {"secretName": "db"}}]}}}},
			"new": {"spec": {"template": {"spec": {"serviceAccountName": "app", "volumes": [{"name": "s", "secret": {"secretName": "other"}}]}}}},
			"extra": {"kind": {"group": "apps", "version": "v1", "kind": "Deployment"}},
			"msg": pods_secret_refs_test_msg("Deployment", "other", "secret volume", "app"),
		},
	}
	request := object.union(pods_secret_refs_test_request("UPDATE", pods_secret_refs_test_pod_kind, tc.new, tc.old), tc.extra)
	got := pods_secret_refs_test_denies(request)
	got == {tc.msg}
}

test_pods_secret_refs_allowed[note] if {
	some note, spec in {
		"listed, in env": {"serviceAccountName": "app", "containers": pods_secret_refs_test_env("db")},
		"listed, in envFrom": {"serviceAccountName": "app", "containers": pods_secret_refs_test_env_from("tls")},
		"listed, as a volume": {"serviceAccountName": "app", "volumes": [{"name": "s", "secret": {"secretName": "tls"}}]},
		"listed, projected": {"serviceAccountName": "app", "volumes": [{"name": "s", "projected": {"sources": [{"secret": {"name": "db"}}]}}]},
		"listed, as an image pull Secret": {"serviceAccountName": "app", "imagePullSecrets": [{"name": "registry"}]},
		"the ServiceAccount's own image pull Secret": {"serviceAccountName": "app", "imagePullSecrets": [{"name": "pull"}]},
		"the deprecated serviceAccount field": {"serviceAccount": "app", "volumes": [{"name": "s", "secret": {"secretName": "db"}}]},
		"no Secret, default ServiceAccount": {},
		"no Secret, missing ServiceAccount": {"serviceAccountName": "ghost"},
		"ConfigMaps only": {
			"containers": [{"name": "a", "image": "a", "env": [{"name": "M", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}}]}],
			"volumes": [{"name": "c", "configMap": {"name": "settings"}}],
		},
		"the token volume kube's ServiceAccount admission adds": {"volumes": [{"name": "kube-api-access-x", "projected": {"sources": [
			{"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
			{"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
			{"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
		]}}]},
		"a CSI volume without a Secret": {"volumes": [{"name": "v", "csi": {"driver": "d"}}]},
	}
	count(pods_secret_refs_test_denies(pods_secret_refs_test_create(spec))) == 0
}

test_pods_secret_refs_allowed_requests[note] if {
	unlisted := pods_secret_refs_test_pod({"serviceAccountName": "app", "volumes": [{"name": "s", "secret": {"secretName": "other"}}]})
	some note, request in {
		"a status update of a pod that already used it": object.union(
			pods_secret_refs_test_request("UPDATE", pods_secret_refs_test_pod_kind, object.union(unlisted, {"status": {"phase": "Running"}}), unlisted),
			{"subResource": "status"},
		),
		"a label on a pod that already used it": pods_secret_refs_test_request(
			"UPDATE", pods_secret_refs_test_pod_kind,
			object.union(unlisted, {"metadata": {"labels": {"a": "b"}}}), unlisted,
		),
		"deleting a pod that used it": pods_secret_refs_test_request("DELETE", pods_secret_refs_test_pod_kind, null, unlisted),
		"a binding of a pod": pods_secret_refs_test_request(
			"CREATE", {"group": "", "version": "v1", "kind": "Binding"},
			{"kind": "Binding", "metadata": {"name": "web"}, "target": {"kind": "Node", "name": "n1"}}, null,
		),
		"a Deployment's scale": pods_secret_refs_test_request(
			"UPDATE", {"group": "autoscaling", "version": "v1", "kind": "Scale"},
			{"kind": "Scale", "spec": {"replicas": 3}}, {"kind": "Scale", "spec": {"replicas": 1}},
		),
		"a Deployment of another group": pods_secret_refs_test_request(
			"CREATE", {"group": "example.com", "version": "v1", "kind": "Deployment"},
			{"spec": {"template": {"spec": unlisted.spec}}}, null,
		),
		"a pod in a namespace with no ServiceAccounts, using none": object.union(
			pods_secret_refs_test_create({}),
			{"namespace": "team-c"},
		),
	}
	count(pods_secret_refs_test_denies(request)) == 0
}
