package kubernetes.admission

# Every message of configmaps_credentials.rego ends with this advice.
configmaps_credentials_test_marker := "keep credentials in a Secret"

# Credential-like fixtures. The PEM blocks are put together here so that no
# private key block appears whole in the source (secret scanners look for
# them); none of these is a real credential.
configmaps_credentials_test_pem(type) := concat("", [
	"-----BEGIN ", type, "-----\n",
	"MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n",
	"-----END ", type, "-----\n",
])

configmaps_credentials_test_aws_key_id := "AKIAIOSFODNN7EXAMPLE"

configmaps_credentials_test_jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.dGVzdC1zaWduYXR1cmUtbm90LXJlYWw"

configmaps_credentials_test_configmap(values, binary) := {
	"apiVersion": "v1",
	"kind": "ConfigMap",
	"metadata": {"name": "app", "namespace": "team-a"},
	"data": values,
	"binaryData": binary,
}

configmaps_credentials_test_request(op, obj, old) := {
	"uid": "6b3d6f34-0000-4000-8000-000000000005",
	"kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
	"resource": {"group": "", "version": "v1", "resource": "configmaps"},
	"name": object.get(object.union(old, obj), ["metadata", "name"], ""),
	"namespace": object.get(object.union(old, obj), ["metadata", "namespace"], ""),
	"operation": op,
	"userInfo": {"username": "dev", "groups": ["team-a:developers", "system:authenticated"]},
	"object": configmaps_credentials_test_null_if_empty(obj),
	"oldObject": configmaps_credentials_test_null_if_empty(old),
}

configmaps_credentials_test_null_if_empty(obj) := null if obj == {}

configmaps_credentials_test_null_if_empty(obj) := obj if obj != {}

configmaps_credentials_test_create(values) := configmaps_credentials_test_request(
	"CREATE",
	configmaps_credentials_test_configmap(values, {}),
	{},
)

