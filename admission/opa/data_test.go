package opa

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// Policies read replicated objects as data.kubernetes, and see them go.
func TestData(t *testing.T) {
	ctx := context.Background()
	data := NewData()
	set, err := data.Compile(ctx, map[string][]byte{"labelled.rego": []byte(`package kubernetes.admission

deny contains "namespace not labelled for Secrets" if {
	input.request.kind.kind == "Secret"
	not data.kubernetes.namespaces[input.request.namespace].metadata.labels.secrets
}
`)})
	if err != nil {
		t.Fatal(err)
	}
	p := plugin(t, set, DefaultTimeout)
	check := func(want bool) {
		t.Helper()
		err := p.Validate(ctx, secretAttrs(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team"}}, admission.Create), nil)
		if got := apierrors.IsForbidden(err); got != want {
			t.Fatalf("refused %v (%v), want %v", got, err, want)
		}
	}
	check(true)
	if err := data.Put(ctx, "namespaces", "", "team", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"secrets": "yes"}}}); err != nil {
		t.Fatal(err)
	}
	check(false)
	if err := data.Delete(ctx, "namespaces", "", "team"); err != nil {
		t.Fatal(err)
	}
	check(true)
	if err := data.Delete(ctx, "namespaces", "", "never-there"); err != nil {
		t.Errorf("deleting what is not there: %v", err)
	}
	if err := data.Reset(ctx, "namespaces"); err != nil {
		t.Errorf("reset: %v", err)
	}
}

// The replication file names resources; Secrets are refused.
func TestLoadReplication(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ReplicationFile)
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := LoadReplication(path); err != nil || got != nil {
		t.Errorf("no file: %v, %v; want nothing replicated", got, err)
	}
	write("resources: [namespaces, apps/deployments]\n")
	got, err := LoadReplication(path)
	if err != nil || len(got) != 2 || got[0] != (schema.GroupResource{Resource: "namespaces"}) || got[1] != (schema.GroupResource{Group: "apps", Resource: "deployments"}) {
		t.Errorf("got %v, %v", got, err)
	}
	for _, secrets := range []string{"secrets", "Secrets", " secrets", "core/secrets", "v1/secrets", "/secrets", "SECRETS ", "core/v1/secrets"} {
		write("resources: [" + strconv.Quote(secrets) + "]\n")
		if _, err := LoadReplication(path); err == nil || !strings.Contains(err.Error(), "never replicated") {
			t.Errorf("%q replicated: %v", secrets, err)
		}
	}
	write("resource: [namespaces]\n")
	if _, err := LoadReplication(path); err == nil {
		t.Error("an unknown field was accepted")
	}
}

// While replicated data is stale, evaluations refuse rather than decide by
// it; once fresh, they decide again.
func TestStaleDataRefuses(t *testing.T) {
	ctx := context.Background()
	data := NewData()
	set, err := data.Compile(ctx, map[string][]byte{"allow.rego": []byte("package kubernetes.admission\n\ndeny contains \"never\" if false\n")})
	if err != nil {
		t.Fatal(err)
	}
	p := plugin(t, set, DefaultTimeout)
	validate := func() error {
		return p.Validate(ctx, secretAttrs(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team"}}, admission.Create), nil)
	}
	if err := validate(); err != nil {
		t.Fatalf("fresh: %v", err)
	}
	data.MarkStale("namespaces")
	data.MarkStale("namespaces")
	data.MarkStale("serviceaccounts")
	if err := validate(); !apierrors.IsForbidden(err) {
		t.Fatalf("stale: %v, want a refusal", err)
	}
	data.MarkFresh("namespaces")
	if err := validate(); !apierrors.IsForbidden(err) {
		t.Fatalf("one resource still stale: %v, want a refusal", err)
	}
	data.MarkFresh("serviceaccounts")
	if err := validate(); err != nil {
		t.Fatalf("fresh again: %v", err)
	}
}
