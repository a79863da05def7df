package opa

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/trustplane/trustplane/policies"
)

// library is the shipped policy library with the data it reads: the
// default namespace, labelled as trustplane's bootstrap leaves it; team,
// not labelled for Secrets; and vault, labelled for them.
func library(t testing.TB) (*Set, *Data) {
	t.Helper()
	files, err := policies.Files()
	if err != nil {
		t.Fatal(err)
	}
	data := NewData()
	ctx := context.Background()
	for _, ns := range []string{"default", "team", "vault"} {
		labels := map[string]string{corev1.LabelMetadataName: ns}
		if ns == "vault" {
			labels[policies.SecretsNamespaceLabel] = policies.SecretsNamespaceAllowed
		}
		if err := data.Put(ctx, "namespaces", "", ns, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}); err != nil {
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
// the validating stage does, for a Secret create in a namespace labelled
// for Secrets ("allowed", the path of most creates) and in one that is not
// ("warned": secrets_namespace's message is made, and the request is
// allowed with it as a warning). Each reports the median and the 99th
// percentile.
func BenchmarkLibrary(b *testing.B) {
	set, _ := library(b)
	p, err := NewPlugin(set, DefaultTimeout, discard())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, namespace string }{{"allowed", "vault"}, {"warned", "team"}} {
		b.Run(bc.name, func(b *testing.B) {
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: bc.namespace}, Immutable: new(bool), Data: map[string][]byte{"password": []byte("s3cret")}}
			attrs := admission.NewAttributesRecord(secret, nil, corev1.SchemeGroupVersion.WithKind("Secret"), bc.namespace, "db", corev1.SchemeGroupVersion.WithResource("secrets"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "admin", Groups: []string{"trustplane:cluster-admins"}})
			ctx := context.Background()
			_, decisions, err := p.eval(ctx, set, attrs, nil)
			if err != nil {
				b.Fatal(err)
			}
			warned := false
			for _, d := range decisions {
				warned = warned || len(d.Deny) > 0 || len(d.Warn) > 0
			}
			if warned != (bc.name == "warned") {
				b.Fatalf("in namespace %s: decisions %+v", bc.namespace, decisions)
			}
			samples := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				// As Validate evaluates, with a pooled buffer.
				buf := getDecisions()
				if _, _, err := p.eval(ctx, set, attrs, buf); err != nil {
					b.Fatal(err)
				}
				putDecisions(buf)
				samples = append(samples, time.Since(start))
			}
			sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
			b.ReportMetric(float64(samples[len(samples)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(samples[len(samples)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// Evaluations at once, which share the terms of users, kinds and
// resources, the compiled policies and pooled buffers of decisions,
// decide each as it does alone (run with -race, they also show that
// nothing shared is written).
func TestConcurrentEvaluations(t *testing.T) {
	set, _ := library(t)
	p, err := NewPlugin(set, DefaultTimeout, discard())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type request struct {
		attrs admission.Attributes
		want  []Decision
	}
	var requests []request
	for i, ns := range []string{"vault", "team", "default", "kube-system"} {
		for j, u := range []*user.DefaultInfo{{Name: "alice", Groups: []string{"team"}}, {Name: "admin", Groups: []string{"trustplane:cluster-admins"}}} {
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d%d", i, j), Namespace: ns}, Data: map[string][]byte{"k": []byte("v")}}
			attrs := admission.NewAttributesRecord(secret, nil, corev1.SchemeGroupVersion.WithKind("Secret"), ns, secret.Name, corev1.SchemeGroupVersion.WithResource("secrets"), "", admission.Create, &metav1.CreateOptions{}, false, u)
			_, want, err := p.eval(ctx, set, attrs, nil)
			if err != nil {
				t.Fatal(err)
			}
			requests = append(requests, request{attrs, want})
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				r := requests[(g+i)%len(requests)]
				// With pooled buffers, which other requests' decisions
				// were written in.
				buf := getDecisions()
				_, got, err := p.eval(ctx, set, r.attrs, buf)
				if err != nil {
					t.Error(err)
					return
				}
				if !reflect.DeepEqual(got, r.want) {
					t.Errorf("%s/%s as %s: %+v, alone %+v", r.attrs.GetNamespace(), r.attrs.GetName(), r.attrs.GetUserInfo().GetName(), got, r.want)
					return
				}
				putDecisions(buf)
			}
		})
	}
	wg.Wait()
}

// The terms of users and kinds that evaluations share are not written by
// them: a with on the input copies it, and an object's keys sorted in
// place by one evaluation while another copies them would give it a
// userInfo with a key twice. Run with -race, this fails if a shared term
// is shared before its keys are sorted.
func TestSharedTermsAreNotWritten(t *testing.T) {
	set := compile(t, map[string]string{"p.rego": `package kubernetes.admission

deny contains m if {
	m := input.request.name with input.request.name as "mocked"
}

deny contains m if {
	u := object.union_n([{"x": 1}, input.request.userInfo, input.request.kind])
	m := sprintf("%d", [count(u)])
}
`})
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				// A user and a kind no evaluation has seen, whose terms
				// two goroutines make at once.
				u := &user.DefaultInfo{Name: fmt.Sprintf("shared-%d", i), UID: "u", Groups: []string{"g"}}
				kind := corev1.SchemeGroupVersion.WithKind(fmt.Sprintf("Shared%d", i))
				attrs := admission.NewAttributesRecord(&corev1.ConfigMap{}, nil, kind, "team", "c", corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, &metav1.CreateOptions{}, false, u)
				in, err := set.Input(attrs)
				if err != nil {
					t.Error(err)
					return
				}
				decisions, err := set.Eval(ctx, in)
				if err != nil {
					t.Error(err)
					return
				}
				if want := []string{"7", "mocked"}; !reflect.DeepEqual(decisions[0].Deny, want) {
					t.Errorf("goroutine %d, request %d: %v, want %v", g, i, decisions[0].Deny, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
