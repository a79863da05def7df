package apiserver

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Patches that name no resourceVersion never conflict with each other;
// one that names a stale one does.
func TestConcurrentPatches(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			_, err := cs.CoreV1().ConfigMaps("default").Patch(ctx, "hot", types.MergePatchType, fmt.Appendf(nil, `{"data":{"k%d":"v"}}`, i), metav1.PatchOptions{})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent patch: %v", err)
		}
	}
	got, _ := cs.CoreV1().ConfigMaps("default").Get(ctx, "hot", metav1.GetOptions{})
	if len(got.Data) != 20 {
		t.Errorf("%d keys after 20 patches, want 20", len(got.Data))
	}
	stale := fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q},"data":{"x":"y"}}`, cm.ResourceVersion)
	if _, err := cs.CoreV1().ConfigMaps("default").Patch(ctx, "hot", types.MergePatchType, stale, metav1.PatchOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("patch with a stale resourceVersion: %v, want Conflict", err)
	}
}

// fieldValidation on PATCH, for every patch type, as kube-apiserver
// answers it: Strict refuses (422 Invalid, or 400 for apply) and stores
// nothing, Warn and no parameter apply the patch with one Warning header
// per problem, Ignore applies it silently.
func TestPatchFieldValidation(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	c := ts.httpClient(t, admin)
	ctx := testContext(t)

	// Each patch names the label team twice and, but for apply, sets a
	// field Deployments do not have.
	patches := []struct {
		contentType string
		body        string
		problems    []string
		strictCode  int
		strict      string // the refusal's message ends with it
	}{
		{
			contentType: string(types.JSONPatchType),
			body:        `[{"op":"add","path":"/metadata/labels/team","value":"a","value":"b"},{"op":"add","path":"/spec/foo","value":"bar"}]`,
			problems:    []string{`json patch duplicate field "[0].value"`, `unknown field "spec.foo"`},
			strictCode:  http.StatusUnprocessableEntity,
			strict:      `is invalid: patch: Invalid value: strict decoding error: json patch duplicate field "[0].value", unknown field "spec.foo"`,
		},
		{
			contentType: string(types.MergePatchType),
			body:        `{"metadata":{"labels":{"team":"a","team":"b"}},"spec":{"foo":"bar"}}`,
			problems:    []string{`duplicate field "metadata.labels.team"`, `unknown field "spec.foo"`},
			strictCode:  http.StatusUnprocessableEntity,
			strict:      `is invalid: patch: Invalid value: strict decoding error: duplicate field "metadata.labels.team", unknown field "spec.foo"`,
		},
		{
			contentType: string(types.StrategicMergePatchType),
			body:        `{"metadata":{"labels":{"team":"a","team":"b"}},"spec":{"foo":"bar"}}`,
			problems:    []string{`duplicate field "metadata.labels.team"`, `unknown field "spec.foo"`},
			strictCode:  http.StatusUnprocessableEntity,
			strict:      `is invalid: patch: Invalid value: strict decoding error: duplicate field "metadata.labels.team", unknown field "spec.foo"`,
		},
		{
			contentType: string(types.ApplyPatchType),
			body:        `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"%s","labels":{"team":"a","team":"b"}}}`,
			problems:    []string{`line 1: key "team" already set in map`},
			strictCode:  http.StatusBadRequest,
			strict:      "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line 1: key \"team\" already set in map",
		},
	}
	n := 0
	for _, p := range patches {
		for _, validation := range []string{metav1.FieldValidationStrict, metav1.FieldValidationWarn, metav1.FieldValidationIgnore, ""} {
			t.Run(fmt.Sprintf("%s/%q", p.contentType, validation), func(t *testing.T) {
				n++
				name := fmt.Sprintf("fv-%d", n)
				before, err := cs.AppsV1().Deployments("default").Create(ctx, testDeployment(name), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				url := ts.url + "/apis/apps/v1/namespaces/default/deployments/" + name + "?fieldManager=test"
				if validation != "" {
					url += "&fieldValidation=" + validation
				}
				body := p.body
				if strings.Contains(body, "%s") {
					body = fmt.Sprintf(body, name)
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodPatch, url, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", p.contentType)
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				warnings := resp.Header.Values("Warning")

				after, err := cs.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if validation == metav1.FieldValidationStrict {
					st := statusOf(t, resp)
					if resp.StatusCode != p.strictCode || !strings.HasSuffix(st.Message, p.strict) {
						t.Errorf("status %d %q, want %d ending with %q", resp.StatusCode, st.Message, p.strictCode, p.strict)
					}
					if after.ResourceVersion != before.ResourceVersion || after.Labels["team"] != "" {
						t.Errorf("a refused patch changed the deployment: resourceVersion %s -> %s, labels %v", before.ResourceVersion, after.ResourceVersion, after.Labels)
					}
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d, want 200", resp.StatusCode)
				}
				var want []string
				if validation != metav1.FieldValidationIgnore {
					for _, text := range p.problems {
						want = append(want, "299 - "+strconv.Quote(text))
					}
				}
				if !slices.Equal(warnings, want) {
					t.Errorf("Warning headers %q, want %q", warnings, want)
				}
				if after.Labels["team"] != "b" {
					t.Errorf("label team = %q after the patch, want b, the last of the duplicates", after.Labels["team"])
				}
			})
		}
	}

	t.Run("apply of an unknown field", func(t *testing.T) {
		// Refused whatever fieldValidation says: the field manager cannot
		// merge a field the schema lacks.
		for _, validation := range []string{metav1.FieldValidationStrict, metav1.FieldValidationIgnore} {
			body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fv-apply"},"data":{"k":"v"},"bogus":1}`
			req, _ := http.NewRequestWithContext(ctx, http.MethodPatch, ts.url+"/api/v1/namespaces/default/configmaps/fv-apply?fieldManager=test&fieldValidation="+validation, strings.NewReader(body))
			req.Header.Set("Content-Type", string(types.ApplyPatchType))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if st := statusOf(t, resp); resp.StatusCode != http.StatusBadRequest || !strings.Contains(st.Message, ".bogus: field not declared in schema") {
				t.Errorf("fieldValidation=%s: %d %q, want 400 naming .bogus", validation, resp.StatusCode, st.Message)
			}
		}
		if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "fv-apply", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a refused apply created the object: %v", err)
		}
	})

	t.Run("unsupported value", func(t *testing.T) {
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, testDeployment("fv-bad"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPatch, ts.url+"/apis/apps/v1/namespaces/default/deployments/fv-bad?fieldValidation=strict", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", string(types.MergePatchType))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if st := statusOf(t, resp); resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(st.Message, `fieldValidation: Unsupported value: "strict"`) {
			t.Errorf("%d %q, want 422 naming fieldValidation", resp.StatusCode, st.Message)
		}
	})

	t.Run("a Secret's data stays out of the refusal", func(t *testing.T) {
		if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "fv-secret"}, StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := cs.CoreV1().Secrets("default").Patch(ctx, "fv-secret", types.MergePatchType, []byte(`{"stringData2":{"a":"b"}}`), metav1.PatchOptions{FieldValidation: metav1.FieldValidationStrict})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `unknown field "stringData2"`) {
			t.Fatalf("strict patch of a Secret: %v, want Invalid naming stringData2", err)
		}
		if msg := err.Error(); strings.Contains(msg, "hunter2") || strings.Contains(msg, base64.StdEncoding.EncodeToString([]byte("hunter2"))) {
			t.Errorf("the refusal carries the Secret's data: %q", msg)
		}
	})
}

func testDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

// fieldValidation on PATCH of the scale subresource, as on any other
// patch: the fields are the Scale's. Strict refuses (422, or 400 for
// apply) and changes nothing, Warn and no parameter scale with a Warning
// header per problem, Ignore scales silently, and a value kube does not
// know is refused.
func TestScalePatchFieldValidation(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	c := ts.httpClient(t, admin)
	ctx := testContext(t)

	// Each patch sets spec.replicas to 3 and a field a Scale lacks; the
	// merge patches also name replicas twice.
	patches := []struct {
		contentType string
		body        string
		problems    []string
	}{
		{
			contentType: string(types.JSONPatchType),
			body:        `[{"op":"replace","path":"/spec/replicas","value":3},{"op":"add","path":"/spec/bogus","value":1}]`,
			problems:    []string{`unknown field "spec.bogus"`},
		},
		{
			contentType: string(types.MergePatchType),
			body:        `{"spec":{"replicas":2,"replicas":3,"bogus":1}}`,
			problems:    []string{`duplicate field "spec.replicas"`, `unknown field "spec.bogus"`},
		},
		{
			contentType: string(types.StrategicMergePatchType),
			body:        `{"spec":{"replicas":2,"replicas":3,"bogus":1}}`,
			problems:    []string{`duplicate field "spec.replicas"`, `unknown field "spec.bogus"`},
		},
	}
	patchScale := func(t *testing.T, name, contentType, query, body string) *http.Response {
		t.Helper()
		url := ts.url + "/apis/apps/v1/namespaces/default/deployments/" + name + "/scale" + query
		req, err := http.NewRequestWithContext(ctx, http.MethodPatch, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	n := 0
	for _, p := range patches {
		for _, validation := range []string{metav1.FieldValidationStrict, metav1.FieldValidationWarn, metav1.FieldValidationIgnore, ""} {
			t.Run(fmt.Sprintf("%s/%q", p.contentType, validation), func(t *testing.T) {
				n++
				name := fmt.Sprintf("scale-fv-%d", n)
				before, err := cs.AppsV1().Deployments("default").Create(ctx, testDeployment(name), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				query := ""
				if validation != "" {
					query = "?fieldValidation=" + validation
				}
				resp := patchScale(t, name, p.contentType, query, p.body)
				warnings := resp.Header.Values("Warning")
				after, err := cs.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if validation == metav1.FieldValidationStrict {
					st := statusOf(t, resp)
					want := fmt.Sprintf(`Scale.autoscaling %q is invalid: patch: Invalid value: strict decoding error: %s`, name, strings.Join(p.problems, ", "))
					if resp.StatusCode != http.StatusUnprocessableEntity || st.Message != want {
						t.Errorf("status %d %q, want 422 %q", resp.StatusCode, st.Message, want)
					}
					if after.ResourceVersion != before.ResourceVersion {
						t.Errorf("a refused scale patch changed the deployment: resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
					}
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d, want 200", resp.StatusCode)
				}
				var want []string
				if validation != metav1.FieldValidationIgnore {
					for _, text := range p.problems {
						want = append(want, "299 - "+strconv.Quote(text))
					}
				}
				if !slices.Equal(warnings, want) {
					t.Errorf("Warning headers %q, want %q", warnings, want)
				}
				if *after.Spec.Replicas != 3 {
					t.Errorf("%d replicas after the patch, want 3", *after.Spec.Replicas)
				}
			})
		}
	}

	if _, err := cs.AppsV1().Deployments("default").Create(ctx, testDeployment("scale-bad"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	refusals := []struct {
		name, contentType, query, body string
		code                           int
		message                        string
	}{
		{"unsupported fieldValidation", string(types.MergePatchType), "?fieldValidation=strict", `{"spec":{"replicas":3}}`, http.StatusUnprocessableEntity,
			`PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"`},
		// Apply checks duplicate keys alone: an unknown field does not fit
		// the schema whatever fieldValidation says (TestScaleServerSideApply).
		{"apply, strict", string(types.ApplyPatchType), "?fieldManager=test&force=true&fieldValidation=Strict", "apiVersion: autoscaling/v1\nkind: Scale\nspec:\n  replicas: 2\n  replicas: 3\n", http.StatusBadRequest,
			"error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  line 5: key \"replicas\" already set in map"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			resp := patchScale(t, "scale-bad", tt.contentType, tt.query, tt.body)
			if st := statusOf(t, resp); resp.StatusCode != tt.code || st.Message != tt.message {
				t.Errorf("%d %q, want %d %q", resp.StatusCode, st.Message, tt.code, tt.message)
			}
		})
	}
}
