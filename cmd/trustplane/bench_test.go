package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trustplane/trustplane/bench"
	"github.com/trustplane/trustplane/e2e/e2etest"
	"github.com/trustplane/trustplane/etcd"
)

func TestBenchFlagsValidate(t *testing.T) {
	valid := func() benchFlags {
		return benchFlags{concurrency: 1, requests: 1, objectBytes: 1, watchers: 1, watchEvents: 1, watchRate: 1,
			wideWatchers: 1, wideConnections: 1, wideWatchEvents: 1, wideWatchRate: 1, listObjects: 1, listReqs: 1, output: "table"}
	}
	for _, tc := range []struct {
		name   string
		modify func(*benchFlags)
		want   []string // substrings of the error; none: valid
	}{
		{"defaults", func(*benchFlags) {}, nil},
		{"json", func(f *benchFlags) { f.output = "json" }, nil},
		{"dir with etcd", func(f *benchFlags) { f.dir, f.etcdServers = "d", []string{"https://127.0.0.1:2379"} }, nil},
		{"yaml output", func(f *benchFlags) { f.output = "yaml" }, []string{`-o "yaml"`}},
		{"every count", func(f *benchFlags) {
			f.concurrency, f.requests, f.objectBytes, f.watchers, f.watchEvents, f.listObjects, f.listReqs = 0, -1, 0, 0, 0, 0, -2
		}, []string{"--concurrency 0", "--requests -1", "--object-bytes 0", "--watchers 0", "--watch-events 0", "--list-objects 0", "--list-requests -2"}},
		{"dir without etcd", func(f *benchFlags) { f.dir = "d" }, []string{"--etcd-servers"}},
		{"paced watch", func(f *benchFlags) { f.watchRate = 20 }, nil},
		{"negative watch rate", func(f *benchFlags) { f.watchRate = -1 }, []string{"--watch-rate -1"}},
		{"zero watch rate", func(f *benchFlags) { f.watchRate = 0 }, []string{"--watch-rate 0"}},
		{"no wide phase", func(f *benchFlags) { f.wideWatchers = 0 }, nil},
		{"wide watch", func(f *benchFlags) {
			f.wideWatchers, f.wideConnections, f.wideWatchRate = -1, 0, 0
		}, []string{"--wide-watchers -1", "--wide-connections 0", "--wide-watch-rate 0"}},
		{"hold", func(f *benchFlags) { f.hold, f.pid = 100000, 42 }, nil},
		{"hold with watch list", func(f *benchFlags) { f.hold, f.pid, f.watchList = 1, 42, true }, nil},
		{"negative hold", func(f *benchFlags) { f.hold, f.pid = -1, 42 }, []string{"--hold -1"}},
		{"hold without pid", func(f *benchFlags) { f.hold = 1 }, []string{"--apiserver-pid"}},
		{"watch list without hold", func(f *benchFlags) { f.watchList = true }, []string{"--watch-list"}},
		{"pid without hold", func(f *benchFlags) { f.pid = 42 }, nil},
		{"negative pid", func(f *benchFlags) { f.pid = -1 }, []string{"--apiserver-pid -1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := valid()
			tc.modify(&f)
			checkValidation(t, f.validate(), tc.want)
		})
	}
}

