package apiserver

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/trustplane/trustplane/apiserver/storage"
)

// percentiles reports p50 and p99 of samples as benchmark metrics.
func percentiles(b *testing.B, samples []time.Duration) {
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(samples[len(samples)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkAuthorizeLarge measures authorization decisions with 1,000
// ClusterRoles, 1,000 ClusterRoleBindings and 10,000 RoleBindings in 100
// namespaces, read from the watch caches as in production.
//
//	go test ./apiserver -run '^$' -bench AuthorizeLarge -benchtime 20000x
func BenchmarkAuthorizeLarge(b *testing.B) {
	ts := startServer(b)
	ctx := context.Background()
	create := func(gr schemaGR, ns, name string, obj runtime.Object) {
		if err := ts.server.store.Create(ctx, gr, storage.Key(gr, ns, name), obj); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 1000 {
		name := fmt.Sprintf("role-%d", i)
		create(clusterRolesGR, "", name, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{fmt.Sprintf("things%d", i)}}}})
		create(clusterRoleBindingsGR, "", name, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: fmt.Sprintf("user-%d", i)}}})
	}
	for i := range 10000 {
		ns, name := fmt.Sprintf("ns-%d", i%100), fmt.Sprintf("rb-%d", i)
		create(roleBindingsGR, ns, name, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: fmt.Sprintf("role-%d", i%1000)}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: fmt.Sprintf("ns-user-%d", i)}}})
	}
	for _, gr := range []schemaGR{clusterRolesGR, clusterRoleBindingsGR, roleBindingsGR} {
		rev, err := ts.server.caches[gr].CurrentRevision(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ts.server.caches[gr].List(ctx, storage.ListPrefix(gr, ""), rev, func(runtime.Object) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	// ns-user-4242 is bound in ns-42 to role-242, which grants list on
	// things242.
	allowed := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "ns-user-4242", Groups: []string{user.AllAuthenticated}}, Verb: "list", Resource: "things242", Namespace: "ns-42", ResourceRequest: true}
	denied := allowed
	denied.Resource = "secrets"
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		attrs := allowed
		if i%2 == 1 {
			attrs = denied
		}
		start := time.Now()
		d, _, _ := ts.server.authz.Authorize(ctx, attrs)
		samples = append(samples, time.Since(start))
		if (d == authorizer.DecisionAllow) != (i%2 == 0) {
			b.Fatalf("decision %v for %+v", d, attrs)
		}
	}
	b.StopTimer()
	percentiles(b, samples)
}

type schemaGR = schema.GroupResource

// BenchmarkServiceAccountToken measures authenticating a ServiceAccount
// token: the first use verifies the signature, later ones find its claims
// cached; both look the service account up live.
//
//	go test ./apiserver -run '^$' -bench ServiceAccountToken
func BenchmarkServiceAccountToken(b *testing.B) {
	ts := startServer(b)
	ctx := context.Background()
	cs := ts.clientset(b, admin)
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	newToken := func() string {
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "bench", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return tr.Status.Token
	}
	b.Run("cached", func(b *testing.B) {
		tok := newToken()
		if _, ok, err := ts.server.tokenAuthn.AuthenticateToken(ctx, tok); !ok || err != nil {
			b.Fatal(err)
		}
		samples := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			if _, ok, _ := ts.server.tokenAuthn.AuthenticateToken(ctx, tok); !ok {
				b.Fatal("refused")
			}
			samples = append(samples, time.Since(start))
		}
		b.StopTimer()
		percentiles(b, samples)
	})
	b.Run("uncached", func(b *testing.B) {
		tokens := make([]string, b.N)
		for i := range tokens {
			tokens[i] = newToken()
		}
		samples := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			start := time.Now()
			if _, ok, _ := ts.server.tokenAuthn.AuthenticateToken(ctx, tokens[i]); !ok {
				b.Fatal("refused")
			}
			samples = append(samples, time.Since(start))
		}
		b.StopTimer()
		percentiles(b, samples)
	})
}

// BenchmarkRBACChangeToEffect measures the time from a RoleBinding's
// write (the API call returning) to the authorizer allowing what it
// grants.
//
//	go test ./apiserver -run '^$' -bench RBACChangeToEffect -benchtime 200x
func BenchmarkRBACChangeToEffect(b *testing.B) {
	ts := startServer(b)
	ctx := context.Background()
	cs := ts.clientset(b, admin)
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("effect-%d", i)
		attrs := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: name}, Verb: "list", Resource: "configmaps", Namespace: "default", ResourceRequest: true}
		_, err := cs.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}}}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		written := time.Now()
		for {
			if d, _, _ := ts.server.authz.Authorize(ctx, attrs); d == authorizer.DecisionAllow {
				break
			}
			if time.Since(written) > 10*time.Second {
				b.Fatal("the binding never took effect")
			}
			time.Sleep(100 * time.Microsecond)
		}
		samples = append(samples, time.Since(written))
	}
	b.StopTimer()
	percentiles(b, samples)
}
