package kubernetes.admission

# Every message of secrets_size.rego says what a Secret may hold.
secrets_size_test_marker := "(64 KiB) a Secret may hold"

secrets_size_test_canary := "canary-c4n4ry-value"

# n bytes of text: the canary, then zeros up to n (a zero-padded number
# is the cheap way to a long string in Rego).
secrets_size_test_bytes(n) := substring(concat("", [secrets_size_test_canary, secrets_size_test_zeros(n)]), 0, n)

secrets_size_test_zeros(n) := sprintf(sprintf("%%0%dd", [n]), [0])

# n times the two-byte character é: 2n bytes.
secrets_size_test_two_byte_chars(n) := replace(secrets_size_test_zeros(n), "0", "é")

secrets_size_test_secret(extra) := object.union(
	{
		"apiVersion": "v1",
		"kind": "Secret",
		"metadata": {"name": "big", "namespace": "team-a"},
		"type": "Opaque",
	},
	extra,
)

secrets_size_test_data(sizes) := {"data": {k: base64.encode(secrets_size_test_bytes(n)) | some k, n in sizes}}

secrets_size_test_request(op, obj, old) := {
	"uid": "6b3d6f34-0000-4000-8000-000000000004",
	"kind": {"group": "", "version": "v1", "kind": "Secret"},
	"resource": {"group": "", "version": "v1", "resource": "secrets"},
	"name": "big",
	"namespace": "team-a",
	"operation": op,
	"userInfo": {"username": "admin", "groups": ["trustplane:cluster-admins", "system:authenticated"]},
	"object": obj,
	"oldObject": old,
}

secrets_size_test_create(extra) := secrets_size_test_request("CREATE", secrets_size_test_secret(extra), null)

