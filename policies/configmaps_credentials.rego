# METADATA
# title: No plaintext credentials in ConfigMaps
# description: >-
#   Risk: a credential stored where the control plane does not treat it as one.
#   ConfigMaps are not encrypted at rest, are readable by the view role and by
#   everything granted to read configuration, are recorded whole in audit
#   events at level Request and above, and are printed by kubectl describe; a
#   key or password put there is readable by far more than a Secret's would be. A
#   ConfigMap is refused when a value of data, or of binaryData once decoded,
#   holds a private key (a PEM PRIVATE KEY block; a certificate is fine), a
#   cloud credential (an AWS access key ID, a Google service account key or API
#   key), a token (GitHub, Slack, Stripe, a JSON Web Token, a bearer token), a
#   URL with a password in it, a value under a key named like a credential
#   (password, passwd, passphrase, secret, token, apikey, api_key, access_key,
#   private_key, credentials), or such a name assigned a value in its text
#   (password=..., "token": "..."). Empty values and placeholders (${VAR},
#   {{ .x }}, <value>, a file path) are not credentials. On update only the
#   values that change are refused; what was already there is warned about.
#   The .rego files of a policy ConfigMap (labelled trustplane.io/policy=rego
#   in kube-system) are warned about, not refused: policy tests hold
#   credential-like fixtures. Messages name the key, never the value.
# custom:
#   enforcement: deny
package kubernetes.admission

# A key of data or binaryData named like a credential (lowercased; ends
# with one of these words, so "secretName" and "token-ttl" are not).
configmaps_credentials_key_pattern := `(password|passwd|passphrase|secret|token|apikey|api[_.-]key|access[_.-]?key|private[_.-]?key|credentials?)(\.txt)?$`

# A credential-like name assigned a value in a value's text: key=value,
# key: value, "key": "value", key := "value". The name ends with the word
# (what comes before it does not matter); the value is the first group. A
# value that opens an object or a list ({, [), or a comparison (==), is not
# a credential.
configmaps_credentials_assignment_pattern := `(?i)(?:password|passwd|passphrase|secret|token|api[_.-]?key|access[_.-]?key|private[_.-]?key)["']?[ \t]*(?::=|[:=])[ \t]*("[^"\n]*"|'[^'\n]*'|[^\s,;}#{\[=][^\s,;}#]*)`

# A URL with a password in it; the password is the first group.
configmaps_credentials_url_pattern := `\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:([^/\s@]+)@`

# Credentials recognised by their form alone. Each pattern is tried only
# on text that holds one of its hints (lowercased, against the text
# lowercased): a substring search is much cheaper than a regular
# expression, and most values hold none.
configmaps_credentials_value_patterns := {
	"a private key (PEM)": {
		"hints": ["private key"],
		"pattern": `-----BEGIN[A-Z0-9 ]* PRIVATE KEY( BLOCK)?-----`,
	},
	"an AWS access key ID": {
		"hints": ["akia", "asia"],
		"pattern": `\b(AKIA|ASIA)[A-Z0-9]{16}\b`,
	},
	"a Google service account key": {
		"hints": ["private_key"],
		"pattern": `"private_key"\s*:\s*"`,
	},
	"a Google API key": {
		"hints": ["aiza"],
		"pattern": `\bAIza[0-9A-Za-z_-]{35}\b`,
	},
	"a GitHub token": {
		"hints": ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
		"pattern": `\b(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})`,
	},
	"a Slack token": {
		"hints": ["xox"],
		"pattern": `\bxox[abposr]-[A-Za-z0-9-]{10,}`,
	},
	"a Stripe secret key": {
		"hints": ["k_live_"],
		"pattern": `\b[rs]k_live_[0-9A-Za-z]{16,}`,
	},
	"a JSON Web Token": {
		"hints": ["eyj"],
		"pattern": `\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}`,
	},
	"a bearer token": {
		"hints": ["bearer"],
		"pattern": `(?i)\bbearer[ \t]+[A-Za-z0-9._~+/-]{20,}`,
	},
}

# The hints of the assignment and URL patterns, as above.
configmaps_credentials_assignment_hints := [
	"passw", "passphrase", "secret", "token",
	"apikey", "api_key", "api-key", "api.key",
	"accesskey", "access_key", "access-key", "access.key",
	"privatekey", "private_key", "private-key", "private.key",
]

configmaps_credentials_url_hints := ["://"]

deny contains msg if {
	input.request.kind.kind == "ConfigMap"
	input.request.operation in {"CREATE", "UPDATE"}
	some hit in configmaps_credentials_hits
	hit.changed
	not configmaps_credentials_policy_source(hit.field, hit.key)
	msg := sprintf(
		"ConfigMap %q in namespace %q: %s key %q holds %s; keep credentials in a Secret",
		[configmaps_credentials_name, configmaps_credentials_namespace, hit.field, hit.key, concat(", ", sort(hit.what))],
	)
}

