package kubernetes.admission

# Every message of namespaces_policy_labels.rego says why.
namespaces_policy_labels_test_marker := "the Secret policies read it"

namespaces_policy_labels_test_ns(labels) := {
	"apiVersion": "v1",
	"kind": "Namespace",
	"metadata": {"name": "team-a", "labels": labels},
}

namespaces_policy_labels_test_request(op, user, groups, obj, old) := {
	"uid": "6b3d6f34-0000-4000-8000-000000000009",
	"kind": {"group": "", "version": "v1", "kind": "Namespace"},
	"resource": {"group": "", "version": "v1", "resource": "namespaces"},
	"name": "team-a",
	"operation": op,
	"userInfo": {"username": user, "groups": groups},
	"object": obj,
	"oldObject": old,
}

namespaces_policy_labels_test_owner := ["team-a:owners", "system:authenticated"]

namespaces_policy_labels_test_admins := ["trustplane:cluster-admins", "system:authenticated"]

namespaces_policy_labels_test_denies(request) := {m | some m in all; contains(m, namespaces_policy_labels_test_marker)} if {
	all := deny with input as {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
}

namespaces_policy_labels_test_msg(label) := sprintf(
	`user "owner" may not set, change or remove label %q of Namespace "team-a": the Secret policies read it, and only members of the groups trustplane:cluster-admins may`,
	[label],
)

test_namespaces_policy_labels_refused[note] if {
	prod := {"trustplane.io/environment": "production", "team": "a"}
	some note, tc in {
		"production removed": {
			"old": prod,
			"new": {"team": "a"},
			"msgs": {namespaces_policy_labels_test_msg("trustplane.io/environment")},
		},
		"production changed": {
			"old": prod,
			"new": {"trustplane.io/environment": "staging", "team": "a"},
			"msgs": {namespaces_policy_labels_test_msg("trustplane.io/environment")},
		},
		"production emptied": {
			"old": prod,
			"new": {"trustplane.io/environment": "", "team": "a"},
			"msgs": {namespaces_policy_labels_test_msg("trustplane.io/environment")},
		},
		"all labels dropped": {
			"old": prod,
			"new": null,
			"msgs": {namespaces_policy_labels_test_msg("trustplane.io/environment")},
		},
		"secrets allowed added": {
			"old": {},
			"new": {"trustplane.io/secrets": "allowed"},
			"msgs": {namespaces_policy_labels_test_msg("trustplane.io/secrets")},
		},
		"volumes-only removed, secrets added": {
			"old": {"trustplane.io/secrets-as": "volumes"},
			"new": {"trustplane.io/secrets": "allowed"},
			"msgs": {
				namespaces_policy_labels_test_msg("trustplane.io/secrets-as"),
				namespaces_policy_labels_test_msg("trustplane.io/secrets"),
			},
		},
	}
	request := namespaces_policy_labels_test_request(
		"UPDATE", "owner", namespaces_policy_labels_test_owner,
		namespaces_policy_labels_test_ns(tc.new), namespaces_policy_labels_test_ns(tc.old),
	)
	namespaces_policy_labels_test_denies(request) == tc.msgs
}

test_namespaces_policy_labels_refused_create if {
	request := namespaces_policy_labels_test_request(
		"CREATE", "owner", namespaces_policy_labels_test_owner,
		namespaces_policy_labels_test_ns({"trustplane.io/secrets": "allowed"}), null,
	)
	namespaces_policy_labels_test_denies(request) == {namespaces_policy_labels_test_msg("trustplane.io/secrets")}
}

test_namespaces_policy_labels_allowed[note] if {
	prod := namespaces_policy_labels_test_ns({"trustplane.io/environment": "production"})
	some note, request in {
		"an admin removes production": namespaces_policy_labels_test_request(
			"UPDATE", "admin", namespaces_policy_labels_test_admins,
			namespaces_policy_labels_test_ns({}), prod,
		),
		"an admin creates a labelled namespace": namespaces_policy_labels_test_request(
			"CREATE", "admin", namespaces_policy_labels_test_admins,
			namespaces_policy_labels_test_ns({"trustplane.io/secrets": "allowed", "trustplane.io/secrets-as": "volumes"}), null,
		),
		"the owner changes another label": namespaces_policy_labels_test_request(
			"UPDATE", "owner", namespaces_policy_labels_test_owner,
			namespaces_policy_labels_test_ns({"trustplane.io/environment": "production", "team": "b"}), prod,
		),
		"the owner creates an unlabelled namespace": namespaces_policy_labels_test_request(
			"CREATE", "owner", namespaces_policy_labels_test_owner,
			namespaces_policy_labels_test_ns({"team": "a"}), null,
		),
		"a status update keeps the labels": object.union(
			namespaces_policy_labels_test_request(
				"UPDATE", "system:serviceaccount:kube-system:namespace-controller", ["system:serviceaccounts:kube-system"],
				object.union(prod, {"status": {"phase": "Terminating"}}), prod,
			),
			{"subResource": "status"},
		),
		"deleting a labelled namespace": namespaces_policy_labels_test_request("DELETE", "owner", namespaces_policy_labels_test_owner, null, prod),
		"the labels on a ConfigMap": object.union(
			namespaces_policy_labels_test_request(
				"CREATE", "owner", namespaces_policy_labels_test_owner,
				object.union(prod, {"kind": "ConfigMap"}), null,
			),
			{"kind": {"group": "", "version": "v1", "kind": "ConfigMap"}},
		),
	}
	count(namespaces_policy_labels_test_denies(request)) == 0
}
