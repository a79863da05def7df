package kubernetes.admission

# Every message of secrets_immutable.rego names the label and its value.
secrets_immutable_test_marker := "trustplane.io/environment=production"

secrets_immutable_test_canary := "canary-c4n4ry-value"

secrets_immutable_test_namespaces := {
	"prod": {"metadata": {"name": "prod", "labels": {"trustplane.io/environment": "production"}}},
	"staging": {"metadata": {"name": "staging", "labels": {"trustplane.io/environment": "staging"}}},
	"plain": {"metadata": {"name": "plain"}},
}

secrets_immutable_test_secret(ns, extra) := object.union(
	{
		"apiVersion": "v1",
		"kind": "Secret",
		"metadata": {"name": "db", "namespace": ns},
		"type": "Opaque",
		"data": {"v": base64.encode(secrets_immutable_test_canary)},
	},
	extra,
)

secrets_immutable_test_request(op, ns, obj, old) := {
	"uid": "6b3d6f34-0000-4000-8000-000000000002",
	"kind": {"group": "", "version": "v1", "kind": "Secret"},
	"resource": {"group": "", "version": "v1", "resource": "secrets"},
	"name": "db",
	"namespace": ns,
	"operation": op,
	"userInfo": {"username": "admin", "groups": ["trustplane:cluster-admins", "system:authenticated"]},
	"object": obj,
	"oldObject": old,
}

secrets_immutable_test_create(ns, extra) := secrets_immutable_test_request("CREATE", ns, secrets_immutable_test_secret(ns, extra), null)

secrets_immutable_test_update(ns, old_extra, new_extra) := secrets_immutable_test_request(
	"UPDATE", ns,
	secrets_immutable_test_secret(ns, new_extra),
	secrets_immutable_test_secret(ns, old_extra),
)

