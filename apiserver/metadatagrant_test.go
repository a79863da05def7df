package apiserver

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
)

// TestSecretsMetadataGrant tries to read and change a Secret's data with a
// grant on secrets/metadata only, through every verb it allows and every
// format a client can ask for: every answer is metadata, and only metadata
// changes are taken. A grant on secrets itself is unchanged.
func TestSecretsMetadataGrant(t *testing.T) {
	ts := startServer(t)
	ctx := testContext(t)
	cs := ts.clientset(t, admin)
	const value = "s3cr3t-never-shown"
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: map[string]string{"app": "db"},
			// What kubectl apply leaves: the whole object, data included.
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: `{"apiVersion":"v1","data":{"password":"czNjcjN0LW5ldmVyLXNob3du"},"kind":"Secret"}`}},
		Data: map[string][]byte{"password": []byte(value)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "secret-owners"},
		Rules: []rbacv1.PolicyRule{{
			Verbs: []string{"get", "list", "watch", "patch", "delete", "deletecollection", "create", "update"}, APIGroups: []string{""},
			Resources: []string{"secrets/metadata"},
		}},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "secret-owners"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "owner-tracker"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tracker := &identity{user: "owner-tracker"}
	raw := ts.httpClient(t, tracker)

	do := func(t *testing.T, method, path, accept, contentType, body string) (int, string) {
		t.Helper()
		var header []string
		if accept != "" {
			header = append(header, "Accept", accept)
		}
		if contentType != "" {
			header = append(header, "Content-Type", contentType)
		}
		resp, got := fetchWithBody(t, raw, method, ts.url+path, strings.NewReader(body), header...)
		return resp.StatusCode, string(got)
	}
	// notShown checks that a body shows the Secret's name but none of its
	// data, whatever form it takes.
	notShown := func(t *testing.T, code int, body, kind string) {
		t.Helper()
		if code != http.StatusOK {
			t.Fatalf("answered %d: %s", code, body)
		}
		if strings.Contains(body, "cGFzc3dvcmQ") || strings.Contains(body, "czNjcjN0") || strings.Contains(body, value) || strings.Contains(body, `"data"`) ||
			strings.Contains(body, "password") || strings.Contains(body, "last-applied") || strings.Contains(body, "anagedFields") {
			t.Fatalf("the Secret's data was answered: %s", body)
		}
		if !strings.Contains(body, kind) || !strings.Contains(body, "db") {
			t.Fatalf("want a %s of db; got %s", kind, body)
		}
	}

	t.Run("reads", func(t *testing.T) {
		const secret, secrets = "/api/v1/namespaces/default/secrets/db", "/api/v1/namespaces/default/secrets"
		for _, c := range []struct {
			name, path, accept, kind string
		}{
			{"get as JSON", secret, "application/json", `"kind":"PartialObjectMetadata"`},
			{"get with no Accept", secret, "", `"kind":"PartialObjectMetadata"`},
			{"get as YAML", secret, "application/yaml", "kind: PartialObjectMetadata"},
			{"get as protobuf", secret, "application/vnd.kubernetes.protobuf", "PartialObjectMetadata"},
			{"get as a Table with the object", secret + "?includeObject=Object", "application/json;as=Table;g=meta.k8s.io;v=v1", `"kind":"PartialObjectMetadata"`},
			{"list as JSON", secrets, "application/json", `"kind":"PartialObjectMetadataList"`},
			{"list across namespaces", "/api/v1/secrets", "application/json", `"kind":"PartialObjectMetadataList"`},
			{"list as a Table with the objects", secrets + "?includeObject=Object", "application/json;as=Table;g=meta.k8s.io;v=v1", `"kind":"PartialObjectMetadataList"`},
			{"list as metadata", secrets, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", `"kind":"PartialObjectMetadataList"`},
		} {
			t.Run(c.name, func(t *testing.T) {
				code, body := do(t, http.MethodGet, c.path, c.accept, "", "")
				notShown(t, code, body, c.kind)
			})
		}
	})

	t.Run("watch", func(t *testing.T) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.url+"/api/v1/namespaces/default/secrets?watch=1&timeoutSeconds=5", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := raw.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		notShown(t, resp.StatusCode, line, `"kind":"PartialObjectMetadata"`)
	})

	// A field selector on anything but the name and namespace would tell
	// the holder of the grant what it does not show: the Secret's type,
	// by the Secrets selected, or deleted.
	t.Run("field selectors", func(t *testing.T) {
		for _, c := range []struct {
			name, method, path string
			want               int
		}{
			{"list by type", http.MethodGet, "/api/v1/namespaces/default/secrets?fieldSelector=type%3DOpaque", http.StatusForbidden},
			{"list by type, not equal", http.MethodGet, "/api/v1/secrets?fieldSelector=type!%3Dkubernetes.io%2Ftls", http.StatusForbidden},
			{"list by name and type", http.MethodGet, "/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3Ddb,type%3DOpaque", http.StatusForbidden},
			{"watch by type", http.MethodGet, "/api/v1/namespaces/default/secrets?watch=1&timeoutSeconds=1&fieldSelector=type%3DOpaque", http.StatusForbidden},
			{"delete the collection by type", http.MethodDelete, "/api/v1/namespaces/default/secrets?fieldSelector=type%3Dexample.com%2Fnone", http.StatusForbidden},
			{"list by name", http.MethodGet, "/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3Ddb", http.StatusOK},
			{"list by namespace", http.MethodGet, "/api/v1/secrets?fieldSelector=metadata.namespace%3Ddefault", http.StatusOK},
		} {
			t.Run(c.name, func(t *testing.T) {
				code, body := do(t, c.method, c.path, "application/json", "", "")
				if code != c.want {
					t.Fatalf("answered %d, want %d: %s", code, c.want, body)
				}
				if c.want == http.StatusOK {
					notShown(t, code, body, `"kind":"PartialObjectMetadataList"`)
				} else if !strings.Contains(body, "may select by metadata.name and metadata.namespace only") {
					t.Fatalf("the refusal does not say why: %s", body)
				}
			})
		}
		// The administrator, with a grant on secrets, still selects by
		// type.
		l, err := cs.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{FieldSelector: "type=Opaque"})
		if err != nil || len(l.Items) == 0 {
			t.Fatalf("the admin's list by type: %v, %d items", err, len(l.Items))
		}
	})

	md, err := metadata.NewForConfig(ts.restConfig(t, tracker))
	if err != nil {
		t.Fatal(err)
	}
	secrets := md.Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace("default")

	t.Run("metadata client", func(t *testing.T) {
		l, err := secrets.List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) != 1 {
			t.Fatalf("list: %v, %+v", err, l)
		}
		p, err := secrets.Patch(ctx, "db", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/hold"],"labels":{"owner":"tracked"}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("a patch of metadata: %v", err)
		}
		if p.Labels["owner"] != "tracked" {
			t.Fatalf("patched: %+v", p.ObjectMeta)
		}
	})

	t.Run("patches beyond metadata", func(t *testing.T) {
		for _, c := range []struct{ name, contentType, body string }{
			{"data by merge patch", string(types.MergePatchType), `{"data":{"password":"b3RoZXI="}}`},
			{"stringData", string(types.MergePatchType), `{"stringData":{"password":"other"}}`},
			{"data by JSON patch", string(types.JSONPatchType), `[{"op":"remove","path":"/data/password"}]`},
			{"type by strategic merge patch", string(types.StrategicMergePatchType), `{"type":"kubernetes.io/tls"}`},
			{"immutable", string(types.MergePatchType), `{"immutable":true}`},
			{"data by apply", string(types.ApplyYAMLPatchType), "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: b3RoZXI=\n"},
			// Guesses that, right, would change nothing or pass: an
			// answer that differed from a wrong guess's would tell.
			{"data set to what it is", string(types.MergePatchType), `{"data":{"password":"czNjcjN0LW5ldmVyLXNob3du"}}`},
			{"a test of the data", string(types.JSONPatchType), `[{"op":"test","path":"/data/password","value":"czNjcjN0LW5ldmVyLXNob3du"},{"op":"add","path":"/metadata/labels/guessed","value":"yes"}]`},
			{"data copied into metadata", string(types.JSONPatchType), `[{"op":"copy","from":"/data/password","path":"/metadata/annotations/leak"}]`},
			{"data applied as it is", string(types.ApplyYAMLPatchType), "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: czNjcjN0LW5ldmVyLXNob3du\n"},
			{"a replace of the whole object", string(types.StrategicMergePatchType), `{"$patch":"replace","metadata":{"name":"db"}}`},
			// The metadata that holds or names the data.
			{"a test of the last applied configuration", string(types.JSONPatchType), `[{"op":"test","path":"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration","value":"{}"}]`},
			{"the last applied configuration copied", string(types.JSONPatchType), `[{"op":"copy","from":"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration","path":"/metadata/labels/x"}]`},
			{"a test of the annotations whole", string(types.JSONPatchType), `[{"op":"test","path":"/metadata/annotations","value":{}}]`},
			{"a test of the metadata whole", string(types.JSONPatchType), `[{"op":"test","path":"/metadata","value":{}}]`},
			{"the last applied configuration set", string(types.MergePatchType), `{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}}}`},
			{"managed fields forged", string(types.MergePatchType), `{"metadata":{"managedFields":[{"manager":"kubectl","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:password":{}}}}]}}`},
			{"managed fields by JSON patch", string(types.JSONPatchType), `[{"op":"remove","path":"/metadata/managedFields/0"}]`},
		} {
			t.Run(c.name, func(t *testing.T) {
				path := "/api/v1/namespaces/default/secrets/db"
				if c.contentType == string(types.ApplyYAMLPatchType) {
					path += "?fieldManager=tracker&force=true"
				}
				code, body := do(t, http.MethodPatch, path, "application/json", c.contentType, c.body)
				if code != http.StatusForbidden {
					t.Fatalf("answered %d, want 403: %s", code, body)
				}
			})
		}
		code, body := do(t, http.MethodPatch, "/api/v1/namespaces/default/secrets/new?fieldManager=tracker", "application/json", string(types.ApplyYAMLPatchType),
			"apiVersion: v1\nkind: Secret\nmetadata:\n  name: new\ndata:\n  password: b3RoZXI=\n")
		if code != http.StatusForbidden {
			t.Fatalf("an apply that creates a Secret answered %d, want 403: %s", code, body)
		}
		s, err := cs.CoreV1().Secrets("default").Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(s.Data["password"]) != value || s.Type != corev1.SecretTypeOpaque || s.Immutable != nil {
			t.Fatalf("the Secret changed: %+v", s)
		}
		if _, err := cs.CoreV1().Secrets("default").Get(ctx, "new", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the applied Secret: %v", err)
		}
	})

	t.Run("no other write, no grant on secrets", func(t *testing.T) {
		// The role names create and update of secrets/metadata: they
		// allow nothing on Secrets.
		trackerCS := ts.clientset(t, tracker)
		if _, err := trackerCS.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("create: %v", err)
		}
		code, body := do(t, http.MethodPut, "/api/v1/namespaces/default/secrets/db", "application/json", "application/json",
			`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"data":{"password":"b3RoZXI="}}`)
		if code != http.StatusForbidden {
			t.Fatalf("update answered %d: %s", code, body)
		}
		code, body = do(t, http.MethodGet, "/api/v1/namespaces/default/secrets/db/metadata", "application/json", "", "")
		if code != http.StatusNotFound && code != http.StatusForbidden {
			t.Fatalf("the metadata subresource itself answered %d: %s", code, body)
		}
	})

	t.Run("delete", func(t *testing.T) {
		// The finalizer the patch added holds it: the answer is the
		// object being deleted, as metadata.
		code, body := do(t, http.MethodDelete, "/api/v1/namespaces/default/secrets/db", "application/json", "", "")
		notShown(t, code, body, `"kind":"PartialObjectMetadata"`)
		if _, err := secrets.Patch(ctx, "db", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Secrets("default").Get(ctx, "db", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after its finalizer was removed: %v", err)
		}
	})

	t.Run("a grant on secrets is unchanged", func(t *testing.T) {
		if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "whole"}, Data: map[string][]byte{"k": []byte(value)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		s, err := cs.CoreV1().Secrets("default").Get(ctx, "whole", metav1.GetOptions{})
		if err != nil || !bytes.Equal(s.Data["k"], []byte(value)) {
			t.Fatalf("the admin's read: %v, %+v", err, s)
		}
	})
}