secrets_size_test_eval(request) := {"deny": d, "warn": w} if {
	review := {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
	d := {m | some m in deny; contains(m, secrets_size_test_marker)} with input as review
	w := {m | some m in warn; contains(m, secrets_size_test_marker)} with input as review
}

secrets_size_test_msg(n) := sprintf(
	`Secret "big" in namespace "team-a" holds %d bytes of data, more than the 65536 (64 KiB) a Secret may hold; a credential is smaller: keep bulk data out of Secrets`,
	[n],
)

test_secrets_size_refused[note] if {
	some note, tc in {
		"one byte over, one key": {
			"request": secrets_size_test_create(secrets_size_test_data({"blob": 65537})),
			"msg": secrets_size_test_msg(65537),
		},
		"one byte over, split across keys": {
			"request": secrets_size_test_create(secrets_size_test_data({"a": 32768, "b": 32768, "c": 1})),
			"msg": secrets_size_test_msg(65537),
		},
		"over through stringData": {
			"request": secrets_size_test_create({"stringData": {"blob": secrets_size_test_bytes(65537)}}),
			"msg": secrets_size_test_msg(65537),
		},
		"over with data and stringData together": {
			"request": secrets_size_test_create(object.union(
				secrets_size_test_data({"a": 40000}),
				{"stringData": {"b": secrets_size_test_bytes(30000)}},
			)),
			"msg": secrets_size_test_msg(70000),
		},
		"bytes, not characters, of stringData": {
			"request": secrets_size_test_create({"stringData": {"blob": secrets_size_test_two_byte_chars(32769)}}),
			"msg": secrets_size_test_msg(65538),
		},
		# Just over the limit in as few characters of stringData as can
		# be: what secrets_size_may_exceed's bound must still let through
		# to the count.
		"bytes, not characters: four-byte characters": {
			"request": secrets_size_test_request("CREATE", {"stringData": {"b": replace(secrets_size_test_zeros((secrets_size_limit_bytes / 4) + 1), "0", "😀")}}, null),
			"msg": secrets_size_test_msg(secrets_size_limit_bytes + 4),
		},
		"an update that grows it": {
			"request": secrets_size_test_request(
				"UPDATE",
				secrets_size_test_secret(secrets_size_test_data({"blob": 100000})),
				secrets_size_test_secret(secrets_size_test_data({"blob": 10})),
			),
			"msg": secrets_size_test_msg(100000),
		},
		"an update of an oversized one that changes its data": {
			"request": secrets_size_test_request(
				"UPDATE",
				secrets_size_test_secret(secrets_size_test_data({"blob": 70000})),
				secrets_size_test_secret(secrets_size_test_data({"blob": 80000})),
			),
			"msg": secrets_size_test_msg(70000),
		},
	}
	got := secrets_size_test_eval(tc.request)
	got.deny == {tc.msg}
}

test_secrets_size_allowed[note] if {
	some note, tc in {
		"exactly 64 KiB": {"request": secrets_size_test_create(secrets_size_test_data({"blob": 65536}))},
		"64 KiB across keys": {"request": secrets_size_test_create(secrets_size_test_data({"a": 32768, "b": 32768}))},
		"stringData replaces the data key of its name": {"request": secrets_size_test_create(object.union(
			secrets_size_test_data({"blob": 65536}),
			{"stringData": {"blob": "small"}},
		))},
		"64 KiB of two-byte characters": {"request": secrets_size_test_create({"stringData": {"blob": secrets_size_test_two_byte_chars(32768)}})},
		"no data": {"request": secrets_size_test_create({})},
		"null data": {"request": secrets_size_test_create({"data": null})},
		"delete of an oversized one": {"request": secrets_size_test_request(
			"DELETE",
			null,
			secrets_size_test_secret(secrets_size_test_data({"blob": 100000})),
		)},
		"labels on an oversized one (warned)": {
			"request": secrets_size_test_request(
				"UPDATE",
				secrets_size_test_secret(object.union(secrets_size_test_data({"blob": 100000}), {"metadata": {"labels": {"a": "b"}}})),
				secrets_size_test_secret(secrets_size_test_data({"blob": 100000})),
			),
			# Without the size: the writer may see only metadata.
			"warn": {`Secret "big" in namespace "team-a" holds more data than the 65536 (64 KiB) a Secret may hold; a credential is smaller: keep bulk data out of Secrets`},
		},
		"a large ConfigMap": {"request": object.union(
			secrets_size_test_create(secrets_size_test_data({"blob": 100000})),
			{"kind": {"group": "", "version": "v1", "kind": "ConfigMap"}},
		)},
	}
	got := secrets_size_test_eval(tc.request)
	count(got.deny) == 0
	got.warn == object.get(tc, "warn", set())
}

# The length is computed from the base64 text; check it against the bytes
# for every padding.
test_secrets_size_decoded_len[note] if {
	some n in numbers.range(0, 7)
	note := sprintf("%d bytes", [n])
	secrets_size_decoded_len(base64.encode(secrets_size_test_bytes(n))) == n
}

test_secrets_size_no_data_in_messages if {
	all := deny | warn with input as {"request": secrets_size_test_create(secrets_size_test_data({"blob": 70000}))}
	count(all) > 0
	every m in all {
		not contains(m, secrets_size_test_canary)
		not contains(m, base64.encode(secrets_size_test_canary))
	}
}

# secrets_size_may_exceed's bounds are written out, a half and an eighth
# of the limit (see there): a Secret whose data, or whose stringData, has
# one character more than its share must reach the byte count, and one
# within its share need not.
test_secrets_size_bounds_follow_the_limit if {
	data_text := secrets_size_test_zeros((secrets_size_limit_bytes / 2) + 1)
	secrets_size_may_exceed with input as {"request": {"object": {"data": {"a": "0", "b": substring(data_text, 1, -1)}}}}
	not secrets_size_may_exceed with input as {"request": {"object": {"data": {"a": "", "b": substring(data_text, 1, -1)}}}}
	not secrets_size_may_exceed with input as {"request": {"object": {"data": {"a": 40000, "b": substring(data_text, 1, -1)}}}}
	string_text := secrets_size_test_zeros((secrets_size_limit_bytes / 8) + 1)
	secrets_size_may_exceed with input as {"request": {"object": {"stringData": {"a": "0", "b": substring(string_text, 1, -1)}}}}
	not secrets_size_may_exceed with input as {"request": {"object": {"stringData": {"a": "", "b": substring(string_text, 1, -1)}}}}
}
