package apiserver

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fieldValidation on POST and PUT, as kube-apiserver answers it: with no
// parameter or Warn the object is written and each unknown field or
// duplicate key of a JSON or YAML body is a Warning header; Ignore writes
// it silently; Strict refuses it (400) and writes nothing.
func TestWriteFieldValidation(t *testing.T) {
	ts := startServer(t)
	c := ts.httpClient(t, admin)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)

	// Each body names the label a twice and has a field ConfigMaps lack.
	bodies := []struct {
		contentType, body string
		problems          []string
	}{
		{
			contentType: "application/json",
			body:        `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","labels":{"a":"1","a":"2"}},"bogus":1}`,
			problems:    []string{`duplicate field "metadata.labels.a"`, `unknown field "bogus"`},
		},
		{
			contentType: "application/yaml",
			body:        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  labels:\n    a: \"1\"\n    a: \"2\"\nbogus: 1\n",
			problems:    []string{`line 7: key "a" already set in map`, `unknown field "bogus"`},
		},
	}
	n := 0
	for _, method := range []string{http.MethodPost, http.MethodPut} {
		for _, b := range bodies {
			for _, validation := range []string{"", metav1.FieldValidationWarn, metav1.FieldValidationIgnore, metav1.FieldValidationStrict} {
				t.Run(fmt.Sprintf("%s/%s/%q", method, b.contentType, validation), func(t *testing.T) {
					n++
					name := fmt.Sprintf("fv-%d", n)
					url := ts.url + "/api/v1/namespaces/default/configmaps"
					wantCode := http.StatusCreated
					var before *corev1.ConfigMap
					if method == http.MethodPut {
						var err error
						if before, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
							t.Fatal(err)
						}
						url += "/" + name
						wantCode = http.StatusOK
					}
					if validation != "" {
						url += "?fieldValidation=" + validation
					}
					req, _ := http.NewRequestWithContext(ctx, method, url, strings.NewReader(fmt.Sprintf(b.body, name)))
					req.Header.Set("Content-Type", b.contentType)
					resp, err := c.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					warnings := resp.Header.Values("Warning")
					stored, getErr := cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})

					if validation == metav1.FieldValidationStrict {
						st := statusOf(t, resp)
						want := `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: `
						if resp.StatusCode != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest || !strings.HasPrefix(st.Message, want) {
							t.Errorf("%d %s %q, want 400 BadRequest starting %q", resp.StatusCode, st.Reason, st.Message, want)
						}
						for _, p := range b.problems {
							if !strings.Contains(st.Message, p) {
								t.Errorf("message %q does not name %s", st.Message, p)
							}
						}
						switch {
						case method == http.MethodPost && !apierrors.IsNotFound(getErr):
							t.Errorf("a refused create stored the object: %v", getErr)
						case method == http.MethodPut && (getErr != nil || stored.ResourceVersion != before.ResourceVersion):
							t.Errorf("a refused update changed the object: %v", getErr)
						}
						return
					}
					resp.Body.Close()
					if resp.StatusCode != wantCode {
						t.Fatalf("status %d, want %d", resp.StatusCode, wantCode)
					}
					var want []string
					if validation != metav1.FieldValidationIgnore {
						for _, p := range b.problems {
							want = append(want, "299 - "+strconv.Quote(p))
						}
					}
					if !slices.Equal(warnings, want) {
						t.Errorf("Warning headers %q, want %q", warnings, want)
					}
					if getErr != nil || stored.Labels["a"] != "2" {
						t.Errorf("stored %v, %v; want label a=2, the last of the duplicates", stored, getErr)
					}
				})
			}
		}
	}
}

// A fieldValidation value kube-apiserver does not know is refused as kube
// refuses it, 422 Invalid naming the write's options, before the body is
// looked at, on every POST and PUT: objects, subresources and reviews.
func TestWriteFieldValidationValues(t *testing.T) {
	ts := startServer(t)
	c := ts.httpClient(t, admin)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, testDeployment("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const (
		cm     = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`
		create = `CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: %q: supported values: "", "Ignore", "Strict", "Warn"`
		update = `UpdateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: %q: supported values: "", "Ignore", "Strict", "Warn"`
	)
	tests := []struct {
		name, method, path, body, value, message string
	}{
		{"create", "POST", "/api/v1/namespaces/default/configmaps", cm, "strict", create},
		{"create, another case", "POST", "/api/v1/namespaces/default/configmaps", cm, "WARN", create},
		{"create, unknown", "POST", "/api/v1/namespaces/default/configmaps", cm, "Loose", create},
		{"create, undecodable body", "POST", "/api/v1/namespaces/default/configmaps", `{"kind":`, "strict", create},
		{"update", "PUT", "/api/v1/namespaces/default/configmaps/cm", cm, "ignore", update},
		{"status update", "PUT", "/apis/apps/v1/namespaces/default/deployments/web/status", `{}`, "strict", update},
		{"scale update", "PUT", "/apis/apps/v1/namespaces/default/deployments/web/scale", `{}`, "strict", update},
		{"review", "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", `{}`, "strict", create},
		{"token", "POST", "/api/v1/namespaces/default/serviceaccounts/default/token", `{}`, "strict", create},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(ctx, tt.method, ts.url+tt.path+"?fieldValidation="+tt.value, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			st := statusOf(t, resp)
			if want := fmt.Sprintf(tt.message, tt.value); resp.StatusCode != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid || st.Message != want {
				t.Errorf("%d %s %q, want 422 Invalid %q", resp.StatusCode, st.Reason, st.Message, want)
			}
		})
	}
}

// DeleteOptions are decoded as kube-apiserver decodes them: a field they
// lack is dropped, not refused.
func TestDeleteOptionsIgnoreUnknownFields(t *testing.T) {
	ts := startServer(t)
	c := ts.httpClient(t, admin)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	body := `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background","bogus":1}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, ts.url+"/api/v1/namespaces/default/configmaps/gone", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("DELETE with an unknown field in its DeleteOptions: %d, want 200", resp.StatusCode)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the delete: %v, want NotFound", err)
	}
}

