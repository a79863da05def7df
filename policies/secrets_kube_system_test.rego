package kubernetes.admission

# Every message of secrets_kube_system.rego names the namespace and groups.
secrets_kube_system_test_marker := `in namespace "kube-system": only members of the groups`

secrets_kube_system_test_canary := "canary-c4n4ry-value"

secrets_kube_system_test_secret := {
	"apiVersion": "v1",
	"kind": "Secret",
	"metadata": {"name": "bootstrap-token-abcdef", "namespace": "kube-system"},
	"type": "bootstrap.kubernetes.io/token",
	"data": {"token-secret": base64.encode(secrets_kube_system_test_canary)},
}

secrets_kube_system_test_request(op, ns, user, groups) := {
	"uid": "6b3d6f34-0000-4000-8000-000000000008",
	"kind": {"group": "", "version": "v1", "kind": "Secret"},
	"resource": {"group": "", "version": "v1", "resource": "secrets"},
	"name": "bootstrap-token-abcdef",
	"namespace": ns,
	"operation": op,
	"userInfo": {"username": user, "uid": "u-1", "groups": groups},
	"object": secrets_kube_system_test_object(op),
	"oldObject": secrets_kube_system_test_old_object(op),
}

secrets_kube_system_test_object(op) := null if op == "DELETE"

secrets_kube_system_test_object(op) := secrets_kube_system_test_secret if op != "DELETE"

secrets_kube_system_test_old_object(op) := null if op == "CREATE"

secrets_kube_system_test_old_object(op) := secrets_kube_system_test_secret if op != "CREATE"

secrets_kube_system_test_denies(request) := {m | some m in all; contains(m, secrets_kube_system_test_marker)} if {
	all := deny with input as {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
}

secrets_kube_system_test_msg(user, verb) := sprintf(
	`user %q may not %s Secret "bootstrap-token-abcdef" in namespace "kube-system": only members of the groups system:serviceaccounts:kube-system, trustplane:cluster-admins may`,
	[user, verb],
)

test_secrets_kube_system_refused[note] if {
	some note, tc in {
		"create by a developer": {
			"request": secrets_kube_system_test_request("CREATE", "kube-system", "dev", ["developers", "system:authenticated"]),
			"msg": secrets_kube_system_test_msg("dev", "create"),
		},
		"update by a developer": {
			"request": secrets_kube_system_test_request("UPDATE", "kube-system", "dev", ["developers", "system:authenticated"]),
			"msg": secrets_kube_system_test_msg("dev", "update"),
		},
		"delete by a developer": {
			"request": secrets_kube_system_test_request("DELETE", "kube-system", "dev", ["developers", "system:authenticated"]),
			"msg": secrets_kube_system_test_msg("dev", "delete"),
		},
		"system:masters is not special": {
			"request": secrets_kube_system_test_request("CREATE", "kube-system", "root", ["system:masters", "system:authenticated"]),
			"msg": secrets_kube_system_test_msg("root", "create"),
		},
		"a ServiceAccount of another namespace": {
			"request": secrets_kube_system_test_request("UPDATE", "kube-system", "system:serviceaccount:team-a:ci", ["system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"]),
			"msg": secrets_kube_system_test_msg("system:serviceaccount:team-a:ci", "update"),
		},
		"a kube-system ServiceAccount's name without its group": {
			"request": secrets_kube_system_test_request("CREATE", "kube-system", "system:serviceaccount:kube-system:ctrl", ["system:authenticated"]),
			"msg": secrets_kube_system_test_msg("system:serviceaccount:kube-system:ctrl", "create"),
		},
		"the controller-manager's own identity": {
			"request": secrets_kube_system_test_request("CREATE", "kube-system", "system:kube-controller-manager", ["system:authenticated"]),
			"msg": secrets_kube_system_test_msg("system:kube-controller-manager", "create"),
		},
		"a node": {
			"request": secrets_kube_system_test_request("UPDATE", "kube-system", "system:node:n1", ["system:nodes", "system:authenticated"]),
			"msg": secrets_kube_system_test_msg("system:node:n1", "update"),
		},
		"a group name that only looks like the admins'": {
			"request": secrets_kube_system_test_request("CREATE", "kube-system", "eve", ["trustplane:cluster-admins ", "Trustplane:Cluster-Admins", "trustplane:cluster-admins-x"]),
			"msg": secrets_kube_system_test_msg("eve", "create"),
		},
		"no groups at all": {
			"request": object.union(secrets_kube_system_test_request("CREATE", "kube-system", "anon", []), {"userInfo": {"groups": null}}),
			"msg": secrets_kube_system_test_msg("anon", "create"),
		},
		"no userInfo": {
			"request": object.remove(secrets_kube_system_test_request("CREATE", "kube-system", "x", ["trustplane:cluster-admins"]), ["userInfo"]),
			"msg": secrets_kube_system_test_msg("", "create"),
		},
		"a dry run": {
			"request": object.union(secrets_kube_system_test_request("CREATE", "kube-system", "dev", []), {"dryRun": true}),
			"msg": secrets_kube_system_test_msg("dev", "create"),
		},
		"known by its resource only": {
			"request": object.remove(secrets_kube_system_test_request("DELETE", "kube-system", "dev", []), ["kind"]),
			"msg": secrets_kube_system_test_msg("dev", "delete"),
		},
	}
	got := secrets_kube_system_test_denies(tc.request)
	got == {tc.msg}
}

test_secrets_kube_system_allowed[note] if {
	some note, request in {
		"create by an admin": secrets_kube_system_test_request("CREATE", "kube-system", "admin", ["trustplane:cluster-admins", "system:authenticated"]),
		"update by an admin": secrets_kube_system_test_request("UPDATE", "kube-system", "admin", ["trustplane:cluster-admins", "system:authenticated"]),
		"delete by an admin": secrets_kube_system_test_request("DELETE", "kube-system", "admin", ["trustplane:cluster-admins", "system:authenticated"]),
		"a controller's ServiceAccount": secrets_kube_system_test_request("UPDATE", "kube-system", "system:serviceaccount:kube-system:token-cleaner", ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]),
		"a developer in their own namespace": secrets_kube_system_test_request("CREATE", "team-a", "dev", ["developers", "system:authenticated"]),
		"a developer in kube-public": secrets_kube_system_test_request("CREATE", "kube-public", "dev", ["developers"]),
		"a ConfigMap in kube-system": object.union(secrets_kube_system_test_request("CREATE", "kube-system", "dev", ["developers"]), {
			"kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
			"resource": {"group": "", "version": "v1", "resource": "configmaps"},
		}),
		"a Secret-named resource of another group": object.union(secrets_kube_system_test_request("CREATE", "kube-system", "dev", ["developers"]), {
			"kind": {"group": "example.com", "version": "v1", "kind": "Secret"},
			"resource": {"group": "example.com", "version": "v1", "resource": "secrets"},
		}),
		"CONNECT is not a write of the Secret": secrets_kube_system_test_request("CONNECT", "kube-system", "dev", ["developers"]),
	}
	count(secrets_kube_system_test_denies(request)) == 0
}

test_secrets_kube_system_no_data_in_messages if {
	all := deny with input as {"request": secrets_kube_system_test_request("CREATE", "kube-system", "dev", [])}
	count(all) > 0
	every m in all {
		not contains(m, secrets_kube_system_test_canary)
		not contains(m, base64.encode(secrets_kube_system_test_canary))
	}
}
