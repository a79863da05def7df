package apiserver

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The pipeline runs its filters in DESIGN.md's order.
func TestPipelineOrder(t *testing.T) {
	ts := startServer(t)
	var mu sync.Mutex
	var entered []string
	h := buildChain(http.HandlerFunc(ts.server.route), ts.server.pipeline(), func(name string) {
		mu.Lock()
		entered = append(entered, name)
		mu.Unlock()
	})
	certPEM, _ := ts.certificate(t, admin)
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, ts.url+"/api/v1/namespaces", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	want := []string{"recovery", "requestinfo", "authentication", "audit", "impersonation", "authorization", "limits"}
	if !slices.Equal(entered, want) {
		t.Errorf("filters ran in order %v, want %v", entered, want)
	}
}

func TestCRUDWithClientGo(t *testing.T) {
	ts := startServer(t)
	for _, contentType := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		t.Run(contentType, func(t *testing.T) {
			cfg := ts.restConfig(t, admin)
			cfg.ContentType = contentType
			cs := kubernetes.NewForConfigOrDie(cfg)
			ctx := testContext(t)
			ns := "crud-" + strings.ReplaceAll(strings.TrimPrefix(contentType, "application/"), ".", "-")
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != corev1.NamespaceActive || got.UID == "" || got.CreationTimestamp.IsZero() {
				t.Errorf("namespace %+v: want phase Active, a uid and a creation time", got)
			}

			cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(cm.Name, "cm-") || len(cm.Name) <= 3 {
				t.Errorf("generated name %q", cm.Name)
			}
			stale := cm.DeepCopy()
			cm.Data["k"] = "v2"
			updated, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if updated.ResourceVersion == cm.ResourceVersion || updated.UID != cm.UID {
				t.Errorf("update: rv %s→%s uid %s→%s", cm.ResourceVersion, updated.ResourceVersion, cm.UID, updated.UID)
			}
			stale.Data["k"] = "stale"
			if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
				t.Errorf("update with a stale resourceVersion: %v, want Conflict", err)
			}
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm.Name}}, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
				t.Errorf("duplicate create: %v, want AlreadyExists", err)
			}

			sec, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Labels: map[string]string{"app": "x"}}, StringData: nil, Data: map[string][]byte{"p": []byte("v")}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if sec.Type != corev1.SecretTypeOpaque {
				t.Errorf("secret type %q, want Opaque by default", sec.Type)
			}
			list, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=x"})
			if err != nil || len(list.Items) != 1 || list.ResourceVersion == "" {
				t.Errorf("list by label: %v %v", list, err)
			}
			list, err = cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name!=s"})
			if err != nil || len(list.Items) != 0 {
				t.Errorf("list by field: %v %v", list, err)
			}
			if _, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns}); err != nil {
				t.Errorf("list across namespaces: %v", err)
			}

			role, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}
			if binding, err = cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			binding.RoleRef.Name = "other"
			if _, err := cs.RbacV1().RoleBindings(ns).Update(ctx, binding, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
				t.Errorf("changing roleRef: %v, want Invalid", err)
			}
			if _, err := cs.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{}); err != nil {
				t.Errorf("bootstrap cluster role: %v", err)
			}

			if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			// The namespace controller empties it and finalizes it; none
			// runs here: finalized by hand, it goes with what is in it.
			terminating, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil || terminating.Status.Phase != corev1.NamespaceTerminating {
				t.Fatalf("namespace after delete: %+v %v, want Terminating", terminating, err)
			}
			terminating.Spec.Finalizers = nil
			if _, err := cs.CoreV1().Namespaces().Finalize(ctx, terminating, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, err := range []error{
				func() error { _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); return err }(),
				func() error { _, err := cs.CoreV1().Secrets(ns).Get(ctx, "s", metav1.GetOptions{}); return err }(),
				func() error { _, err := cs.RbacV1().Roles(ns).Get(ctx, "r", metav1.GetOptions{}); return err }(),
			} {
				if !apierrors.IsNotFound(err) {
					t.Errorf("after deleting the namespace: %v, want NotFound", err)
				}
			}
		})
	}
}