// TestBenchEndToEnd runs `trustplane bench` against `trustplane up` and
// checks that every phase is measured and that nothing is left behind,
// neither after a run nor after one that fails.
func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a cluster")
	}
	c := e2etest.StartCluster(t)
	dir, etcdURL, adminConf := c.Dir, c.EtcdURL, c.AdminConf()

	stdout, stderr, err := e2etest.Run(t, "bench", "--kubeconfig", adminConf, "--dir", dir, "--etcd-servers", etcdURL,
		"--requests", "200", "--list-objects", "300", "--list-requests", "2", "--watchers", "20", "--watch-events", "20", "--watch-rate", "200",
		"--wide-watchers", "30", "--wide-connections", "3", "--wide-watch-events", "20", "--wide-watch-rate", "200", "--apiserver-pid", strconv.Itoa(c.PID()), "-o", "json")
	if err != nil {
		t.Fatalf("trustplane bench: %v\nstderr:\n%s", err, stderr)
	}
	var results []bench.Result
	if err := json.Unmarshal(stdout, &results); err != nil {
		t.Fatalf("bench output is not a JSON list of results: %v\n%s", err, stdout)
	}
	// Its namespace is labelled for Secrets, so that the shipped
	// policies warn of none of its creates: a run measures creates, not
	// warnings.
	if strings.Contains(string(stderr), "Warning:") {
		t.Errorf("bench's requests drew warnings:\n%s", stderr)
	}
	byPhase := map[string]bench.Result{}
	var phases []string
	var large []bench.Result
	for _, r := range results {
		if r.Phase == bench.PhaseListLarge {
			large = append(large, r)
			continue
		}
		byPhase[r.Phase] = r
		phases = append(phases, r.Phase)
	}
	wantPhases := []string{bench.PhaseCreate, bench.PhaseGet, bench.PhaseList, bench.PhaseWatch, bench.PhaseWatchBurst, bench.PhaseWatchWide, bench.PhaseEtcdPut}
	if !slices.Equal(phases, wantPhases) {
		t.Errorf("phases %q, want %q", phases, wantPhases)
	}
	for _, p := range []string{bench.PhaseCreate, bench.PhaseGet, bench.PhaseList, bench.PhaseEtcdPut} {
		if r := byPhase[p]; r.Ops != 200 || r.PerSecond <= 0 || r.P50 <= 0 || r.P99 < r.P50 {
			t.Errorf("%s: %+v, want 200 ops, a positive rate and 0 < p50 <= p99", p, r)
		}
	}
	if r := byPhase[bench.PhaseList]; r.Items != 200 {
		t.Errorf("list: %d items per list, want 200", r.Items)
	}
	checkLargeLists(t, large)
	for _, w := range []struct {
		phase                 string
		watchers, connections int
		rate                  float64
	}{
		// 20 watches on one client take one connection; 30 spread over
		// three clients take one each.
		{bench.PhaseWatch, 20, 1, 200},
		{bench.PhaseWatchBurst, 20, 1, 0},
		{bench.PhaseWatchWide, 30, 3, 200},
	} {
		r := byPhase[w.phase]
		if r.Watchers != w.watchers || r.Expected != w.watchers*20 || r.Delivered != r.Expected || r.Connections != w.connections {
			t.Errorf("%s: %d watchers over %d connections delivered %d of %d events, want %d watchers over %d and all %d",
				w.phase, r.Watchers, r.Connections, r.Delivered, r.Expected, w.watchers, w.connections, w.watchers*20)
		}
		if r.P50 <= 0 || r.P99 < r.P50 || r.ClientCPU <= 0 {
			t.Errorf("%s: p50 %s, p99 %s, client CPU %s per delivery; want 0 < p50 <= p99 and some CPU", w.phase, r.P50, r.P99, r.ClientCPU)
		}
		// 20 creates paced at 200/s take at least 20 ticks of 5 ms.
		if r.Rate != w.rate || (w.rate > 0 && r.Seconds < 0.095) {
			t.Errorf("%s: %g events/s over %.3fs, want %g/s and, paced, at least 0.095s", w.phase, r.Rate, r.Seconds, w.rate)
		}
	}
	if r := byPhase[bench.PhaseEtcdPut]; r.Bytes <= 1024 {
		t.Errorf("etcd-put: values of %d bytes, want more than the 1024-byte payload of a stored Secret", r.Bytes)
	}
	if r := byPhase[bench.PhaseCreate]; r.Ratio <= 0 {
		t.Errorf("create: ratio to etcd puts %v, want positive", r.Ratio)
	}
	benchCheckNothingLeft(t, adminConf, dir, etcdURL)

	// A hold run reads the memory of the server's process: here the
	// whole cluster of `trustplane up`, which is enough to check that it
	// is read. Its watches, of both kinds, must all open and, with the
	// watch-list protocol, deliver every ConfigMap.
	for _, watchList := range []bool{false, true} {
		args := []string{"bench", "--kubeconfig", adminConf, "--hold", "50", "--watchers", "3", "--apiserver-pid", strconv.Itoa(c.PID()), "-o", "json"}
		if watchList {
			args = append(args, "--watch-list")
		}
		stdout, stderr, err := e2etest.Run(t, args...)
		if err != nil {
			t.Fatalf("trustplane %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
		}
		var results []bench.Result
		if err := json.Unmarshal(stdout, &results); err != nil {
			t.Fatalf("bench output is not a JSON list of results: %v\n%s", err, stdout)
		}
		if len(results) != 1 || results[0].Phase != bench.PhaseHold {
			t.Fatalf("hold run (watch list %t) results %+v, want one of phase %s", watchList, results, bench.PhaseHold)
		}
		r := results[0]
		if r.Ops != 50 || r.Watchers != 3 || r.BaseRSSBytes <= 0 || r.RSSBytes <= 0 || r.PeakRSSBytes < r.RSSBytes {
			t.Errorf("hold (watch list %t): %+v, want 50 creates, 3 watchers, 0 < RSS <= peak and an RSS before", watchList, r)
		}
		if wantExpected := map[bool]int{false: 0, true: 150}[watchList]; r.Expected != wantExpected || r.Delivered != r.Expected {
			t.Errorf("hold (watch list %t): delivered %d of %d initial events, want %d of %d", watchList, r.Delivered, r.Expected, wantExpected, wantExpected)
		}
		benchCheckNothingLeft(t, adminConf, dir, etcdURL)
	}

	// A run whose creates fail (an object over the request size limit)
	// reports the failure and still removes its namespace.
	_, stderr, err = e2etest.Run(t, "bench", "--kubeconfig", adminConf, "--requests", "1", "--object-bytes", strconv.Itoa(4<<20))
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Errorf("bench with 4 MiB objects: %v, want a non-zero exit", err)
	}
	if !strings.Contains(string(stderr), "error: bench create: create secret") {
		t.Errorf("bench with 4 MiB objects printed:\n%s\nwant an error naming the failed create", stderr)
	}
	benchCheckNothingLeft(t, adminConf, dir, etcdURL)
}

