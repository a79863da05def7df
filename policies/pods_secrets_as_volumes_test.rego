package kubernetes.admission

# Every message of pods_secrets_as_volumes.rego names the label and value.
pods_secrets_as_volumes_test_marker := "trustplane.io/secrets-as=volumes"

pods_secrets_as_volumes_test_namespaces := {
	"files": {"metadata": {"name": "files", "labels": {"trustplane.io/secrets-as": "volumes"}}},
	"env-ok": {"metadata": {"name": "env-ok", "labels": {"trustplane.io/secrets-as": "env"}}},
	"plain": {"metadata": {"name": "plain"}},
}

pods_secrets_as_volumes_test_kind := {"group": "", "version": "v1", "kind": "Pod"}

pods_secrets_as_volumes_test_pod(spec) := {
	"apiVersion": "v1",
	"kind": "Pod",
	"metadata": {"name": "web"},
	"spec": object.union({"containers": [{"name": "app", "image": "app"}]}, spec),
}

pods_secrets_as_volumes_test_request(op, ns, kind, obj, old) := {
	"uid": "6b3d6f34-0000-4000-8000-000000000007",
	"kind": kind,
	"resource": {"group": kind.group, "version": kind.version, "resource": concat("", [lower(kind.kind), "s"])},
	"name": "web",
	"namespace": ns,
	"operation": op,
	"userInfo": {"username": "dev", "groups": ["system:authenticated"]},
	"object": obj,
	"oldObject": old,
}

pods_secrets_as_volumes_test_create(ns, spec) := pods_secrets_as_volumes_test_request(
	"CREATE", ns, pods_secrets_as_volumes_test_kind,
	pods_secrets_as_volumes_test_pod(spec), null,
)

