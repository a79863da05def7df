package apiserver

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trustplane/trustplane/apiserver/authn/oidc"
	"github.com/trustplane/trustplane/apiserver/authn/oidc/oidctest"
	"github.com/trustplane/trustplane/apiserver/filters"
	"github.com/trustplane/trustplane/pki"
)

// TestEveryRefusalIsAudited makes each attack the identity and
// authorization issue lists against one server, asserts its refusal, and
// finds the audit event of each refusal by the Audit-Id the response
// carries. A forged client certificate is the one attack missing: it fails
// the TLS handshake (TestTLSRefusals), before any request exists.
func TestEveryRefusalIsAudited(t *testing.T) {
	issuerKey := oidctest.NewKey(t, "corp-1")
	corp := oidctest.NewIssuer(t, issuerKey)
	stranger := oidctest.NewIssuer(t, issuerKey) // same key, not configured
	ts := startServer(t, withOIDC(t, corp))
	cs := ts.clientset(t, admin)
	ctx := testContext(t)

	// The cluster: nodes n1 and n2, each running a pod that mounts its
	// own Secret; a namespace team administered by dana; frank bound in
	// team to a ClusterRole that allows everything.
	for _, n := range []string{"n1", "n2"} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s-" + n}, Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + n}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s-" + n}}}},
		}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "everything"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for user, role := range map[string]string{"dana": "admin", "frank": "everything"} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
		if _, err := cs.RbacV1().RoleBindings("team").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Tokens: a valid one to forge from, one for a ServiceAccount since
	// deleted and recreated, and one bound to a pod since deleted.
	newSA := func(name string) {
		if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	token := func(sa string, bound *authenticationv1.BoundObjectReference) string {
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: bound}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	newSA("builder")
	valid := token("builder", nil)
	newSA("ghost")
	ghostTok := token("ghost", nil)
	if err := cs.CoreV1().ServiceAccounts("default").Delete(ctx, "ghost", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	newSA("ghost")
	runner, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "runner"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podTok := token("builder", &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: runner.Name, UID: runner.UID})
	if err := cs.CoreV1().Pods("default").Delete(ctx, runner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	saKeyPEM, err := os.ReadFile(filepath.Join(ts.etcd.PKI.Dir, pki.ServiceAccountKey))
	if err != nil {
		t.Fatal(err)
	}
	saKey, err := jwt.ParseECPrivateKeyFromPEM(saKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	saPubPEM, err := os.ReadFile(filepath.Join(ts.etcd.PKI.Dir, pki.ServiceAccountPub))
	if err != nil {
		t.Fatal(err)
	}
	// resigned is the valid token with its claims changed by edit and
	// signed again with the cluster's own key: only the edit is wrong.
	resigned := func(edit func(jwt.MapClaims)) string {
		return forge(t, valid, jwt.SigningMethodES256, saKey, edit)
	}
	otherKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	oidcToken := func(is *oidctest.Issuer, aud, sub string, groups ...string) string {
		c := is.Claims(aud)
		c["sub"] = sub
		if groups != nil {
			c["groups"] = groups
		}
		return issuerKey.Sign(t, c)
	}

	anonymous := ts.httpClient(t, nil)
	dana := ts.httpClient(t, &identity{user: "dana"})
	frank := ts.httpClient(t, &identity{user: "frank"})
	alice := ts.httpClient(t, &identity{user: "alice"})
	n1 := ts.httpClient(t, &identity{user: "system:node:n1", groups: []string{"system:nodes"}})
	// The grants the attacks rely on are in force before the attacks.
	for _, c := range []struct {
		who    *http.Client
		path   string
		bearer string
	}{
		{dana, "/api/v1/namespaces/team/configmaps", ""},
		{frank, "/api/v1/namespaces/team/secrets", ""},
		{n1, "/api/v1/namespaces/default/secrets/s-n1", ""},
		{anonymous, "/api/v1/namespaces/default/configmaps", oidcToken(corp, "trustplane", "oscar")},
	} {
		eventually(t, "access to "+c.path, func() error {
			_, code, _ := send(t, c.who, http.MethodGet, ts.url+c.path, c.bearer, nil, nil)
			if code == http.StatusOK || (c.bearer != "" && code == http.StatusForbidden) {
				return nil
			}
			return &unexpectedCode{code}
		})
	}

	wildcardRole := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"all"},"rules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}]}`
	bindRoot := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"root"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"dana"}]}`
	secrets := ts.url + "/api/v1/namespaces/default/secrets"
	attacks := []struct {
		name    string
		who     *http.Client
		method  string
		url     string
		bearer  string
		header  http.Header
		body    string
		code    int
		byAuthz bool // refused by the authorizer, which annotates why
	}{
		{name: "no credential", who: anonymous, method: "GET", url: secrets, code: 401},
		{name: "token with alg none", who: anonymous, method: "GET", url: secrets, code: 401,
			bearer: forge(t, valid, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, nil)},
		{name: "token HS256-signed with the public key", who: anonymous, method: "GET", url: secrets, code: 401,
			bearer: forge(t, valid, jwt.SigningMethodHS256, saPubPEM, nil)},
		{name: "token from another issuer", who: anonymous, method: "GET", url: secrets, code: 401,
			bearer: resigned(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })},
		{name: "token for another audience", who: anonymous, method: "GET", url: secrets, code: 401,
			bearer: resigned(func(c jwt.MapClaims) { c["aud"] = []string{"vault"} })},
		{name: "expired token", who: anonymous, method: "GET", url: secrets, code: 401,
			bearer: resigned(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-5 * time.Minute).Unix() })},
		{name: "token not yet valid", who: anonymous, method: "GET", url: secrets, code: 401,
			bearer: resigned(func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(5 * time.Minute).Unix() })},
		{name: "token with an altered payload", who: anonymous, method: "GET", url: secrets, code: 401,
			bearer: alterPayload(t, valid, func(c jwt.MapClaims) { c["sub"] = "system:serviceaccount:kube-system:admin" })},
		{name: "token signed by an unknown key", who: anonymous, method: "GET", url: secrets, code: 401,
			bearer: forge(t, valid, jwt.SigningMethodES256, otherKey, nil)},
		{name: "token of a ServiceAccount deleted and recreated", who: anonymous, method: "GET", url: secrets, code: 401, bearer: ghostTok},
		{name: "token bound to a deleted pod", who: anonymous, method: "GET", url: secrets, code: 401, bearer: podTok},
		{name: "OIDC token claiming system:admin", who: anonymous, method: "GET", url: secrets, code: 401,
			bearer: oidcToken(corp, "trustplane", "system:admin")},
		{name: "OIDC token claiming system:masters", who: anonymous, method: "GET", url: secrets, code: 401,
			bearer: oidcToken(corp, "trustplane", "mallory", "system:masters")},
		{name: "OIDC token for another audience", who: anonymous, method: "GET", url: secrets, code: 401,
			bearer: oidcToken(corp, "vault", "oscar")},
		{name: "OIDC token from an unlisted issuer", who: anonymous, method: "GET", url: secrets, code: 401,
			bearer: oidcToken(stranger, "trustplane", "oscar")},
		{name: "impersonation without permission", who: alice, method: "GET", url: secrets, code: 403, byAuthz: true,
			header: http.Header{"Impersonate-User": {"admin"}, "Impersonate-Group": {"system:cluster-admins"}}},
		{name: "role escalation", who: dana, method: "POST", url: ts.url + "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles", body: wildcardRole, code: 403},
		{name: "binding escalation", who: dana, method: "POST", url: ts.url + "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings", body: bindRoot, code: 403},
		{name: "namespaced binding of a wildcard role used outside its namespace", who: frank, method: "GET", url: secrets, code: 403, byAuthz: true},
		{name: "node reading another node's pod's Secret", who: n1, method: "GET", url: secrets + "/s-n2", code: 403, byAuthz: true},
		{name: "node updating another node", who: n1, method: "PATCH", url: ts.url + "/api/v1/nodes/n2", body: `{"metadata":{"labels":{"x":"y"}}}`,
			header: http.Header{"Content-Type": {"application/merge-patch+json"}}, code: 403}, // by NodeRestriction
	}
	ids := make([]string, len(attacks))
	for i, a := range attacks {
		id, code, st := send(t, a.who, a.method, a.url, a.bearer, a.header, []byte(a.body))
		if code != a.code {
			t.Errorf("%s: %d %s, want %d", a.name, code, st.Message, a.code)
		}
		if id == "" {
			t.Errorf("%s: no Audit-Id header", a.name)
		}
		ids[i] = id
	}

	events := map[string]int{}
	log := readAuditLog(t, ts.auditLog)
	for i, ev := range log {
		events[string(ev.AuditID)] = i
	}
	for i, a := range attacks {
		j, ok := events[ids[i]]
		if !ok {
			t.Errorf("%s: no audit event %q", a.name, ids[i])
			continue
		}
		ev := log[j]
		if ev.ResponseStatus == nil || int(ev.ResponseStatus.Code) != a.code {
			t.Errorf("%s: audit event status %+v, want %d", a.name, ev.ResponseStatus, a.code)
		}
		if a.code == http.StatusUnauthorized && ev.User.Username != "" {
			t.Errorf("%s: audit event user %q, want none", a.name, ev.User.Username)
		}
		if a.code == http.StatusForbidden && ev.User.Username == "" {
			t.Errorf("%s: audit event without the refused user", a.name)
		}
		if a.byAuthz && (ev.Annotations[filters.DecisionAnnotation] != "forbid" || ev.Annotations[filters.ReasonAnnotation] == "") {
			t.Errorf("%s: audit annotations %v, want the forbid decision and its reason", a.name, ev.Annotations)
		}
		if !a.byAuthz && a.code == http.StatusForbidden && (ev.ResponseStatus == nil || ev.ResponseStatus.Message == "") {
			t.Errorf("%s: audit event without the refusal's message", a.name)
		}
	}
	raw, err := os.ReadFile(ts.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range attacks {
		if payload := strings.Split(a.bearer, "."); len(payload) == 3 && bytes.Contains(raw, []byte(payload[1])) {
			t.Errorf("%s: the token is in the audit log", a.name)
		}
	}
}

// withOIDC configures the server with is as its one OIDC issuer, for
// audience trustplane, taking usernames and groups from the token as they
// are, so that the reserved system: names are refused by the server's own
// check and not by a prefix.
func withOIDC(t *testing.T, is *oidctest.Issuer) serverOption {
	t.Helper()
	ca := "      " + strings.ReplaceAll(strings.TrimSpace(is.CAPEM()), "\n", "\n      ")
	config := `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: ` + is.URL() + `
    audiences: [trustplane]
    certificateAuthority: |