func TestDeleteSemantics(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wrongUID := cm.UID + "x"
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "d", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrongUID}}); !apierrors.IsConflict(err) {
		t.Errorf("delete with a wrong uid precondition: %v, want Conflict", err)
	}
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "d", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("dry-run delete: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "d", metav1.GetOptions{}); err != nil {
		t.Errorf("dry-run delete removed the object: %v", err)
	}
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "d", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &cm.ResourceVersion}}); err != nil {
		t.Errorf("delete: %v", err)
	}
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "d", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("second delete: %v, want NotFound", err)
	}
	for _, ns := range []string{"default", "kube-system"} {
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("delete namespace %s: %v, want Forbidden", ns, err)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps("nope").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("create in a missing namespace: %v, want NotFound", err)
	}
}

// RBAC is read live: a grant or a revocation is in force for the next
// request.
func TestRBACIsLive(t *testing.T) {
	ts := startServer(t)
	adminCS := ts.clientset(t, admin)
	alice := ts.clientset(t, &identity{user: "alice"})
	ctx := testContext(t)
	if _, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("alice before any grant: %v, want Forbidden", err)
	}
	if _, err := adminCS.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := adminCS.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-reader"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice allowed after the grant", func() error {
		_, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		return err
	})
	if _, err := alice.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice in another namespace: %v, want Forbidden", err)
	}
	if _, err := alice.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice listing secrets: %v, want Forbidden", err)
	}
	if err := adminCS.RbacV1().RoleBindings("default").Delete(ctx, "alice", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alice forbidden after the revocation", func() error {
		if _, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			return fmt.Errorf("got %v, want Forbidden", err)
		}
		return nil
	})
}

// eventually polls check until it succeeds, failing the test after 20
// seconds. RBAC changes take effect once the watch cache has the event;
// policy changes once the policy directory is read again.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// statusOf decodes a metav1.Status response body.
func statusOf(t *testing.T, resp *http.Response) metav1.Status {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("response %d is not a Status: %q", resp.StatusCode, body)
	}
	return st
}