pods_secrets_as_volumes_test_denies(request) := {m | some m in all; contains(m, pods_secrets_as_volumes_test_marker)} if {
	all := deny with input as {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
		with data.kubernetes.namespaces as pods_secrets_as_volumes_test_namespaces
}

pods_secrets_as_volumes_test_msg(kind, secret, via) := sprintf(
	"%s \"web\" in namespace \"files\" takes Secret %q as environment variables (%s); the namespace is labelled trustplane.io/secrets-as=volumes: mount the Secret as a volume instead",
	[kind, secret, via],
)

pods_secrets_as_volumes_test_env(name, secret) := {"name": name, "image": "app", "env": [
	{"name": "MODE", "value": "strict"},
	{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": secret, "key": "password"}}},
]}

pods_secrets_as_volumes_test_env_from(name, secret) := {"name": name, "image": "app", "envFrom": [{"secretRef": {"name": secret}}]}

test_pods_secrets_as_volumes_refused[note] if {
	some note, tc in {
		"env of a container": {
			"spec": {"containers": [pods_secrets_as_volumes_test_env("app", "db")]},
			"msg": pods_secrets_as_volumes_test_msg("Pod", "db", `env of container "app"`),
		},
		"envFrom of a container": {
			"spec": {"containers": [pods_secrets_as_volumes_test_env_from("app", "db")]},
			"msg": pods_secrets_as_volumes_test_msg("Pod", "db", `envFrom of container "app"`),
		},
		"env of an init container": {
			"spec": {"initContainers": [pods_secrets_as_volumes_test_env("migrate", "db")]},
			"msg": pods_secrets_as_volumes_test_msg("Pod", "db", `env of init container "migrate"`),
		},
		"envFrom of an ephemeral container": {
			"spec": {"ephemeralContainers": [pods_secrets_as_volumes_test_env_from("debug", "db")]},
			"msg": pods_secrets_as_volumes_test_msg("Pod", "db", `envFrom of ephemeral container "debug"`),
		},
		"an optional reference": {
			"spec": {"containers": [{"name": "app", "image": "app", "env": [
				{"name": "X", "valueFrom": {"secretKeyRef": {"name": "db", "key": "x", "optional": true}}},
			]}]},
			"msg": pods_secrets_as_volumes_test_msg("Pod", "db", `env of container "app"`),
		},
		"one Secret from several containers": {
			"spec": {"containers": [
				pods_secrets_as_volumes_test_env("app", "db"),
				pods_secrets_as_volumes_test_env_from("sidecar", "db"),
			]},
			"msg": pods_secrets_as_volumes_test_msg("Pod", "db", `env of container "app", envFrom of container "sidecar"`),
		},
		"env beside a volume of the same Secret": {
			"spec": {
				"containers": [pods_secrets_as_volumes_test_env("app", "db")],
				"volumes": [{"name": "s", "secret": {"secretName": "db"}}],
			},
			"msg": pods_secrets_as_volumes_test_msg("Pod", "db", `env of container "app"`),
		},
	}
	got := pods_secrets_as_volumes_test_denies(pods_secrets_as_volumes_test_create("files", tc.spec))
	got == {tc.msg}
}

test_pods_secrets_as_volumes_refused_workloads[note] if {
	template := {"spec": {"containers": [pods_secrets_as_volumes_test_env("app", "db")]}}
	some note, tc in {
		"Deployment": {"kind": {"group": "apps", "version": "v1", "kind": "Deployment"}, "object": {"spec": {"template": template}}},
		"StatefulSet": {"kind": {"group": "apps", "version": "v1", "kind": "StatefulSet"}, "object": {"spec": {"template": template}}},
		"Job": {"kind": {"group": "batch", "version": "v1", "kind": "Job"}, "object": {"spec": {"template": template}}},
		"CronJob": {"kind": {"group": "batch", "version": "v1", "kind": "CronJob"}, "object": {"spec": {"jobTemplate": {"spec": {"template": template}}}}},
	}
	got := pods_secrets_as_volumes_test_denies(pods_secrets_as_volumes_test_request("CREATE", "files", tc.kind, tc.object, null))
	got == {pods_secrets_as_volumes_test_msg(tc.kind.kind, "db", `env of container "app"`)}
}

test_pods_secrets_as_volumes_refused_elsewhere[note] if {
	some note, tc in {
		"a volume turned into env on update": {
			"request": pods_secrets_as_volumes_test_request(
				"UPDATE", "files", {"group": "apps", "version": "v1", "kind": "Deployment"},
				{"spec": {"template": {"spec": {"containers": [pods_secrets_as_volumes_test_env("app", "db")]}}}},
				{"spec": {"template": {"spec": {"volumes": [{"name": "s", "secret": {"secretName": "db"}}]}}}},
			),
			"msg": pods_secrets_as_volumes_test_msg("Deployment", "db", `env of container "app"`),
		},
		"an ephemeral container added with env": {
			"request": object.union(
				pods_secrets_as_volumes_test_request(
					"UPDATE", "files", pods_secrets_as_volumes_test_kind,
					pods_secrets_as_volumes_test_pod({"ephemeralContainers": [pods_secrets_as_volumes_test_env("debug", "db")]}),
					pods_secrets_as_volumes_test_pod({}),
				),
				{"subResource": "ephemeralcontainers"},
			),
			"msg": pods_secrets_as_volumes_test_msg("Pod", "db", `env of ephemeral container "debug"`),
		},
		"a namespace not replicated": {
			"request": pods_secrets_as_volumes_test_create("gone", {"containers": [pods_secrets_as_volumes_test_env("app", "db")]}),
			"msg": `Pod "web" takes Secret "db" as environment variables (env of container "app"), and namespace "gone" is not in the policy's replicated data, so whether it is labelled trustplane.io/secrets-as=volumes cannot be told; retry once it is`,
		},
	}
	got := pods_secrets_as_volumes_test_denies(tc.request)
	got == {tc.msg}
}

test_pods_secrets_as_volumes_allowed[note] if {
	env := {"containers": [pods_secrets_as_volumes_test_env("app", "db")]}
	pod := pods_secrets_as_volumes_test_pod(env)
	some note, request in {
		"a secret volume": pods_secrets_as_volumes_test_create("files", {"volumes": [{"name": "s", "secret": {"secretName": "db"}}]}),
		"a projected volume": pods_secrets_as_volumes_test_create("files", {"volumes": [{"name": "s", "projected": {"sources": [{"secret": {"name": "db"}}]}}]}),
		"ConfigMaps in env": pods_secrets_as_volumes_test_create("files", {"containers": [{"name": "app", "image": "app", "envFrom": [{"configMapRef": {"name": "settings"}}]}]}),
		"env in an unlabelled namespace": pods_secrets_as_volumes_test_create("plain", env),
		"env where the label says env": pods_secrets_as_volumes_test_create("env-ok", env),
		"no env, namespace not replicated": pods_secrets_as_volumes_test_create("gone", {}),
		"a status update of a pod that already had it": object.union(
			pods_secrets_as_volumes_test_request("UPDATE", "files", pods_secrets_as_volumes_test_kind, object.union(pod, {"status": {"phase": "Running"}}), pod),
			{"subResource": "status"},
		),
		"deleting it": pods_secrets_as_volumes_test_request("DELETE", "files", pods_secrets_as_volumes_test_kind, null, pod),
		"a Secret, not a pod": pods_secrets_as_volumes_test_request(
			"CREATE", "files", {"group": "", "version": "v1", "kind": "Secret"},
			{"kind": "Secret", "spec": env}, null,
		),
	}
	count(pods_secrets_as_volumes_test_denies(request)) == 0
}
