package apiserver

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/etcd/etcdtest"
	"github.com/trustplane/trustplane/policies"
)

// benchConcurrency is the number of concurrent clients in the
// benchmarks.
const benchConcurrency = 32

// runConcurrently calls op n times from benchConcurrency goroutines and
// returns the elapsed time.
func runConcurrently(b *testing.B, n int, op func(i int) error) time.Duration {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, benchConcurrency)
	start := time.Now()
	for range benchConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := op(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return elapsed
}

// BenchmarkSecretCreate measures Secret creates through the whole secure
// path (TLS client certificate, authentication, live RBAC, audit,
// admission, validation, AES-GCM, etcd) beside raw etcd puts of values of
// the same size at the same concurrency, in the same run. They take turns,
// four phases of b.N/2 operations (creates, puts, puts, creates), so that
// a drift of load on the machine weighs on both alike. It reports both
// rates and their ratio, and the process's CPU (client, server and etcd)
// per create and per put, which other load changes less: on a machine
// whose cores are busy, the rates' ratio tends to the CPU ratio.
//
//	go test ./apiserver -run '^$' -bench 'SecretCreate$' -benchtime 4000x
func BenchmarkSecretCreate(b *testing.B) {
	ts := startServer(b)
	cfg := ts.restConfig(b, admin)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	secretsGR := schema.GroupResource{Resource: "secrets"}
	payload := make([]byte, 1024)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	newSecret := func(name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"value": payload}}
	}
	// The size of what the API server stores for one Secret.
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, newSecret("probe"), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	cli := ts.etcd.Client(b)
	raw, err := cli.Get(ctx, storage.Key(secretsGR, "default", "probe"))
	if err != nil || len(raw.Kvs) != 1 {
		b.Fatalf("probe: %v %v", raw, err)
	}
	value := string(raw.Kvs[0].Value)

	n := max(b.N/2, 1)
	var elapsed, cpu [2]time.Duration // [0] API creates, [1] etcd puts
	b.ResetTimer()
	for phase, put := range []bool{false, true, true, false} {
		before := processCPUTime(b)
		elapsed[b2i(put)] += runConcurrently(b, n, func(i int) error {
			if put {
				_, err := cli.Put(ctx, fmt.Sprintf("/registry/bench/%d-%d-%d", b.N, phase, i), value)
				return err
			}
			_, err := cs.CoreV1().Secrets("default").Create(ctx, newSecret(fmt.Sprintf("s-%d-%d-%d", b.N, phase, i)), metav1.CreateOptions{})
			return err
		})
		cpu[b2i(put)] += processCPUTime(b) - before
	}
	b.StopTimer()

	ops := float64(2 * n)
	apiRate, etcdRate := ops/elapsed[0].Seconds(), ops/elapsed[1].Seconds()
	b.ReportMetric(apiRate, "api-creates/s")
	b.ReportMetric(etcdRate, "etcd-puts/s")
	b.ReportMetric(apiRate/etcdRate, "ratio")
	apiCPU, etcdCPU := float64(cpu[0].Microseconds())/ops, float64(cpu[1].Microseconds())/ops
	b.ReportMetric(apiCPU, "cpu-µs/create")
	b.ReportMetric(etcdCPU, "cpu-µs/put")
	b.ReportMetric(etcdCPU/apiCPU, "cpu-ratio")
	b.ReportMetric(float64(len(value)), "stored-bytes")
}

// BenchmarkList10000ConfigMaps measures listing 10,000 1-KiB ConfigMaps
// with client-go (protobuf), consistent reads from the watch cache.
//
//	go test ./apiserver -run '^$' -bench List10000 -benchtime 50x
func BenchmarkList10000ConfigMaps(b *testing.B) {
	ts := startServer(b)
	ctx := context.Background()
	gr := schema.GroupResource{Resource: "configmaps"}
	value := strings.Repeat("x", 1024)
	for i := range 10000 {
		name := fmt.Sprintf("cm-%05d", i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"v": value}}
		if err := ts.server.store.Create(ctx, gr, storage.Key(gr, "default", name), cm); err != nil {
			b.Fatal(err)
		}
	}
	cfg := ts.restConfig(b, admin)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	cs := kubernetes.NewForConfigOrDie(cfg)
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 10000 {
			b.Fatalf("list: %d items, %v", len(list.Items), err)
		}
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(samples[len(samples)*99/100].Milliseconds()), "p99-ms")
}

