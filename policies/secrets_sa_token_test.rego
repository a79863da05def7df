package kubernetes.admission

# Every message of secrets_sa_token.rego names the type.
secrets_sa_token_test_marker := "is of type kubernetes.io/service-account-token"

secrets_sa_token_test_canary := "canary-c4n4ry-value"

secrets_sa_token_test_secret(type, extra) := object.union(
	{
		"apiVersion": "v1",
		"kind": "Secret",
		"metadata": {
			"name": "ci-token",
			"namespace": "team-a",
			"annotations": {"kubernetes.io/service-account.name": "ci"},
		},
		"type": type,
	},
	extra,
)

secrets_sa_token_test_request(op, obj, old) := {
	"uid": "6b3d6f34-0000-4000-8000-000000000003",
	"kind": {"group": "", "version": "v1", "kind": "Secret"},
	"resource": {"group": "", "version": "v1", "resource": "secrets"},
	"name": "ci-token",
	"namespace": "team-a",
	"operation": op,
	"userInfo": {"username": "admin", "groups": ["trustplane:cluster-admins", "system:authenticated"]},
	"object": obj,
	"oldObject": old,
}

secrets_sa_token_test_eval(request) := {"deny": d, "warn": w} if {
	review := {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
	d := {m | some m in deny; contains(m, secrets_sa_token_test_marker)} with input as review
	w := {m | some m in warn; contains(m, secrets_sa_token_test_marker)} with input as review
}

secrets_sa_token_test_sat := "kubernetes.io/service-account-token"

secrets_sa_token_test_token := {"data": {"token": base64.encode(secrets_sa_token_test_canary)}}

test_secrets_sa_token_refused[note] if {
	some note, tc in {
		"create": {
			"request": secrets_sa_token_test_request("CREATE", secrets_sa_token_test_secret(secrets_sa_token_test_sat, {}), null),
			"msg": `Secret "ci-token" in namespace "team-a" is of type kubernetes.io/service-account-token, a token that never expires; use a bound token instead (the TokenRequest API: kubectl create token SERVICEACCOUNT)`,
		},
		"create with the token already in it": {
			"request": secrets_sa_token_test_request("CREATE", secrets_sa_token_test_secret(secrets_sa_token_test_sat, secrets_sa_token_test_token), null),
			"msg": `Secret "ci-token" in namespace "team-a" is of type kubernetes.io/service-account-token, a token that never expires; use a bound token instead (the TokenRequest API: kubectl create token SERVICEACCOUNT)`,
		},
		"create in kube-system by an admin": {
			"request": object.union(
				secrets_sa_token_test_request("CREATE", secrets_sa_token_test_secret(secrets_sa_token_test_sat, {}), null),
				{"namespace": "kube-system"},
			),
			"msg": `Secret "ci-token" in namespace "kube-system" is of type kubernetes.io/service-account-token, a token that never expires; use a bound token instead (the TokenRequest API: kubectl create token SERVICEACCOUNT)`,
		},
		"a token written into an existing one": {
			"request": secrets_sa_token_test_request(
				"UPDATE",
				secrets_sa_token_test_secret(secrets_sa_token_test_sat, secrets_sa_token_test_token),
				secrets_sa_token_test_secret(secrets_sa_token_test_sat, {}),
			),
			"msg": `Secret "ci-token" in namespace "team-a" is of type kubernetes.io/service-account-token: no token may be written into it; use a bound token instead (the TokenRequest API: kubectl create token SERVICEACCOUNT)`,
		},
		"a token written through stringData": {
			"request": secrets_sa_token_test_request(
				"UPDATE",
				secrets_sa_token_test_secret(secrets_sa_token_test_sat, {"stringData": {"token": secrets_sa_token_test_canary}}),
				secrets_sa_token_test_secret(secrets_sa_token_test_sat, {}),
			),
			"msg": `Secret "ci-token" in namespace "team-a" is of type kubernetes.io/service-account-token: no token may be written into it; use a bound token instead (the TokenRequest API: kubectl create token SERVICEACCOUNT)`,
		},
		"an Opaque Secret turned into one": {
			"request": secrets_sa_token_test_request(
				"UPDATE",
				secrets_sa_token_test_secret(secrets_sa_token_test_sat, {}),
				secrets_sa_token_test_secret("Opaque", {}),
			),
			"msg": `Secret "ci-token" in namespace "team-a" is of type kubernetes.io/service-account-token: no token may be written into it; use a bound token instead (the TokenRequest API: kubectl create token SERVICEACCOUNT)`,
		},
	}
	got := secrets_sa_token_test_eval(tc.request)
	got.deny == {tc.msg}
}

test_secrets_sa_token_allowed[note] if {
	some note, tc in {
		"an Opaque Secret": {"request": secrets_sa_token_test_request("CREATE", secrets_sa_token_test_secret("Opaque", {}), null)},
		"a TLS Secret": {"request": secrets_sa_token_test_request("CREATE", secrets_sa_token_test_secret("kubernetes.io/tls", {}), null)},
		"a Secret without a type": {"request": secrets_sa_token_test_request(
			"CREATE",
			object.remove(secrets_sa_token_test_secret("", {}), ["type"]),
			null,
		)},
		"a look-alike type": {"request": secrets_sa_token_test_request("CREATE", secrets_sa_token_test_secret("example.com/service-account-token", {}), null)},
		"deleting one": {"request": secrets_sa_token_test_request("DELETE", null, secrets_sa_token_test_secret(secrets_sa_token_test_sat, secrets_sa_token_test_token))},
		"a label on an existing one (warned)": {
			"request": secrets_sa_token_test_request(
				"UPDATE",
				secrets_sa_token_test_secret(secrets_sa_token_test_sat, object.union(secrets_sa_token_test_token, {"metadata": {"labels": {"a": "b"}}})),
				secrets_sa_token_test_secret(secrets_sa_token_test_sat, secrets_sa_token_test_token),
			),
			"warn": {`Secret "ci-token" in namespace "team-a" is of type kubernetes.io/service-account-token, a token that never expires; delete it and use bound tokens`},
		},
		"a ConfigMap with that type field": {"request": object.union(
			secrets_sa_token_test_request("CREATE", secrets_sa_token_test_secret(secrets_sa_token_test_sat, {"kind": "ConfigMap"}), null),
			{"kind": {"group": "", "version": "v1", "kind": "ConfigMap"}},
		)},
	}
	got := secrets_sa_token_test_eval(tc.request)
	count(got.deny) == 0
	got.warn == object.get(tc, "warn", set())
}

test_secrets_sa_token_no_data_in_messages if {
	review := {"request": secrets_sa_token_test_request(
		"UPDATE",
		secrets_sa_token_test_secret(secrets_sa_token_test_sat, secrets_sa_token_test_token),
		secrets_sa_token_test_secret(secrets_sa_token_test_sat, {}),
	)}
	all := deny | warn with input as review
	count(all) > 0
	every m in all {
		not contains(m, secrets_sa_token_test_canary)
		not contains(m, base64.encode(secrets_sa_token_test_canary))
	}
}
