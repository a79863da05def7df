package apiserver

import (
	"context"
	"fmt"
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
// the same size at the same concurrency, in the same run, and reports both
// rates and their ratio.
//
//	go test ./apiserver -run '^$' -bench SecretCreate -benchtime 2000x
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

	b.ResetTimer()
	apiTime := runConcurrently(b, b.N, func(i int) error {
		_, err := cs.CoreV1().Secrets("default").Create(ctx, newSecret(fmt.Sprintf("s-%d-%d", b.N, i)), metav1.CreateOptions{})
		return err
	})
	etcdTime := runConcurrently(b, b.N, func(i int) error {
		_, err := cli.Put(ctx, fmt.Sprintf("/registry/bench/%d-%d", b.N, i), value)
		return err
	})
	b.StopTimer()

	apiRate := float64(b.N) / apiTime.Seconds()
	etcdRate := float64(b.N) / etcdTime.Seconds()
	b.ReportMetric(apiRate, "api-creates/s")
	b.ReportMetric(etcdRate, "etcd-puts/s")
	b.ReportMetric(apiRate/etcdRate, "ratio")
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
// the shipped library (replicating namespaces and ServiceAccounts), in
// turns (off, on, off), and reports the rate with the library over the
// rate without it.
//
//	go test ./apiserver -run '^$' -bench SecretCreateWithPolicies -benchtime 2000x
func BenchmarkSecretCreateWithPolicies(b *testing.B) {
	e := etcdtest.Start(b)
	off := startServerOn(b, e)
	on := startServerOn(b, e, withShippedPolicies(b))
	payload := []byte(strings.Repeat("abcdefghijklmnopqrstuvwxyz", 40))
	// Each phase's rate, and the CPU the process (client, servers and
	// etcd) spent per create, which other load on the machine changes
	// less than the rate.
	var cpu time.Duration
	rate := func(ts *testServer, phase string) float64 {
		before := processCPUTime(b)
		defer func() { cpu = processCPUTime(b) - before }()
		cfg := ts.restConfig(b, admin)
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		// The library warns of Secrets in default; the client need not
		// log each.
		cfg.WarningHandler = rest.NoWarnings{}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		elapsed := runConcurrently(b, b.N, func(i int) error {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-%d", phase, b.N, i)}, Data: map[string][]byte{"value": payload}}
			_, err := cs.CoreV1().Secrets("default").Create(ctx, s, metav1.CreateOptions{})
			return err
		})
		return float64(b.N) / elapsed.Seconds()
	}
	b.ResetTimer()
	offBefore := rate(off, "off-a")
	offCPU := cpu
	onRate := rate(on, "on")
	onCPU := cpu
	offAfter := rate(off, "off-b")
	offCPU += cpu
	b.StopTimer()
	offRate := (offBefore + offAfter) / 2
	b.ReportMetric(offRate, "creates/s-without")
	b.ReportMetric(onRate, "creates/s-with-library")
	b.ReportMetric(onRate/offRate, "ratio")
	perCreate := func(d time.Duration, creates int) float64 { return float64(d.Microseconds()) / float64(creates) }
	b.ReportMetric(perCreate(offCPU, 2*b.N), "cpu-µs/create-without")
	b.ReportMetric(perCreate(onCPU, b.N), "cpu-µs/create-with-library")
	b.ReportMetric(perCreate(offCPU, 2*b.N)/perCreate(onCPU, b.N), "cpu-ratio")
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