// BenchmarkSecretCreateWithPolicies measures Secret creates through two
// API servers over one etcd, one without admission policies and one with
// the shipped library (replicating namespaces and ServiceAccounts), and
// reports the rate with the library over the rate without it. The creates
// are in a namespace labelled for Secrets, as secrets_namespace.rego asks;
// those in default, which it warns of (the README's quick start), are
// reported apart, as "warned": a warning costs the redaction of the
// messages, the Warning header and the audit annotation. After warmUp
// creates of each, unmeasured, the three take turns in twelve phases of
// b.N/4 creates (off, on, warned, warned, on, off, and again), so that
// the rate's drift as etcd and the watch caches grow weighs on each
// alike.
//
//	go test ./apiserver -run '^$' -bench SecretCreateWithPolicies -benchtime 2000x
func BenchmarkSecretCreateWithPolicies(b *testing.B) {
	const warmUp = 300
	e := etcdtest.Start(b)
	off := startServerOn(b, e)
	on := startServerOn(b, e, withShippedPolicies(b))
	payload := []byte(strings.Repeat("abcdefghijklmnopqrstuvwxyz", 40))
	// The namespace is created through the server with the library, so
	// that its replicated data holds the label before the first create.
	const labelled = "bench"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: labelled, Labels: map[string]string{policies.SecretsNamespaceLabel: policies.SecretsNamespaceAllowed}}}
	if _, err := on.clientset(b, admin).CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	const (
		without = iota
		with
		warned
	)
	phases := []struct {
		server    *testServer
		namespace string
	}{without: {off, labelled}, with: {on, labelled}, warned: {on, "default"}}
	clients := make([]*kubernetes.Clientset, len(phases))
	for i, ph := range phases {
		cfg := ph.server.restConfig(b, admin)
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		// The library warns of Secrets in default; the client need not
		// log each.
		cfg.WarningHandler = rest.NoWarnings{}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		clients[i] = cs
	}
	ctx := context.Background()
	create := func(i int, name string) error {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"value": payload}}
		_, err := clients[i].CoreV1().Secrets(phases[i].namespace).Create(ctx, s, metav1.CreateOptions{})
		return err
	}
	// Unmeasured, the first creates of each: connections, caches and
	// stacks grow.
	for i := range phases {
		runConcurrently(b, warmUp, func(j int) error { return create(i, fmt.Sprintf("warm-%d-%d-%d", b.N, i, j)) })
	}
	n := max(b.N/4, 1)
	// Each one's time, and the CPU the process (client, servers and etcd)
	// spent, which other load on the machine changes less than the rate.
	var elapsed, cpu [3]time.Duration
	b.ResetTimer()
	for turn, i := range []int{without, with, warned, warned, with, without, without, with, warned, warned, with, without} {
		before := processCPUTime(b)
		elapsed[i] += runConcurrently(b, n, func(j int) error { return create(i, fmt.Sprintf("s-%d-%d-%d", b.N, turn, j)) })
		cpu[i] += processCPUTime(b) - before
	}
	b.StopTimer()
	rate := func(i int) float64 { return float64(4*n) / elapsed[i].Seconds() }
	perCreate := func(i int) float64 { return float64(cpu[i].Microseconds()) / float64(4*n) }
	b.ReportMetric(rate(without), "creates/s-without")
	b.ReportMetric(rate(with), "creates/s-with-library")
	b.ReportMetric(rate(warned), "creates/s-warned")
	b.ReportMetric(rate(with)/rate(without), "ratio")
	b.ReportMetric(rate(warned)/rate(without), "ratio-warned")
	b.ReportMetric(perCreate(without), "cpu-µs/create-without")
	b.ReportMetric(perCreate(with), "cpu-µs/create-with-library")
	b.ReportMetric(perCreate(warned), "cpu-µs/create-warned")
	b.ReportMetric(perCreate(without)/perCreate(with), "cpu-ratio")
	b.ReportMetric(perCreate(without)/perCreate(warned), "cpu-ratio-warned")
}