secrets_immutable_test_eval(request) := {"deny": d, "warn": w} if {
	review := {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
	d := {m | some m in deny; contains(m, secrets_immutable_test_marker)} with input as review
		with data.kubernetes.namespaces as secrets_immutable_test_namespaces
	w := {m | some m in warn; contains(m, secrets_immutable_test_marker)} with input as review
		with data.kubernetes.namespaces as secrets_immutable_test_namespaces
}

secrets_immutable_test_create_msg := `Secret "db" in namespace "prod" must be created with immutable: true: the namespace is labelled trustplane.io/environment=production`

secrets_immutable_test_update_msg := `Secret "db" in namespace "prod" may change its data only in the update that makes it immutable (immutable: true): the namespace is labelled trustplane.io/environment=production; to change a credential, create a new Secret`

secrets_immutable_test_unknown_msg := `Secret "db": namespace "gone" is not in the policy's replicated data, so whether it is labelled trustplane.io/environment=production cannot be told; retry once it is, or make the Secret immutable`

test_secrets_immutable_refused[note] if {
	some note, tc in {
		"create without immutable": {
			"request": secrets_immutable_test_create("prod", {}),
			"msg": secrets_immutable_test_create_msg,
		},
		"create with immutable: false": {
			"request": secrets_immutable_test_create("prod", {"immutable": false}),
			"msg": secrets_immutable_test_create_msg,
		},
		"create with immutable as a string": {
			"request": secrets_immutable_test_create("prod", {"immutable": "true"}),
			"msg": secrets_immutable_test_create_msg,
		},
		"update of data, still mutable": {
			"request": secrets_immutable_test_update("prod", {}, {"data": {"v": base64.encode("other")}}),
			"msg": secrets_immutable_test_update_msg,
		},
		"update that removes the data": {
			"request": secrets_immutable_test_update("prod", {}, {"data": null}),
			"msg": secrets_immutable_test_update_msg,
		},
		"update through stringData": {
			"request": secrets_immutable_test_update("prod", {}, {"stringData": {"v": "other"}}),
			"msg": secrets_immutable_test_update_msg,
		},
		"update of the type": {
			"request": secrets_immutable_test_update("prod", {}, {"type": "example.com/other"}),
			"msg": secrets_immutable_test_update_msg,
		},
		"create in a namespace not replicated": {
			"request": secrets_immutable_test_create("gone", {}),
			"msg": secrets_immutable_test_unknown_msg,
		},
		"update of data in a namespace not replicated": {
			"request": secrets_immutable_test_update("gone", {}, {"data": {"v": base64.encode("other")}}),
			"msg": secrets_immutable_test_unknown_msg,
		},
		"update without an oldObject": {
			"request": object.remove(secrets_immutable_test_update("prod", {}, {}), ["oldObject"]),
			"msg": secrets_immutable_test_update_msg,
		},
	}
	got := secrets_immutable_test_eval(tc.request)
	got.deny == {tc.msg}
}

test_secrets_immutable_allowed[note] if {
	some note, tc in {
		"create immutable in production": {"request": secrets_immutable_test_create("prod", {"immutable": true})},
		"create mutable, unlabelled namespace": {"request": secrets_immutable_test_create("plain", {})},
		"create mutable, staging": {"request": secrets_immutable_test_create("staging", {})},
		"create immutable, namespace not replicated": {"request": secrets_immutable_test_create("gone", {"immutable": true})},
		"update that makes it immutable with new data": {"request": secrets_immutable_test_update(
			"prod", {},
			{"immutable": true, "data": {"v": base64.encode("other")}},
		)},
		"update of an immutable Secret's labels": {"request": secrets_immutable_test_update(
			"prod", {"immutable": true},
			{"immutable": true, "metadata": {"labels": {"a": "b"}}},
		)},
		"update of a mutable Secret's metadata (warned)": {
			"request": secrets_immutable_test_update("prod", {}, {"metadata": {"finalizers": []}}),
			"warn": {`Secret "db" in namespace "prod" is mutable in a namespace labelled trustplane.io/environment=production; replace it with an immutable one`},
		},
		"update of metadata, namespace not replicated": {"request": secrets_immutable_test_update("gone", {}, {"metadata": {"labels": {"a": "b"}}})},
		"update of data, unlabelled namespace": {"request": secrets_immutable_test_update("plain", {}, {"data": {"v": base64.encode("other")}})},
		"delete in production": {"request": secrets_immutable_test_request("DELETE", "prod", null, secrets_immutable_test_secret("prod", {}))},
		"a ConfigMap in production": {"request": object.union(secrets_immutable_test_create("prod", {}), {
			"kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
			"resource": {"group": "", "version": "v1", "resource": "configmaps"},
		})},
	}
	got := secrets_immutable_test_eval(tc.request)
	count(got.deny) == 0
	got.warn == object.get(tc, "warn", set())
}

test_secrets_immutable_no_data_in_messages if {
	requests := [
		secrets_immutable_test_create("prod", {}),
		secrets_immutable_test_update("prod", {}, {"data": {"v": base64.encode("other")}}),
		secrets_immutable_test_update("prod", {}, {"metadata": {"labels": {"a": "b"}}}),
		secrets_immutable_test_create("gone", {}),
	]
	every request in requests {
		review := {"request": request}
		all := deny | warn with input as review with data.kubernetes.namespaces as secrets_immutable_test_namespaces
		count(all) > 0
		every m in all {
			not contains(m, secrets_immutable_test_canary)
			not contains(m, base64.encode(secrets_immutable_test_canary))
		}
	}
}

# The create rule writes the label out rather than refer to
# secrets_immutable_production, whose label the messages name: a mutable
# Secret is refused in a namespace labelled as secrets_immutable_label and
# secrets_immutable_label_value say, and not in one labelled otherwise, so
# that the two cannot drift apart.
test_secrets_immutable_checks_the_named_label if {
	request := {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": secrets_immutable_test_create("team-x", {})}
	labelled := {"team-x": {"metadata": {"name": "team-x", "labels": {secrets_immutable_label: secrets_immutable_label_value}}}}
	other := {"team-x": {"metadata": {"name": "team-x", "labels": {secrets_immutable_label: concat("", [secrets_immutable_label_value, "-not"])}}}}
	labelled_denies := {m | some m in deny; contains(m, secrets_immutable_test_marker)} with input as request with data.kubernetes.namespaces as labelled
	count(labelled_denies) == 1
	other_denies := {m | some m in deny; contains(m, secrets_immutable_test_marker)} with input as request with data.kubernetes.namespaces as other
	count(other_denies) == 0
}
