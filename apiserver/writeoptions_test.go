package apiserver

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A dryRun value other than All is refused on every write as
// kube-apiserver refuses it: 422 Invalid on the verb's options kind, with
// ValidateDryRun's words, before anything is decoded, admitted or stored.
// A delete takes its options from the body too.
func TestBadDryRun(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	c := ts.httpClient(t, admin)
	ctx := testContext(t)

	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, testDeployment("d"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := ts.snapshot(t)

	const (
		core = "/api/v1/namespaces/default"
		apps = "/apis/apps/v1/namespaces/default"
		j    = "application/json"
	)
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"k":"changed"}}`
	scale := `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"d"},"spec":{"replicas":5}}`
	tests := []struct {
		name, method, path, contentType, body string
		kind                                  string // of the options refused
	}{
		{"create", "POST", core + "/configmaps", j, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new"}}`, "CreateOptions"},
		{"update", "PUT", core + "/configmaps/cm", j, cm, "UpdateOptions"},
		{"json patch", "PATCH", core + "/configmaps/cm", "application/json-patch+json", `[{"op":"replace","path":"/data/k","value":"changed"}]`, "PatchOptions"},
		{"merge patch", "PATCH", core + "/configmaps/cm", "application/merge-patch+json", `{"data":{"k":"changed"}}`, "PatchOptions"},
		{"strategic merge patch", "PATCH", core + "/configmaps/cm", "application/strategic-merge-patch+json", `{"data":{"k":"changed"}}`, "PatchOptions"},
		{"apply", "PATCH", core + "/configmaps/cm?fieldManager=test", "application/apply-patch+yaml", cm, "PatchOptions"},
		{"apply that would create", "PATCH", core + "/configmaps/new?fieldManager=test", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new"}}`, "PatchOptions"},
		{"delete", "DELETE", core + "/configmaps/cm", "", "", "DeleteOptions"},
		{"deletecollection", "DELETE", core + "/configmaps", "", "", "DeleteOptions"},
		{"status update", "PUT", core + "/pods/p/status", j, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"status":{"phase":"Running"}}`, "UpdateOptions"},
		{"status patch", "PATCH", core + "/pods/p/status", "application/merge-patch+json", `{"status":{"phase":"Running"}}`, "PatchOptions"},
		{"scale update", "PUT", apps + "/deployments/d/scale", j, scale, "UpdateOptions"},
		{"scale patch", "PATCH", apps + "/deployments/d/scale", "application/merge-patch+json", `{"spec":{"replicas":5}}`, "PatchOptions"},
		{"binding", "POST", core + "/pods/p/binding", j, `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"},"target":{"kind":"Node","name":"n1"}}`, "CreateOptions"},
		{"token", "POST", core + "/serviceaccounts/sa/token", j, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`, "CreateOptions"},
		{"finalize", "PUT", "/api/v1/namespaces/ns/finalize", j, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns"},"spec":{"finalizers":[]}}`, "UpdateOptions"},
		{"self subject access review", "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", j, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`, "CreateOptions"},
		{"token review", "POST", "/apis/authentication.k8s.io/v1/tokenreviews", j, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"x"}}`, "CreateOptions"},
	}
	for _, tt := range tests {
		for _, value := range []string{"true", "Some", ""} {
			t.Run(fmt.Sprintf("%s/%q", tt.name, value), func(t *testing.T) {
				url := ts.url + tt.path
				if strings.Contains(url, "?") {
					url += "&dryRun=" + value
				} else {
					url += "?dryRun=" + value
				}
				resp := do(t, c, tt.method, url, tt.contentType, tt.body)
				st := statusOf(t, resp)
				want := fmt.Sprintf(`%s.meta.k8s.io "" is invalid: dryRun: Unsupported value: [%q]: supported values: "All"`, tt.kind, value)
				if resp.StatusCode != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid || st.Message != want {
					t.Errorf("got %d %s %q, want 422 Invalid %q", resp.StatusCode, st.Reason, st.Message, want)
				}
				if d := st.Details; d == nil || d.Kind != tt.kind || d.Group != metav1.GroupName || len(d.Causes) != 1 || d.Causes[0].Field != "dryRun" || d.Causes[0].Type != metav1.CauseTypeFieldValueNotSupported {
					t.Errorf("details %+v, want kind %s, group %s, one NotSupported cause on dryRun", d, tt.kind, metav1.GroupName)
				}
			})
		}
	}

	t.Run("DeleteOptions body", func(t *testing.T) {
		for _, path := range []string{core + "/configmaps/cm", core + "/configmaps"} {
			resp := do(t, c, "DELETE", ts.url+path, j, `{"apiVersion":"meta.k8s.io/v1","kind":"DeleteOptions","dryRun":["All","Some"]}`)
			st := statusOf(t, resp)
			want := `DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["All","Some"]: supported values: "All"`
			if resp.StatusCode != http.StatusUnprocessableEntity || st.Message != want {
				t.Errorf("DELETE %s: %d %q, want 422 %q", path, resp.StatusCode, st.Message, want)
			}
		}
	})

	if after := ts.snapshot(t); after != before {
		t.Errorf("a refused dry run changed what is stored:\nbefore %s\nafter  %s", before, after)
	}

	// All, named any number of times, is a dry run, as in kube.
	resp := do(t, c, "POST", ts.url+core+"/configmaps?dryRun=All&dryRun=All", j, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new"}}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("create with dryRun=All twice: %d, want 201", resp.StatusCode)
	}
	if after := ts.snapshot(t); after != before {
		t.Errorf("a dry run changed what is stored:\nbefore %s\nafter  %s", before, after)
	}
}