configmaps_credentials_test_eval(request) := {"deny": d, "warn": w} if {
	review := {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
	d := {m | some m in deny; contains(m, configmaps_credentials_test_marker)} with input as review
	w := {m | some m in warn; contains(m, configmaps_credentials_test_marker)} with input as review
}

configmaps_credentials_test_msg(key, what) := sprintf(
	`ConfigMap "app" in namespace "team-a": data key %q holds %s; keep credentials in a Secret`,
	[key, what],
)

test_configmaps_credentials_refused[note] if {
	some note, tc in {
		"an RSA private key": {
			"data": {"tls.key": configmaps_credentials_test_pem("RSA PRIVATE KEY")},
			"msg": configmaps_credentials_test_msg("tls.key", "a private key (PEM)"),
		},
		"a PKCS #8 private key": {
			"data": {"key.pem": configmaps_credentials_test_pem("PRIVATE KEY")},
			"msg": configmaps_credentials_test_msg("key.pem", "a private key (PEM)"),
		},
		"an encrypted private key": {
			"data": {"key.pem": configmaps_credentials_test_pem("ENCRYPTED PRIVATE KEY")},
			"msg": configmaps_credentials_test_msg("key.pem", "a private key (PEM)"),
		},
		"an OpenSSH private key": {
			"data": {"id": configmaps_credentials_test_pem("OPENSSH PRIVATE KEY")},
			"msg": configmaps_credentials_test_msg("id", "a private key (PEM)"),
		},
		"a PGP private key block": {
			"data": {"signing.asc": configmaps_credentials_test_pem("PGP PRIVATE KEY BLOCK")},
			"msg": configmaps_credentials_test_msg("signing.asc", "a private key (PEM)"),
		},
		"an EC private key after a certificate": {
			"data": {"bundle.pem": concat("", [
				configmaps_credentials_test_pem("CERTIFICATE"),
				configmaps_credentials_test_pem("EC PRIVATE KEY"),
			])},
			"msg": configmaps_credentials_test_msg("bundle.pem", "a private key (PEM)"),
		},
		"a private key indented in a YAML file": {
			"data": {"app.yaml": concat("", ["tls:\n  key: |\n    ", configmaps_credentials_test_pem("PRIVATE KEY")])},
			"msg": configmaps_credentials_test_msg("app.yaml", "a private key (PEM)"),
		},
		"an AWS access key ID in a config": {
			"data": {"config": sprintf("[default]\nregion = eu-west-1\naws_access_key_id = %s\n", [configmaps_credentials_test_aws_key_id])},
			"msg": configmaps_credentials_test_msg("config", "an AWS access key ID"),
		},
		"an AWS temporary access key ID": {
			"data": {"AWS_ACCESS_KEY_ID": "ASIAIOSFODNN7EXAMPLE"},
			"msg": configmaps_credentials_test_msg("AWS_ACCESS_KEY_ID", "an AWS access key ID"),
		},
		"a Google service account key": {
			"data": {"sa.json": json.marshal({
				"type": "service_account",
				"project_id": "example",
				"private_key_id": "0123456789abcdef",
				"private_key": configmaps_credentials_test_pem("PRIVATE KEY"),
				"client_email": "ci@example.iam.gserviceaccount.com",
			})},
			"msg": configmaps_credentials_test_msg("sa.json", "a Google service account key, a credential assigned by name in its text, a private key (PEM)"),
		},
		"a Google API key": {
			"data": {"maps": "AIzaSyA1234567890abcdefghijklmnopqrstuv"},
			"msg": configmaps_credentials_test_msg("maps", "a Google API key"),
		},
		"a GitHub token": {
			"data": {"ci": "ghp_0123456789abcdefghijklmnopqrstuvwxyz"},
			"msg": configmaps_credentials_test_msg("ci", "a GitHub token"),
		},
		"a fine-grained GitHub token": {
			"data": {"ci": "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"},
			"msg": configmaps_credentials_test_msg("ci", "a GitHub token"),
		},
		"a Slack token": {
			"data": {"notify": "xoxb-123456789012-abcdefghijkl"},
			"msg": configmaps_credentials_test_msg("notify", "a Slack token"),
		},
		"a Stripe live key": {
			"data": {"billing": "sk_live_0123456789abcdefABCDEF"},
			"msg": configmaps_credentials_test_msg("billing", "a Stripe secret key"),
		},
		"a JSON Web Token": {
			"data": {"id": configmaps_credentials_test_jwt},
			"msg": configmaps_credentials_test_msg("id", "a JSON Web Token"),
		},
		"a bearer token in a header": {
			"data": {"headers": "Authorization: Bearer 0123456789abcdefABCDEF0123"},
			"msg": configmaps_credentials_test_msg("headers", "a bearer token"),
		},
		"a URL with a password": {
			"data": {"DATABASE_URL": "postgres://app:hunter2@db.team-a:5432/app"},
			"msg": configmaps_credentials_test_msg("DATABASE_URL", "a URL with a password"),
		},
		"a key named password": {
			"data": {"password": "hunter2"},
			"msg": configmaps_credentials_test_msg("password", "a value under a credential-like key name"),
		},
		"an environment-style key": {
			"data": {"DB_PASSWORD": "hunter2"},
			"msg": configmaps_credentials_test_msg("DB_PASSWORD", "a value under a credential-like key name"),
		},
		"camelCase apiKey": {
			"data": {"apiKey": "abc123"},
			"msg": configmaps_credentials_test_msg("apiKey", "a value under a credential-like key name"),
		},
		"api_key": {
			"data": {"api_key": "abc123"},
			"msg": configmaps_credentials_test_msg("api_key", "a value under a credential-like key name"),
		},
		"client-secret": {
			"data": {"client-secret": "abc123"},
			"msg": configmaps_credentials_test_msg("client-secret", "a value under a credential-like key name"),
		},
		"passwd": {
			"data": {"passwd": "abc123"},
			"msg": configmaps_credentials_test_msg("passwd", "a value under a credential-like key name"),
		},
		"auth.token": {
			"data": {"auth.token": "abc123"},
			"msg": configmaps_credentials_test_msg("auth.token", "a value under a credential-like key name"),
		},
		"password.txt": {
			"data": {"password.txt": "abc123\n"},
			"msg": configmaps_credentials_test_msg("password.txt", "a value under a credential-like key name"),
		},
		"an access key by name": {
			"data": {"secret_access_key": "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"},
			"msg": configmaps_credentials_test_msg("secret_access_key", "a value under a credential-like key name"),
		},
		"a password in a properties file": {
			"data": {"application.properties": "spring.datasource.url=jdbc:postgresql://db/app\nspring.datasource.password=hunter2\n"},
			"msg": configmaps_credentials_test_msg("application.properties", "a credential assigned by name in its text"),
		},
		"a password in a YAML file": {
			"data": {"config.yaml": "database:\n  user: app\n  password: hunter2\n"},
			"msg": configmaps_credentials_test_msg("config.yaml", "a credential assigned by name in its text"),
		},
		"a token in a JSON file": {
			"data": {"config.json": json.marshal({"endpoint": "https://api.example.com", "token": "abc123"})},
			"msg": configmaps_credentials_test_msg("config.json", "a credential assigned by name in its text"),
		},
		"an exported API key in an env file": {
			"data": {"env.sh": "export API_KEY=abc123\n"},
			"msg": configmaps_credentials_test_msg("env.sh", "a credential assigned by name in its text"),
		},
		"a quoted password in an INI file": {
			"data": {"grafana.ini": "[security]\nadmin_password = 'admin'\n"},
			"msg": configmaps_credentials_test_msg("grafana.ini", "a credential assigned by name in its text"),
		},
		"a .rego file outside kube-system": {
			"data": {"p.rego": "package x\n\npassword := \"hunter2\"\n"},
			"msg": configmaps_credentials_test_msg("p.rego", "a credential assigned by name in its text"),
		},
	}
	got := configmaps_credentials_test_eval(configmaps_credentials_test_create(tc.data))
	got.deny == {tc.msg}
}

test_configmaps_credentials_refused_binary[note] if {
	some note, tc in {
		"a private key in binaryData": {
			"binary": {"tls.key": base64.encode(configmaps_credentials_test_pem("PRIVATE KEY"))},
			"msg": `ConfigMap "app" in namespace "team-a": binaryData key "tls.key" holds a private key (PEM); keep credentials in a Secret`,
		},
		"a token by key name in binaryData": {
			"binary": {"token": base64.encode("abc123")},
			"msg": `ConfigMap "app" in namespace "team-a": binaryData key "token" holds a value under a credential-like key name; keep credentials in a Secret`,
		},
	}
	request := configmaps_credentials_test_request("CREATE", configmaps_credentials_test_configmap({}, tc.binary), {})
	got := configmaps_credentials_test_eval(request)
	got.deny == {tc.msg}
}

test_configmaps_credentials_refused_policy_configmap_elsewhere[note] if {
	some note, tc in {
		"policy label outside kube-system": {
			"namespace": "team-a",
			"labels": {"trustplane.io/policy": "rego"},
			"key": "p.rego",
		},
		"kube-system without the policy label": {
			"namespace": "kube-system",
			"labels": {},
			"key": "p.rego",
		},
		"a key of a policy ConfigMap that is not .rego": {
			"namespace": "kube-system",
			"labels": {"trustplane.io/policy": "rego"},
			"key": "notes.txt",
		},
	}
	cm := object.union(
		configmaps_credentials_test_configmap({tc.key: "password = \"hunter2\"\n"}, {}),
		{"metadata": {"namespace": tc.namespace, "labels": tc.labels}},
	)
	got := configmaps_credentials_test_eval(configmaps_credentials_test_request("CREATE", cm, {}))
	got.deny == {sprintf(
		`ConfigMap "app" in namespace %q: data key %q holds a credential assigned by name in its text; keep credentials in a Secret`,
		[tc.namespace, tc.key],
	)}
}

test_configmaps_credentials_allowed[note] if {
	some note, values in {
		"the README's settings": {"mode": "strict"},
		"a CA certificate (kube-root-ca.crt)": {"ca.crt": configmaps_credentials_test_pem("CERTIFICATE")},
		"a public key": {"key.pub": configmaps_credentials_test_pem("PUBLIC KEY")},
		"a certificate request": {"csr.pem": configmaps_credentials_test_pem("CERTIFICATE REQUEST")},
		"an empty password": {"password": ""},
		"a quoted empty password": {"password": `""`},
		"a variable reference": {"DB_PASSWORD": "${DB_PASSWORD}"},
		"a shell substitution": {"token": "$(cat /run/token)"},
		"a template": {"apiKey": "{{ .Values.apiKey }}"},
		"a placeholder": {"api_key": "<your key here>"},
		"a masked value": {"password": "********"},
		"a path to a token file": {"token": "/var/run/secrets/tokens/vault-token"},
		"secretName is a reference": {"secretName": "db-credentials"},
		"token-ttl is a duration": {"token-ttl": "1h"},
		"password-min-length is a number": {"password-min-length": "12"},
		"tokenURL is a URL": {"tokenURL": "https://auth.example.com/oauth/token"},
		"a boolean under a credential name": {"enable-token": "true"},
		"settings that name credentials without values": {"app.yaml": "auth:\n  password: ${PASSWORD}\n  token: \"\"\n  secret:\n    name: db\n  apiKey: <set me>\n"},
		"a properties file with a placeholder": {"application.properties": "spring.datasource.password=${DB_PASSWORD}\n"},
		"a URL with a user only": {"REPO": "https://git@example.com/app.git"},
		"a URL with a password placeholder": {"DATABASE_URL": "postgres://app:${DB_PASSWORD}@db:5432/app"},
		"a bearer header with a variable": {"headers": "Authorization: Bearer $TOKEN"},
		"password settings by other names": {"auth.conf": "password_min_length = 12\npassword_file = /etc/app/password\nsecret_name: db\ntoken_ttl: 3600\n"},
		"a pod manifest in YAML": {"pod.yaml": "volumes:\n- name: tls\n  secret:\n    secretName: tls\n- name: db\n  secret: {secretName: db}\n"},
		"a pod manifest in JSON": {"pod.json": json.marshal({"volumes": [{"name": "tls", "secret": {"secretName": "tls"}}, {"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]})},
		"a list of token audiences": {"auth.yaml": "token: [\"api\", \"vault\"]\n"},
		"an nginx config": {"nginx.conf": "server {\n  ssl_certificate /etc/tls/tls.crt;\n  ssl_certificate_key /etc/tls/tls.key;\n}\n"},
		"a JSON Web Key Set of public keys": {"jwks.json": json.marshal({"keys": [{"kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]})},
	}
	got := configmaps_credentials_test_eval(configmaps_credentials_test_create(values))
	count(got.deny) == 0
	count(got.warn) == 0
}

test_configmaps_credentials_other_requests[note] if {
	cm := configmaps_credentials_test_configmap({"password": "hunter2", "mode": "strict"}, {})
	some note, tc in {
		"deleting one": {"request": configmaps_credentials_test_request("DELETE", {}, cm)},
		"an update that leaves the credential (warned)": {
			"request": configmaps_credentials_test_request("UPDATE", object.union(cm, {"data": {"mode": "lax"}}), cm),
			"warn": {`ConfigMap "app" in namespace "team-a": data key "password", unchanged, holds a value under a credential-like key name; keep credentials in a Secret`},
		},
		"a Secret is not a ConfigMap": {"request": object.union(
			configmaps_credentials_test_request("CREATE", object.union(cm, {"kind": "Secret"}), {}),
			{"kind": {"group": "", "version": "v1", "kind": "Secret"}},
		)},
		"a policy ConfigMap's sources (warned)": {
			"request": configmaps_credentials_test_request(
				"CREATE", object.union(
					configmaps_credentials_test_configmap({"p_test.rego": "package x\n\ntest_p if {\n\tpassword := \"hunter2\"\n\tpassword != \"\"\n}\n"}, {}),
					{"metadata": {"namespace": "kube-system", "labels": {"trustplane.io/policy": "rego"}}},
				),
				{},
			),
			"warn": {`ConfigMap "app" in namespace "kube-system": policy source "p_test.rego" holds a credential assigned by name in its text; allowed in a policy ConfigMap, but keep credentials in a Secret`},
		},
	}
	got := configmaps_credentials_test_eval(tc.request)
	count(got.deny) == 0
	got.warn == object.get(tc, "warn", set())
}

test_configmaps_credentials_updates[note] if {
	cm := configmaps_credentials_test_configmap({"mode": "strict", "password": "hunter2"}, {})
	some note, tc in {
		"a credential added": {
			"old": configmaps_credentials_test_configmap({"mode": "strict"}, {}),
			"new": cm,
		},
		"a credential changed": {
			"old": cm,
			"new": object.union(cm, {"data": {"password": "hunter3"}}),
		},
		"a credential put in place of a placeholder": {
			"old": object.union(cm, {"data": {"password": "${PASSWORD}"}}),
			"new": cm,
		},
	}
	got := configmaps_credentials_test_eval(configmaps_credentials_test_request("UPDATE", tc.new, tc.old))
	got.deny == {configmaps_credentials_test_msg("password", "a value under a credential-like key name")}
}

test_configmaps_credentials_no_value_in_messages if {
	request := configmaps_credentials_test_create({
		"password": "hunter2-c4n4ry",
		"config.yaml": "password: hunter2-c4n4ry\n",
		"DATABASE_URL": "postgres://app:hunter2-c4n4ry@db/app",
		"id": configmaps_credentials_test_jwt,
		"AWS": configmaps_credentials_test_aws_key_id,
	})
	all := deny | warn with input as {"request": request}
	count(all) >= 5
	every m in all {
		not contains(m, "c4n4ry")
		not contains(m, configmaps_credentials_test_jwt)
		not contains(m, configmaps_credentials_test_aws_key_id)
	}
}