// TestBenchSchedulerEndToEnd runs `trustplane bench scheduler` against
// `trustplane up`, which runs the scheduler: every pod is bound, the run
// ends with its result line, and its nodes and namespace are gone.
func TestBenchSchedulerEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a cluster")
	}
	c := e2etest.StartCluster(t)
	stdout, stderr, err := e2etest.Run(t, "bench", "scheduler", "--kubeconfig", c.AdminConf(), "--nodes", "3", "--pods", "20", "--timeout", "2m")
	if err != nil {
		t.Fatalf("trustplane bench scheduler: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	last := regexp.MustCompile(`^scheduled 20 pods on 3 nodes in ([0-9]+\.[0-9]) s: ([0-9]+) pods/s, p50 ([0-9]+) ms, p99 ([0-9]+) ms$`)
	m := last.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		t.Fatalf("last line %q, want %s", lines[len(lines)-1], last)
	}
	p50, _ := strconv.Atoi(m[3])
	p99, _ := strconv.Atoi(m[4])
	if p99 < p50 {
		t.Errorf("p50 %d ms above p99 %d ms", p50, p99)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	client := kubeconfigClient(t, c.AdminConf())
	// The run's nodes carry its label, whatever its value.
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "trustplane.io/bench"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		t.Errorf("node %s is left after bench scheduler", n.Name)
	}
	nss, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, "bench-sched-") {
			t.Errorf("namespace %s (%s) is left after bench scheduler", ns.Name, ns.Status.Phase)
		}
	}
	checkNoEtcdKeys(t, c.Dir, c.EtcdURL, "/registry/nodes/bench-sched-", "/registry/namespaces/bench-sched-", "/registry/pods/bench-sched-")
}