// A DELETE takes its options from its DeleteOptions body when it has one,
// the query's then counting for nothing, and from the query when it has
// none, as kube-apiserver's handler reads them. A negative grace period is
// 1, as kube's rest.BeforeDelete makes it: a pod on a node is marked to go
// within a second, not removed.
func TestDeleteOptionsFromBodyOrQuery(t *testing.T) {
	ts := startServer(t)
	c := ts.httpClient(t, admin)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	const (
		configMap   = "configmap"
		pod         = "pod"         // on no node
		boundPod    = "bound pod"   // on a node: a delete waits for its node agent
		terminating = "terminating" // a bound pod deleted already, with 30s to go
	)
	tests := []struct {
		name, object, query, body string // body "": none
		code                      int
		want                      string // "gone", "kept" or "grace N": terminating with N seconds
	}{
		{name: "a body's dryRun", object: configMap, body: `{"dryRun":["All"]}`, code: 200, want: "kept"},
		{name: "the query's dryRun without a body", object: configMap, query: "dryRun=All", code: 200, want: "kept"},
		{name: "the query's dryRun under a body", object: configMap, query: "dryRun=All", body: `{}`, code: 200, want: "gone"},
		{name: "the query's propagationPolicy without a body", object: configMap, query: "propagationPolicy=Sideways", code: 422, want: "kept"},
		{name: "the query's propagationPolicy under a body", object: configMap, query: "propagationPolicy=Sideways", body: `{"kind":"DeleteOptions","apiVersion":"v1"}`, code: 200, want: "gone"},
		{name: "the query's gracePeriodSeconds not a number", object: configMap, query: "gracePeriodSeconds=soon", code: 400, want: "kept"},
		{name: "the query's gracePeriodSeconds without a body", object: boundPod, query: "gracePeriodSeconds=5", code: 200, want: "grace 5"},
		{name: "the query's gracePeriodSeconds under a body", object: boundPod, query: "gracePeriodSeconds=0", body: `{"gracePeriodSeconds":7}`, code: 200, want: "grace 7"},
		{name: "the query's gracePeriodSeconds under a body without one", object: boundPod, query: "gracePeriodSeconds=0", body: `{"propagationPolicy":"Background"}`, code: 200, want: "grace 30"},
		{name: "a negative gracePeriodSeconds in the body", object: boundPod, body: `{"gracePeriodSeconds":-1}`, code: 200, want: "grace 1"},
		{name: "a negative gracePeriodSeconds in the query", object: boundPod, query: "gracePeriodSeconds=-30", code: 200, want: "grace 1"},
		{name: "a negative gracePeriodSeconds shortens a terminating pod's", object: terminating, body: `{"gracePeriodSeconds":-1}`, code: 200, want: "grace 1"},
		{name: "a negative gracePeriodSeconds on no node", object: pod, body: `{"gracePeriodSeconds":-1}`, code: 200, want: "gone"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "del-" + strconv.Itoa(i)
			var path string
			var get func() (metav1.Object, error)
			switch tt.object {
			case configMap:
				path = "/api/v1/namespaces/default/configmaps/" + name
				if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				get = func() (metav1.Object, error) {
					return cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
				}
			default:
				path = "/api/v1/namespaces/default/pods/" + name
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
				if tt.object != pod {
					p.Spec.NodeName = "n1"
				}
				if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if tt.object == terminating {
					if err := cs.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				get = func() (metav1.Object, error) { return cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}) }
			}
			url := ts.url + path
			if tt.query != "" {
				url += "?" + tt.query
			}
			before := time.Now()
			req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, url, strings.NewReader(tt.body))
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			if resp.StatusCode != tt.code {
				t.Errorf("DELETE: %d %+v, want %d", resp.StatusCode, statusOf(t, resp), tt.code)
			}
			resp.Body.Close()

			obj, err := get()
			switch {
			case tt.want == "gone":
				if !apierrors.IsNotFound(err) {
					t.Errorf("after the delete: %v, want NotFound", err)
				}
			case err != nil:
				t.Errorf("after the delete: %v, want it %s", err, tt.want)
			case tt.want == "kept":
				if obj.GetDeletionTimestamp() != nil {
					t.Errorf("after the delete: marked for deletion at %v, want it kept", obj.GetDeletionTimestamp())
				}
			default:
				grace, _ := strconv.ParseInt(strings.TrimPrefix(tt.want, "grace "), 10, 64)
				at, got := obj.GetDeletionTimestamp(), obj.GetDeletionGracePeriodSeconds()
				if at == nil || got == nil || *got != grace {
					t.Fatalf("after the delete: deletion at %v, grace %v; want grace %d", at, got, grace)
				}
				// Marked to go grace seconds from the delete, to the second.
				period := time.Duration(grace) * time.Second
				if at.Time.Before(before.Add(period).Add(-time.Second)) || at.Time.After(after.Add(period)) {
					t.Errorf("deletion at %v, want %v after the delete, between %v and %v", at.Time, period, before, after)
				}
			}
		})
	}
}