warn contains msg if {
	input.request.kind.kind == "ConfigMap"
	input.request.operation in {"CREATE", "UPDATE"}
	some hit in configmaps_credentials_hits
	not hit.changed
	msg := sprintf(
		"ConfigMap %q in namespace %q: %s key %q, unchanged, holds %s; keep credentials in a Secret",
		[configmaps_credentials_name, configmaps_credentials_namespace, hit.field, hit.key, concat(", ", sort(hit.what))],
	)
}

warn contains msg if {
	input.request.kind.kind == "ConfigMap"
	input.request.operation in {"CREATE", "UPDATE"}
	some hit in configmaps_credentials_hits
	hit.changed
	configmaps_credentials_policy_source(hit.field, hit.key)
	msg := sprintf(
		"ConfigMap %q in namespace %q: policy source %q holds %s; allowed in a policy ConfigMap, but keep credentials in a Secret",
		[configmaps_credentials_name, configmaps_credentials_namespace, hit.key, concat(", ", sort(hit.what))],
	)
}

configmaps_credentials_configmap if {
	input.request.kind.kind == "ConfigMap"
	input.request.kind.group == ""
	input.request.operation in {"CREATE", "UPDATE"}
}

configmaps_credentials_namespace := object.get(input.request, "namespace", "")

configmaps_credentials_object := object.get(input.request, "object", null)

configmaps_credentials_old_object := object.get(input.request, "oldObject", null)

# Every value of the ConfigMap with a finding, whether the request changes
# it (every value of a create does), and what was found.
configmaps_credentials_hits contains {"field": field, "key": key, "changed": changed, "what": what} if {
	configmaps_credentials_configmap
	some [field, key, raw, text] in configmaps_credentials_entries
	what := configmaps_credentials_findings(key, text)
	count(what) > 0
	old := configmaps_credentials_field(configmaps_credentials_field(configmaps_credentials_old_object, field, {}), key, null)
	changed := old != raw
}

# [field, key, value as stored, value as text] for each value.
configmaps_credentials_entries contains ["data", key, value, value] if {
	some key, value in configmaps_credentials_field(configmaps_credentials_object, "data", {})
	is_string(value)
}

configmaps_credentials_entries contains ["binaryData", key, value, text] if {
	some key, value in configmaps_credentials_field(configmaps_credentials_object, "binaryData", {})
	is_string(value)
	base64.is_valid(value)
	text := base64.decode(value)
}

configmaps_credentials_findings(key, text) := ((by_form | by_key) | by_assignment) | by_url if {
	folded := lower(text)
	by_form := {what |
		some what, p in configmaps_credentials_value_patterns
		configmaps_credentials_hinted(folded, p.hints)
		regex.match(p.pattern, text)
	}
	by_key := {"a value under a credential-like key name" |
		regex.match(configmaps_credentials_key_pattern, lower(key))
		not configmaps_credentials_placeholder(text)
	}
	by_assignment := {"a credential assigned by name in its text" |
		configmaps_credentials_hinted(folded, configmaps_credentials_assignment_hints)
		some m in regex.find_all_string_submatch_n(configmaps_credentials_assignment_pattern, text, -1)
		not configmaps_credentials_placeholder(m[1])
	}
	by_url := {"a URL with a password" |
		configmaps_credentials_hinted(folded, configmaps_credentials_url_hints)
		some m in regex.find_all_string_submatch_n(configmaps_credentials_url_pattern, text, -1)
		not configmaps_credentials_placeholder(m[1])
	}
}

configmaps_credentials_hinted(folded, hints) if {
	some hint in hints
	contains(folded, hint)
}

# Values that are not credentials: empty, a reference to one kept
# elsewhere, a file path, a YAML block indicator, a boolean or null, a mask.
configmaps_credentials_placeholder(v) if configmaps_credentials_unquoted(v) == ""

configmaps_credentials_placeholder(v) if regex.match(`^(\$|\{\{|<|%\()`, configmaps_credentials_unquoted(v))

configmaps_credentials_placeholder(v) if regex.match(`^/\S*$`, configmaps_credentials_unquoted(v))

configmaps_credentials_placeholder(v) if {
	lower(configmaps_credentials_unquoted(v)) in {"true", "false", "yes", "no", "null", "none", "nil", "~", "|", "|-", ">", ">-"}
}

configmaps_credentials_placeholder(v) if regex.match(`^[*xX]+$`, configmaps_credentials_unquoted(v))

configmaps_credentials_unquoted(v) := trim(trim_space(v), `"'`)

# A .rego file of a ConfigMap that the engine loads policies from.
configmaps_credentials_policy_source(field, key) if {
	field == "data"
	endswith(key, ".rego")
	configmaps_credentials_namespace == "kube-system"
	configmaps_credentials_object.metadata.labels["trustplane.io/policy"] == "rego"
}

# obj[field], or default_value when obj is not an object or the field is
# absent or null.
configmaps_credentials_field(obj, field, default_value) := v if {
	is_object(obj)
	v := object.get(obj, field, null)
	v != null
} else := default_value

configmaps_credentials_name := name if {
	name := object.get(input.request, "name", "")
	name != ""
} else := concat("", [object.get(input.request, ["object", "metadata", "generateName"], ""), "*"])
