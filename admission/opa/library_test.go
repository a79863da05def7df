package opa

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/trustplane/trustplane/policies"
)

// library is the shipped policy library with the data it reads: the
// default namespace, labelled as trustplane's bootstrap leaves it.
func library(t testing.TB) (*Set, *Data) {
	t.Helper()
	files, err := policies.Files()
	if err != nil {
		t.Fatal(err)
	}
	data := NewData()
	ctx := context.Background()
	for _, ns := range []string{"default", "team"} {
		if err := data.Put(ctx, "namespaces", "", ns, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{corev1.LabelMetadataName: ns}}}); err != nil {
			t.Fatal(err)
		}
	}
	set, err := data.Compile(ctx, files)
	if err != nil {
		t.Fatal(err)
	}
	return set, data
}

// The shipped library loads through the engine as the server loads it,
// its tests passing, one policy per file.
func TestShippedLibrary(t *testing.T) {
	set, _ := library(t)
	var names []string
	for _, p := range set.Policies() {
		names = append(names, p.Name)
	}
	if len(names) < 8 || !slices.Contains(names, "secrets_namespace") {
		t.Errorf("policies %v", names)
	}
}

// BenchmarkLibrary is the cost of the shipped library for one request:
// the AdmissionReview built and every policy evaluated in one query, as
// the validating stage does, for a Secret create. It reports the median
// and the 99th percentile.
func BenchmarkLibrary(b *testing.B) {
	set, _ := library(b)
	p, err := NewPlugin(set, DefaultTimeout, discard())
	if err != nil {
		b.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team"}, Immutable: new(bool), Data: map[string][]byte{"password": []byte("s3cret")}}
	attrs := admission.NewAttributesRecord(secret, nil, corev1.SchemeGroupVersion.WithKind("Secret"), "team", "db", corev1.SchemeGroupVersion.WithResource("secrets"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "admin", Groups: []string{"trustplane:cluster-admins"}})
	ctx := context.Background()
	samples := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if _, _, err := p.eval(ctx, set, attrs); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(start))
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(samples[len(samples)*99/100].Microseconds()), "p99-µs")
}
