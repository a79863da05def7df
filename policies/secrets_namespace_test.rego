package kubernetes.admission

# Every message of secrets_namespace.rego names the label; the other
# policies' messages, which the tests see when the library is loaded as one
# package, do not.
secrets_namespace_test_marker := "trustplane.io/secrets=allowed"

# A value no message may ever contain, in plain text or base64.
secrets_namespace_test_canary := "canary-c4n4ry-value"

secrets_namespace_test_namespaces := {
	"team-a": {"metadata": {"name": "team-a", "labels": {"trustplane.io/secrets": "allowed"}}},
	"team-b": {"metadata": {"name": "team-b", "labels": {"trustplane.io/secrets": "true"}}},
	"team-c": {"metadata": {"name": "team-c", "labels": {"trustplane.io/environment": "production"}}},
	"team-d": {"metadata": {"name": "team-d"}},
	"default": {"metadata": {"name": "default", "labels": {"trustplane.io/secrets": "allowed"}}},
}

secrets_namespace_test_secret(ns, name) := {
	"apiVersion": "v1",
	"kind": "Secret",
	"metadata": {"name": name, "namespace": ns},
	"type": "Opaque",
	"data": {"v": base64.encode(secrets_namespace_test_canary)},
}

secrets_namespace_test_request(op, ns, name) := {
	"uid": "6b3d6f34-0000-4000-8000-000000000001",
	"kind": {"group": "", "version": "v1", "kind": "Secret"},
	"resource": {"group": "", "version": "v1", "resource": "secrets"},
	"requestKind": {"group": "", "version": "v1", "kind": "Secret"},
	"requestResource": {"group": "", "version": "v1", "resource": "secrets"},
	"name": name,
	"namespace": ns,
	"operation": op,
	"userInfo": {"username": "admin", "groups": ["trustplane:cluster-admins", "system:authenticated"]},
	"object": secrets_namespace_test_object(op, ns, name),
	"oldObject": secrets_namespace_test_old_object(op, ns, name),
	"dryRun": false,
}

secrets_namespace_test_object(op, _, _) := null if op == "DELETE"

secrets_namespace_test_object(op, ns, name) := secrets_namespace_test_secret(ns, name) if op != "DELETE"

secrets_namespace_test_old_object(op, _, _) := null if op == "CREATE"

secrets_namespace_test_old_object(op, ns, name) := secrets_namespace_test_secret(ns, name) if op != "CREATE"