` + ca + `
  claimMappings:
    username: {claim: sub, prefix: ""}
    groups: {claim: groups, prefix: ""}
`
	path := filepath.Join(t.TempDir(), "authentication-config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := oidc.Load(path, []string{DefaultServiceAccountIssuer})
	if err != nil {
		t.Fatal(err)
	}
	a, err := cfg.Authenticator(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) { c.OIDC = a }
}

// forge signs the claims of token, changed by edit when not nil, with
// method and key, keeping the token's kid.
func forge(t *testing.T, token string, method jwt.SigningMethod, key any, edit func(jwt.MapClaims)) string {
	t.Helper()
	claims := jwt.MapClaims{}
	parsed, _, err := jwt.NewParser().ParseUnverified(token, claims)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(claims)
	}
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = parsed.Header["kid"]
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// alterPayload changes the claims of token and keeps its signature.
func alterPayload(t *testing.T, token string, edit func(jwt.MapClaims)) string {
	t.Helper()
	parts := strings.Split(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	claims := jwt.MapClaims{}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	edit(claims)
	payload, err = json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	parts[1] = base64.RawURLEncoding.EncodeToString(payload)
	return strings.Join(parts, ".")
}

// send makes one request and returns its Audit-Id, status code and, for
// an error, its Status.
func send(t *testing.T, c *http.Client, method, url, bearer string, header http.Header, body []byte) (string, int, metav1.Status) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if len(body) > 0 && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var st metav1.Status
	if resp.StatusCode >= 400 {
		st = statusOf(t, resp)
	} else {
		resp.Body.Close()
	}
	return resp.Header.Get(filters.AuditIDHeader), resp.StatusCode, st
}

type unexpectedCode struct{ code int }

func (e *unexpectedCode) Error() string { return http.StatusText(e.code) }