// checkLargeLists checks the large lists of a run of 300 ConfigMaps, 2
// lists of each variant: one result for each format, resourceVersion and
// Accept-Encoding; a response read as long as its body, or for one the
// server compressed, shorter.
func checkLargeLists(t *testing.T, large []bench.Result) {
	t.Helper()
	var variants []string
	for _, r := range large {
		if r.ResourceVersion == nil {
			t.Fatalf("list-large %+v without a resourceVersion", r)
		}
		variants = append(variants, fmt.Sprintf("%s rv=%q gzip=%t", r.Format, *r.ResourceVersion, r.AcceptGzip))
		if r.Ops != 2 || r.Items != 300 || r.P50 <= 0 || r.P99 < r.P50 {
			t.Errorf("list-large %s: %+v, want 2 lists of 300 items and 0 < p50 <= p99", variants[len(variants)-1], r)
		}
		// 300 ConfigMaps of 1 KiB are 300 KiB at least.
		if r.BodyBytes < 300<<10 {
			t.Errorf("list-large %s: bodies of %d bytes, want 300 KiB at least", variants[len(variants)-1], r.BodyBytes)
		}
		switch {
		case !r.AcceptGzip && r.Gzipped != 0:
			t.Errorf("list-large %s: %d responses compressed without gzip accepted", variants[len(variants)-1], r.Gzipped)
		case r.Gzipped == 0 && r.WireBytes < r.BodyBytes:
			t.Errorf("list-large %s: %d bytes read for a plain body of %d", variants[len(variants)-1], r.WireBytes, r.BodyBytes)
		case r.Gzipped == r.Ops && r.WireBytes >= r.BodyBytes:
			t.Errorf("list-large %s: %d bytes read for a compressed body of %d", variants[len(variants)-1], r.WireBytes, r.BodyBytes)
		}
	}
	var want []string
	for _, f := range []string{bench.FormatProtobuf, bench.FormatJSON} {
		for _, rv := range []string{"", "0"} {
			for _, gzip := range []bool{true, false} {
				want = append(want, fmt.Sprintf("%s rv=%q gzip=%t", f, rv, gzip))
			}
		}
	}
	if !slices.Equal(variants, want) {
		t.Errorf("list-large variants %q, want %q", variants, want)
	}
}

// benchCheckNothingLeft checks that no bench namespace remains, and no raw
// etcd key of one: neither the baseline's nor any object's.
func benchCheckNothingLeft(t *testing.T, adminConf, dir, etcdURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	client := kubeconfigClient(t, adminConf)
	nss, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, "trustplane-bench-") {
			t.Errorf("namespace %s (%s) is left after bench", ns.Name, ns.Status.Phase)
		}
	}
	checkNoEtcdKeys(t, dir, etcdURL,
		"/registry/trustplane-bench/",
		"/registry/namespaces/trustplane-bench-",
		"/registry/secrets/trustplane-bench-",
		"/registry/configmaps/trustplane-bench-",
	)
}

// checkNoEtcdKeys checks that etcd holds no key under any of prefixes.
func checkNoEtcdKeys(t *testing.T, dir, etcdURL string, prefixes ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cli, err := etcd.NewClient(ctx, etcd.APIServerClientConfig(filepath.Join(dir, "pki"), []string{etcdURL}))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for _, prefix := range prefixes {
		resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) > 0 {
			t.Errorf("%d etcd keys under %s are left after bench, the first %s", len(resp.Kvs), prefix, resp.Kvs[0].Key)
		}
	}
}
