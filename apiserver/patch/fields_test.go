package patch

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Field validation finds what kube-apiserver's patch handler finds, for
// each patch type and fieldValidation value; the expected texts are
// kube's (test/integration/apiserver/field_validation_test.go).
func TestPatchFieldValidation(t *testing.T) {
	f := newFixture(t)
	stored := created(t, f.deployments, deployment())
	const head = `"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"`

	// Each body names the label team twice and, but for apply, has unknown
	// fields.
	bodies := []struct {
		contentType string
		body        string
		problems    []string
		// strict is the message of the refusal: it ends with it.
		strict     string
		strictCode int32
	}{
		{
			contentType: ctMerge,
			body:        `{"metadata":{"labels":{"team":"a","team":"b"}},"spec":{"foo":"bar","template":{"spec":{"containers":[{"name":"nginx","image":"nginx","bogus":true}]}}}}`,
			problems:    []string{`duplicate field "metadata.labels.team"`, `unknown field "spec.foo"`, `unknown field "spec.template.spec.containers[0].bogus"`},
			strict:      `Deployment.apps "web" is invalid: patch: Invalid value: strict decoding error: duplicate field "metadata.labels.team", unknown field "spec.foo", unknown field "spec.template.spec.containers[0].bogus"`,
			strictCode:  422,
		},
		{
			contentType: ctStrategic,
			body:        `{"metadata":{"labels":{"team":"a","team":"b"}},"spec":{"foo":"bar","template":{"spec":{"containers":[{"name":"nginx","bogus":true}]}}}}`,
			problems:    []string{`duplicate field "metadata.labels.team"`, `unknown field "spec.foo"`, `unknown field "spec.template.spec.containers[0].bogus"`},
			strict:      `strict decoding error: duplicate field "metadata.labels.team", unknown field "spec.foo", unknown field "spec.template.spec.containers[0].bogus"`,
			strictCode:  422,
		},
		{
			contentType: ctJSON,
			body:        `[{"op":"add","path":"/metadata/labels/team","value":"a","value":"b"},{"op":"add","path":"/spec/foo","value":"bar","note":"x"}]`,
			problems:    []string{`json patch duplicate field "[0].value"`, `json patch unknown field "[1].note"`, `unknown field "spec.foo"`},
			strict:      `strict decoding error: json patch duplicate field "[0].value", json patch unknown field "[1].note", unknown field "spec.foo"`,
			strictCode:  422,
		},
		{
			contentType: ctApply,
			body:        `{` + head + `,"labels":{"team":"a","team":"b"}}}`,
			problems:    []string{`line 1: key "team" already set in map`},
			strict: `error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:
  line 1: key "team" already set in map`,
			strictCode: 400,
		},
	}
	for _, b := range bodies {
		for _, validation := range []string{"", metav1.FieldValidationStrict, metav1.FieldValidationWarn, metav1.FieldValidationIgnore} {
			t.Run(fmt.Sprintf("%s/%q", b.contentType, validation), func(t *testing.T) {
				got, warnings, err := f.deployments.Patch(stored, Request{
					ContentType: b.contentType, Body: []byte(b.body), FieldManager: "m", FieldValidation: validation,
				})
				if validation == metav1.FieldValidationStrict {
					if c := code(err); c != b.strictCode || !strings.HasSuffix(err.Error(), b.strict) {
						t.Fatalf("Patch() error = %v (code %d), want code %d ending with %q", err, c, b.strictCode, b.strict)
					}
					if b.strictCode == 422 {
						status := err.(apierrors.APIStatus).Status()
						if causes := status.Details.Causes; len(causes) != 1 || causes[0].Field != "patch" || causes[0].Type != metav1.CauseTypeFieldValueInvalid {
							t.Errorf("causes = %+v, want one FieldValueInvalid on patch", causes)
						}
					}
					return
				}
				if err != nil {
					t.Fatalf("Patch() error = %v, want none", err)
				}
				want := b.problems // Warn, also by default
				if validation == metav1.FieldValidationIgnore {
					want = nil
				}
				if !slices.Equal(warnings, want) {
					t.Errorf("warnings = %q, want %q", warnings, want)
				}
				if team := got.(*appsv1.Deployment).Labels["team"]; team != "b" {
					t.Errorf("label team = %q, want b, the last of the duplicates", team)
				}
			})
		}
	}

	t.Run("apply of a field the schema lacks", func(t *testing.T) {
		// The field manager cannot merge it, so it is refused even when
		// told to ignore it, as in kube-apiserver.
		for _, validation := range []string{metav1.FieldValidationStrict, metav1.FieldValidationWarn, metav1.FieldValidationIgnore} {
			_, _, err := f.deployments.Patch(stored, Request{ContentType: ctApply, Body: []byte(`{` + head + `},"spec":{"foo":"bar"}}`), FieldManager: "m", FieldValidation: validation})
			if c := code(err); c != 400 || !strings.Contains(err.Error(), ".spec.foo: field not declared in schema") {
				t.Errorf("fieldValidation=%s: error = %v (code %d), want 400 naming .spec.foo", validation, err, c)
			}
		}
	})

	t.Run("unsupported value", func(t *testing.T) {
		_, _, err := f.deployments.Patch(stored, Request{ContentType: ctMerge, Body: []byte(`{}`), FieldValidation: "strict"})
		if c := code(err); c != 422 || !strings.Contains(err.Error(), `fieldValidation: Unsupported value: "strict"`) {
			t.Errorf("error = %v (code %d), want 422 naming fieldValidation", err, c)
		}
	})

	t.Run("a merge patch that is not an object", func(t *testing.T) {
		// Without validation, it replaces the document and fails to decode
		// (422); with it, kube-apiserver refuses it first (400).
		for validation, want := range map[string]int32{metav1.FieldValidationWarn: 400, metav1.FieldValidationIgnore: 422} {
			_, _, err := f.deployments.Patch(stored, Request{ContentType: ctMerge, Body: []byte(`[1]`), FieldValidation: validation})
			if c := code(err); c != want {
				t.Errorf("fieldValidation=%s: error = %v (code %d), want %d", validation, err, c, want)
			}
		}
	})

	t.Run("many unknown fields", func(t *testing.T) {
		// sigs.k8s.io/json stops at 100 problems, the unstructured
		// converter of strategic merge patches does not.
		var b strings.Builder
		b.WriteString(`{"spec":{"replicas":2`)
		for i := range 150 {
			fmt.Fprintf(&b, `,"f%03d":1`, i)
		}
		b.WriteString(`}}`)
		_, warnings, err := f.deployments.Patch(stored, Request{ContentType: ctStrategic, Body: []byte(b.String())})
		if err != nil {
			t.Fatal(err)
		}
		if len(warnings) != maxFieldProblems+1 || warnings[0] != `unknown field "spec.f000"` || warnings[maxFieldProblems] != "50 more" {
			t.Errorf("%d warnings, first %q, last %q; want %d, the last counting 50 more", len(warnings), warnings[0], warnings[len(warnings)-1], maxFieldProblems+1)
		}
		_, _, err = f.deployments.Patch(stored, Request{ContentType: ctStrategic, Body: []byte(b.String()), FieldValidation: metav1.FieldValidationStrict})
		if err == nil || !strings.HasSuffix(err.Error(), `unknown field "spec.f099", 50 more`) {
			t.Errorf("strict error = %v, want the first %d problems and a count of the rest", err, maxFieldProblems)
		}
	})
}

// A refusal names the fields, never the values: the patched object may be
// a Secret.
func TestPatchStrictErrorOmitsTheObject(t *testing.T) {
	f := newFixture(t)
	stored := created(t, f.configMaps, configMap())
	_, _, err := f.configMaps.Patch(stored, Request{ContentType: ctMerge, Body: []byte(`{"data":{"token":"s3cr3t"},"bogus":1}`), FieldValidation: metav1.FieldValidationStrict})
	if code(err) != 422 {
		t.Fatalf("error = %v, want 422", err)
	}
	if msg := err.Error(); strings.Contains(msg, "s3cr3t") || strings.Contains(msg, "blue") || !strings.Contains(msg, `unknown field "bogus"`) {
		t.Errorf("error = %q, want the unknown field and no data", msg)
	}
}