func TestBadInputGetsClear4xx(t *testing.T) {
	ts := startServer(t)
	c := ts.httpClient(t, admin)
	cmURL := ts.url + "/api/v1/namespaces/default/configmaps"
	big := bytes.Repeat([]byte("a"), 4<<20)
	tests := []struct {
		name, method, url, contentType string
		body                           []byte
		code                           int
		reason                         metav1.StatusReason
	}{
		{"malformed JSON", "POST", cmURL, "application/json", []byte(`{"kind":`), 400, metav1.StatusReasonBadRequest},
		{"malformed YAML", "POST", cmURL, "application/yaml", []byte("kind: [\n"), 400, metav1.StatusReasonBadRequest},
		{"malformed protobuf", "POST", cmURL, "application/vnd.kubernetes.protobuf", []byte("k8s\x00\x0a\xff\xff"), 400, metav1.StatusReasonBadRequest},
		{"empty body", "POST", cmURL, "application/json", nil, 400, metav1.StatusReasonBadRequest},
		{"wrong kind for the URL", "POST", cmURL, "application/json", []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`), 400, metav1.StatusReasonBadRequest},
		{"kind the server does not know", "POST", cmURL, "application/json", []byte(`{"apiVersion":"v9","kind":"Gadget","metadata":{"name":"x"}}`), 400, metav1.StatusReasonBadRequest},
		{"namespace mismatch", "POST", cmURL, "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"kube-system"}}`), 400, metav1.StatusReasonBadRequest},
		{"unknown field, strict", "POST", cmURL + "?fieldValidation=Strict", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"bogus":1}`), 400, metav1.StatusReasonBadRequest},
		{"resourceVersion on create", "POST", cmURL, "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","resourceVersion":"5"}}`), 400, metav1.StatusReasonBadRequest},
		{"invalid name", "POST", cmURL, "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Not_Valid"}}`), 422, metav1.StatusReasonInvalid},
		{"no name", "POST", cmURL, "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`), 422, metav1.StatusReasonInvalid},
		{"invalid label", "POST", cmURL, "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a b":"c"}}}`), 422, metav1.StatusReasonInvalid},
		{"invalid data key", "POST", cmURL, "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a/b":"c"}}`), 422, metav1.StatusReasonInvalid},
		{"body over 3 MiB", "POST", cmURL, "application/json", big, 413, metav1.StatusReasonRequestEntityTooLarge},
		{"unsupported content type", "POST", cmURL, "text/plain", []byte("hello"), 415, metav1.StatusReasonUnsupportedMediaType},
		{"unknown resource", "GET", ts.url + "/api/v1/namespaces/default/gadgets", "", nil, 404, metav1.StatusReasonNotFound},
		{"unknown group", "GET", ts.url + "/apis/example.com/v1/things", "", nil, 404, metav1.StatusReasonNotFound},
		{"unknown subresource", "GET", ts.url + "/api/v1/namespaces/default/configmaps/x/status", "", nil, 404, metav1.StatusReasonNotFound},
		{"POST to an object", "POST", cmURL + "/x", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`), 405, metav1.StatusReasonMethodNotAllowed},
		{"patch of a missing object", "PATCH", cmURL + "/x", "application/merge-patch+json", []byte(`{}`), 404, metav1.StatusReasonNotFound},
		{"unknown patch type", "PATCH", cmURL + "/x", "application/json", []byte(`{}`), 415, metav1.StatusReasonUnsupportedMediaType},
		{"bad label selector", "GET", cmURL + "?labelSelector=a%20in%20(", "", nil, 400, metav1.StatusReasonBadRequest},
		{"unknown field label", "GET", cmURL + "?fieldSelector=spec.bogus%3Dx", "", nil, 400, metav1.StatusReasonBadRequest},
		{"bad dryRun", "POST", cmURL + "?dryRun=Some", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`), 422, metav1.StatusReasonInvalid},
		{"name mismatch on update", "PUT", cmURL + "/y", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`), 400, metav1.StatusReasonBadRequest},
		{"update of a missing object", "PUT", cmURL + "/y", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y"}}`), 404, metav1.StatusReasonNotFound},
		{"bad delete options", "DELETE", cmURL + "/x", "application/json", []byte(`{"propagationPolicy":"Sideways"}`), 422, metav1.StatusReasonInvalid},
		{"cluster-scoped under a namespace", "GET", ts.url + "/apis/rbac.authorization.k8s.io/v1/namespaces/default/clusterroles", "", nil, 404, metav1.StatusReasonNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, tt.url, bytes.NewReader(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			st := statusOf(t, resp)
			if resp.StatusCode != tt.code || st.Code != int32(tt.code) || st.Reason != tt.reason {
				t.Errorf("got %d %s (%q), want %d %s", resp.StatusCode, st.Reason, st.Message, tt.code, tt.reason)
			}
		})
	}
	// Nothing above disturbed what is stored.
	cs := ts.clientset(t, admin)
	if _, err := cs.CoreV1().Namespaces().Get(testContext(t), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("after bad input: %v", err)
	}
	list, err := cs.CoreV1().ConfigMaps("default").List(testContext(t), metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("bad input stored something: %v %v", list, err)
	}
}

// stringData is write-only, as in kube-apiserver: merged into data, never
// stored or served.
func TestSecretStringData(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sd"}, StringData: map[string]string{"password": "s3cret"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Secrets("default").Get(ctx, "sd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Data["password"]) != "s3cret" || len(got.StringData) != 0 || got.Type != corev1.SecretTypeOpaque {
		t.Errorf("secret data %v, stringData %v, type %q: want password in data only, type Opaque", got.Data, got.StringData, got.Type)
	}
}
