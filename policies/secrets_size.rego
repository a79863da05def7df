# METADATA
# title: Secret data at most 64 KiB
# description: >-
#   Risk: Secrets used as bulk storage, which the control plane pays for many
#   times over. Every Secret is encrypted (AES-GCM) on each write, held
#   decrypted in the API server's watch cache, and sent whole to every client
#   that watches it and to every node whose pods use it, so a large Secret costs
#   memory and bandwidth on each of them, and many of them are a cheap way to
#   exhaust the API server (kube's own bound is 1 MiB per object). Credentials
#   are small: a private key with its certificate chain, a kubeconfig or a
#   registry config take a few KiB; 64 KiB leaves room for large chains while
#   refusing what is not a credential (binaries, archives, data sets). The bound
#   is on the decoded bytes of data and stringData together. An existing Secret
#   over the bound may still have its metadata updated (with a warning) and be
#   deleted. Some tools store more in Secrets (Helm's release records of large
#   charts); raise secrets_size_limit_bytes below (and the two bounds of
#   secrets_size_may_exceed with it), or keep them elsewhere.
# custom:
#   enforcement: deny
package kubernetes.admission

secrets_size_limit_bytes := 65536

deny contains msg if {
	input.request.kind.kind == "Secret"
	input.request.operation == "CREATE"
	input.request.kind.group == ""
	secrets_size_may_exceed
	secrets_size_bytes > secrets_size_limit_bytes
	msg := secrets_size_message
}

deny contains msg if {
	input.request.kind.kind == "Secret"
	input.request.operation == "UPDATE"
	input.request.kind.group == ""
	secrets_size_may_exceed
	secrets_size_bytes > secrets_size_limit_bytes
	secrets_size_data_changed
	msg := secrets_size_message
}

warn contains msg if {
	input.request.kind.kind == "Secret"
	input.request.operation == "UPDATE"
	input.request.kind.group == ""
	secrets_size_may_exceed
	secrets_size_bytes > secrets_size_limit_bytes
	not secrets_size_data_changed
	msg := secrets_size_kept_message
}

secrets_size_message := sprintf(
	"Secret %q in namespace %q holds %d bytes of data, more than the %d (64 KiB) a Secret may hold; a credential is smaller: keep bulk data out of Secrets",
	[secrets_size_name, object.get(input.request, "namespace", ""), secrets_size_bytes, secrets_size_limit_bytes],
)

# An update that leaves the data as it is gets no byte count: its writer
# may hold only a grant on the Secret's metadata (secrets/metadata), which
# shows no data, its size included.
secrets_size_kept_message := sprintf(
	"Secret %q in namespace %q holds more data than the %d (64 KiB) a Secret may hold; a credential is smaller: keep bulk data out of Secrets",
	[secrets_size_name, object.get(input.request, "namespace", ""), secrets_size_limit_bytes],
)

secrets_size_object := object.get(input.request, "object", null)

secrets_size_old_object := object.get(input.request, "oldObject", null)

# The bytes the Secret would hold: each key of stringData (which the server
# writes into data, replacing a key of the same name) and each other key of
# data. Computed from the length of the base64 text, so that the data is
# never decoded.
secrets_size_bytes := sum([secrets_size_decoded_len(v) |
	some k, v in secrets_size_data
	not k in secrets_size_string_keys
]) + sum([secrets_size_decoded_len(base64.encode(v)) | some v in secrets_size_string_data])

# Whether the Secret may hold more than the limit, by a bound that counts
# the characters of each value instead of decoding it: a value of data
# holds at most 3 bytes per 4 characters of its base64 text, one of
# stringData at most 4 bytes per character (UTF-8). So data within half
# the limit's characters holds at most 3/8 of the limit, stringData within
# an eighth of them at most half of it, and a Secret within both at most
# 7/8 of the limit. Most Secrets are far below it, and pass here. A value
# that is not a string counts for nothing, as in secrets_size_decoded_len.
# 32768 and 8192 are secrets_size_limit_bytes / 2 and / 8, written out:
# OPA computes an expression anew on each evaluation, and this runs on
# every Secret create. Change them with the limit: a bound above its share
# lets some Secret over the limit through, and
# test_secrets_size_bounds_follow_the_limit fails.
secrets_size_may_exceed if sum([count(v) | some v in input.request.object.data; is_string(v)]) > 32768

# Most Secrets have no stringData: the first expression ends the body
# for them, where the count would take four.
secrets_size_may_exceed if {
	input.request.object.stringData
	sum([count(v) | some v in input.request.object.stringData; is_string(v)]) > 8192
}

# The object's data and stringData, {} when absent or null.
secrets_size_data := v if {
	v := input.request.object.data
	v != null
} else := {}

secrets_size_string_data := v if {
	v := input.request.object.stringData
	v != null
} else := {}

secrets_size_string_keys := object.keys(secrets_size_string_data)

# The length of what base64 text (standard, padded, as the API encodes
# []byte) decodes to. Anything else is not valid data, and is counted as
# if it were.
secrets_size_decoded_len(b64) := n if {
	is_string(b64)
	len := count(b64)
	padding := len - count(trim_right(b64, "="))
	n := floor((len * 3) / 4) - padding
} else := 0

secrets_size_data_changed if {
	secrets_size_field(secrets_size_object, "data", {}) != secrets_size_field(secrets_size_old_object, "data", {})
}

secrets_size_data_changed if count(secrets_size_string_data) > 0

# obj[field], or default_value when obj is not an object or the field is
# absent or null.
secrets_size_field(obj, field, default_value) := v if {
	is_object(obj)
	v := object.get(obj, field, null)
	v != null
} else := default_value

secrets_size_name := name if {
	name := object.get(input.request, "name", "")
	name != ""
} else := concat("", [object.get(input.request, ["object", "metadata", "generateName"], ""), "*"])