// Every problem with a write's options is reported at once, in one 422,
// as kube's ValidateXOptions list them; force belongs to apply alone.
func TestWriteOptionsRefused(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	c := ts.httpClient(t, admin)
	ctx := testContext(t)
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const cms = "/api/v1/namespaces/default/configmaps"
	tests := []struct {
		name, method, path, contentType, body string
		code                                  int
		message                               string
	}{
		{"create, two problems", "POST", cms + "?dryRun=Some&fieldValidation=strict", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new"}}`, 422,
			`CreateOptions.meta.k8s.io "" is invalid: [dryRun: Unsupported value: ["Some"]: supported values: "All", fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"]`},
		{"update, two problems", "PUT", cms + "/cm?dryRun=Some&fieldValidation=strict", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`, 422,
			`UpdateOptions.meta.k8s.io "" is invalid: [dryRun: Unsupported value: ["Some"]: supported values: "All", fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"]`},
		{"apply without a field manager, bad dryRun", "PATCH", cms + "/cm?dryRun=Some", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"ConfigMap"}`, 422,
			`PatchOptions.meta.k8s.io "" is invalid: [fieldManager: Required value: is required for apply patch, dryRun: Unsupported value: ["Some"]: supported values: "All"]`},
		{"force on a merge patch", "PATCH", cms + "/cm?force=true", "application/merge-patch+json", `{}`, 422,
			`PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`},
		{"force=false on a merge patch", "PATCH", cms + "/cm?force=false", "application/merge-patch+json", `{}`, 422,
			`PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`},
		{"force that is not a boolean", "PATCH", cms + "/cm?fieldManager=m&force=maybe", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"ConfigMap"}`, 400,
			`force must be true or false, got "maybe"`},
		{"delete, orphanDependents and propagationPolicy", "DELETE", cms + "/cm", "application/json", `{"orphanDependents":true,"propagationPolicy":"Orphan","dryRun":["Some"]}`, 422,
			`DeleteOptions.meta.k8s.io "" is invalid: [propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set, dryRun: Unsupported value: ["Some"]: supported values: "All"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := do(t, c, tt.method, ts.url+tt.path, tt.contentType, tt.body)
			if st := statusOf(t, resp); resp.StatusCode != tt.code || st.Message != tt.message {
				t.Errorf("got %d %q\nwant %d %q", resp.StatusCode, st.Message, tt.code, tt.message)
			}
		})
	}
}

// do sends one request with a body.
func do(t *testing.T, c *http.Client, method, url, contentType, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// snapshot is the resourceVersion and name of every object of the
// namespaces, configmaps, pods, deployments and serviceaccounts: any write
// changes it.
func (ts *testServer) snapshot(t *testing.T) string {
	t.Helper()
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	var b strings.Builder
	add := func(kind string, items []metav1.Object, err error) {
		if err != nil {
			t.Fatalf("list %s: %v", kind, err)
		}
		for _, o := range items {
			fmt.Fprintf(&b, "%s/%s/%s@%s ", kind, o.GetNamespace(), o.GetName(), o.GetResourceVersion())
		}
	}
	ns, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	add("namespace", accessors(ns.Items), err)
	cms, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	add("configmap", accessors(cms.Items), err)
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	add("pod", accessors(pods.Items), err)
	deps, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	add("deployment", accessors(deps.Items), err)
	sas, err := cs.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{})
	add("serviceaccount", accessors(sas.Items), err)
	return b.String()
}

// accessors is the metadata of each item of a list.
func accessors[T any, P interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = P(&items[i])
	}
	return out
}