// processCPUTime is the user and system CPU time this process has used.
func processCPUTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// withShippedPolicies runs the shipped policy library, as trustplane init
// installs it.
func withShippedPolicies(t testing.TB) serverOption {
	t.Helper()
	files, err := policies.Files()
	if err != nil {
		t.Fatal(err)
	}
	data := opa.NewData()
	set, err := data.Compile(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) {
		c.AdmissionPolicies, c.AdmissionData = set, data
		c.AdmissionReplicate = []schema.GroupResource{{Resource: "namespaces"}, {Resource: "serviceaccounts"}}
	}
}

// BenchmarkSecretCreateAudit measures what the audit log costs Secret
// creates: two API servers over one etcd, one auditing as shipped
// (Secrets at Metadata, each event hashed into the chain and written to
// its log) and one whose policy records nothing. They take turns, eight
// phases of b.N/2 creates (off, on, on, off, off, on, on, off), so that a
// drift of the rate as etcd grows, or a burst of other load on the
// machine, weighs on both alike. It reports both rates, their ratio, and
// the process's CPU per create both ways, which other load changes less.
// Audit off exists only here: a server has no flag for it.
//
//	go test ./apiserver -run '^$' -bench SecretCreateAudit -benchtime 2000x
func BenchmarkSecretCreateAudit(b *testing.B) {
	e := etcdtest.Start(b)
	servers := map[bool]*testServer{false: startServerOn(b, e, withAuditOff(b)), true: startServerOn(b, e)}
	clients := map[bool]*kubernetes.Clientset{}
	for on, ts := range servers {
		cfg := ts.restConfig(b, admin)
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		clients[on] = cs
	}
	payload := []byte(strings.Repeat("abcdefghijklmnopqrstuvwxyz", 40))
	ctx := context.Background()
	n := max(b.N/2, 1)
	var elapsed, cpu [2]time.Duration // [0] audit off, [1] on
	b.ResetTimer()
	for i, on := range []bool{false, true, true, false, false, true, true, false} {
		before := processCPUTime(b)
		elapsed[b2i(on)] += runConcurrently(b, n, func(j int) error {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d-%d-%d", i, b.N, j)}, Data: map[string][]byte{"value": payload}}
			_, err := clients[on].CoreV1().Secrets("default").Create(ctx, s, metav1.CreateOptions{})
			return err
		})
		cpu[b2i(on)] += processCPUTime(b) - before
	}
	b.StopTimer()
	creates := float64(4 * n)
	offRate, onRate := creates/elapsed[0].Seconds(), creates/elapsed[1].Seconds()
	b.ReportMetric(offRate, "creates/s-audit-off")
	b.ReportMetric(onRate, "creates/s-audit-on")
	b.ReportMetric(onRate/offRate, "ratio")
	offCPU, onCPU := float64(cpu[0].Microseconds())/creates, float64(cpu[1].Microseconds())/creates
	b.ReportMetric(offCPU, "cpu-µs/create-audit-off")
	b.ReportMetric(onCPU, "cpu-µs/create-audit-on")
	b.ReportMetric(offCPU/onCPU, "cpu-ratio")

	// What was measured: every create of the server that audits is in its
	// log, chained; the other's log is empty.
	_, verifiers := auditSigner(b, e)
	v, err := audit.Verify([]string{servers[true].auditLog}, verifiers)
	if err != nil || v.Finding != nil || v.Events < int64(4*n) {
		b.Fatalf("the audited server's log: %v, %v, %d events; want no finding, %d events or more", err, v.Finding, v.Events, 4*n)
	}
	if st, err := os.Stat(servers[false].auditLog); err != nil || st.Size() != 0 {
		b.Fatalf("the server without audit wrote its log: %v %v", st, err)
	}
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

// withAuditOff gives the server a policy that records nothing.
func withAuditOff(t testing.TB) serverOption {
	t.Helper()
	none, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n"))
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) { c.AuditPolicy = none }
}