# This policy's messages for a request.
secrets_namespace_test_denies(request) := {m |
	all := deny with input as {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
		with data.kubernetes.namespaces as secrets_namespace_test_namespaces
	some m in all
	contains(m, secrets_namespace_test_marker)
}

test_secrets_namespace_refused[note] if {
	some note, tc in {
		"default, even labelled": {
			"request": secrets_namespace_test_request("CREATE", "default", "db"),
			"msg": `Secret "db" may not be created in namespace "default"; create it in a namespace labelled trustplane.io/secrets=allowed`,
		},
		"unlabelled namespace": {
			"request": secrets_namespace_test_request("CREATE", "team-d", "db"),
			"msg": `Secret "db" may not be created in namespace "team-d": the namespace is not labelled trustplane.io/secrets=allowed`,
		},
		"label with another value": {
			"request": secrets_namespace_test_request("CREATE", "team-b", "db"),
			"msg": `Secret "db" may not be created in namespace "team-b": the namespace is not labelled trustplane.io/secrets=allowed`,
		},
		"other labels only": {
			"request": secrets_namespace_test_request("CREATE", "team-c", "db"),
			"msg": `Secret "db" may not be created in namespace "team-c": the namespace is not labelled trustplane.io/secrets=allowed`,
		},
		"namespace not replicated": {
			"request": secrets_namespace_test_request("CREATE", "team-x", "db"),
			"msg": `Secret "db" may not be created in namespace "team-x": the namespace is not labelled trustplane.io/secrets=allowed`,
		},
		"kube-system, unlabelled": {
			"request": secrets_namespace_test_request("CREATE", "kube-system", "db"),
			"msg": `Secret "db" may not be created in namespace "kube-system": the namespace is not labelled trustplane.io/secrets=allowed`,
		},
		"no namespace in the request": {
			"request": object.remove(secrets_namespace_test_request("CREATE", "team-a", "db"), ["namespace"]),
			"msg": `Secret "db" may not be created in namespace "": the namespace is not labelled trustplane.io/secrets=allowed`,
		},
		"generateName": {
			"request": object.union(secrets_namespace_test_request("CREATE", "default", ""), {"object": {"metadata": {"name": null, "generateName": "db-"}}}),
			"msg": `Secret "db-*" may not be created in namespace "default"; create it in a namespace labelled trustplane.io/secrets=allowed`,
		},
		"dry run is refused the same": {
			"request": object.union(secrets_namespace_test_request("CREATE", "team-d", "db"), {"dryRun": true}),
			"msg": `Secret "db" may not be created in namespace "team-d": the namespace is not labelled trustplane.io/secrets=allowed`,
		},
	}
	got := secrets_namespace_test_denies(tc.request)
	got == {tc.msg}
}

test_secrets_namespace_allowed[note] if {
	some note, request in {
		"labelled namespace": secrets_namespace_test_request("CREATE", "team-a", "db"),
		"update in an unlabelled namespace": secrets_namespace_test_request("UPDATE", "team-d", "db"),
		"update in default": secrets_namespace_test_request("UPDATE", "default", "db"),
		"delete in default": secrets_namespace_test_request("DELETE", "default", "db"),
		"a ConfigMap in default": object.union(secrets_namespace_test_request("CREATE", "default", "settings"), {
			"kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
			"resource": {"group": "", "version": "v1", "resource": "configmaps"},
			"object": {"kind": "ConfigMap", "data": {"mode": "strict"}},
		}),
		"a Secret kind of another group": object.union(secrets_namespace_test_request("CREATE", "default", "db"), {
			"kind": {"group": "example.com", "version": "v1", "kind": "Secret"},
		}),
	}
	count(secrets_namespace_test_denies(request)) == 0
}

test_secrets_namespace_no_data_in_messages if {
	every ns in ["default", "team-d", "team-x"] {
		all := deny with input as {"request": secrets_namespace_test_request("CREATE", ns, "db")}
			with data.kubernetes.namespaces as secrets_namespace_test_namespaces
		count(all) > 0
		every m in all {
			not contains(m, secrets_namespace_test_canary)
			not contains(m, base64.encode(secrets_namespace_test_canary))
		}
	}
}

# The deny rules write the label out, in their check and in their
# messages, rather than refer to secrets_namespace_label and
# secrets_namespace_label_value: a namespace labelled as those say takes
# Secrets, one labelled otherwise does not, and each message names them,
# so that the copies cannot drift apart.
test_secrets_namespace_checks_the_named_label if {
	request := {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": secrets_namespace_test_request("CREATE", "team-x", "db")}
	labelled := {"team-x": {"metadata": {"name": "team-x", "labels": {secrets_namespace_label: secrets_namespace_label_value}}}}
	other := {"team-x": {"metadata": {"name": "team-x", "labels": {secrets_namespace_label: concat("", [secrets_namespace_label_value, "-not"])}}}}
	labelled_denies := {m | some m in deny; contains(m, secrets_namespace_test_marker)} with input as request with data.kubernetes.namespaces as labelled
	count(labelled_denies) == 0
	other_denies := {m | some m in deny; contains(m, secrets_namespace_test_marker)} with input as request with data.kubernetes.namespaces as other
	count(other_denies) == 1
	named := sprintf("labelled %s=%s", [secrets_namespace_label, secrets_namespace_label_value])
	every m in other_denies {
		endswith(m, named)
	}
	default_denies := {m | some m in deny; contains(m, secrets_namespace_test_marker)} with input as {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": secrets_namespace_test_request("CREATE", "default", "db")}
	count(default_denies) == 1
	every m in default_denies {
		endswith(m, named)
	}
}
