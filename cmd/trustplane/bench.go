package main

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/trustplane/trustplane/bench"
	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/etcd"
)

// benchFlags are the flags of `trustplane bench`.
type benchFlags struct {
	kubeconfig  string
	dir         string
	etcdServers []string
	concurrency int
	requests    int
	objectBytes int
	watchers    int
	watchEvents int
	listObjects int
	listReqs    int
	watchRate   float64
	output      string
	hold        int
	watchList   bool
	pid         int
}

func (f *benchFlags) validate() error {
	var errs []error
	for _, n := range []struct {
		name string
		v    int
	}{
		{"--concurrency", f.concurrency},
		{"--requests", f.requests},
		{"--object-bytes", f.objectBytes},
		{"--watchers", f.watchers},
		{"--watch-events", f.watchEvents},
		{"--list-objects", f.listObjects},
		{"--list-requests", f.listReqs},
	} {
		if n.v <= 0 {
			errs = append(errs, fmt.Errorf("%s %d must be positive", n.name, n.v))
		}
	}
	if !(f.watchRate >= 0) {
		errs = append(errs, fmt.Errorf("--watch-rate %g must be positive or zero", f.watchRate))
	}
	if f.output != "table" && f.output != "json" {
		errs = append(errs, fmt.Errorf("-o %q: want table or json", f.output))
	}
	if f.hold < 0 {
		errs = append(errs, fmt.Errorf("--hold %d must not be negative", f.hold))
	}
	if f.hold > 0 && f.pid <= 0 {
		errs = append(errs, errors.New("--hold needs the --apiserver-pid of the API server to measure"))
	}
	if f.hold == 0 && (f.watchList || f.pid != 0) {
		errs = append(errs, errors.New("--watch-list and --apiserver-pid are for --hold"))
	}
	if f.dir != "" && len(f.etcdServers) == 0 {
		errs = append(errs, errors.New("--dir needs at least one --etcd-servers URL"))
	}
	return errors.Join(errs...)
}

func newBenchCommand() *cobra.Command {
	f := benchFlags{
		etcdServers: []string{"https://127.0.0.1:2379"},
		concurrency: bench.DefaultConcurrency,
		requests:    bench.DefaultRequests,
		objectBytes: bench.DefaultObjectBytes,
		watchers:    bench.DefaultWatchers,
		watchEvents: bench.DefaultWatchEvents,
		listObjects: bench.DefaultListObjects,
		listReqs:    bench.DefaultListRequests,
		output:      "table",
	}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a running cluster: creates, gets, lists, watch fan-out, and raw etcd puts",
		Long: `Measure a running cluster as an API client, in a namespace of its own that is
deleted at the end: Secret creates, gets and lists per second with their p50
and p99 latency at --concurrency; then lists of --list-objects ConfigMaps of
--object-bytes, one at a time, --list-requests of each variant: protobuf or
JSON, resourceVersion "" (a consistent read) or "0" (the server's cache),
with Accept-Encoding: gzip (client-go's default) or without, with the bytes
of a list as decoded and as read from the connection; then --watchers
watches of ConfigMaps, the
share of --watch-events events each received and the p99 delivery latency.
The events are created as fast as --concurrency allows, so that latency
includes the queue of the burst; --watch-rate N paces them at N per second
instead, to measure delivery under a load the cluster sustains.

With --dir, it also puts values as large as one stored Secret straight into
etcd, as the API server's etcd identity found in DIR/pki, and reports creates
per second as a ratio of those raw puts, measured in the same run.

With --hold N, it measures memory instead: it creates N ConfigMaps of
--object-bytes at --concurrency, opens --watchers watches of them (with
--watch-list, each receives them all as initial events, as client-go
informers do), then reads the resident memory (VmRSS, and the peak VmHWM)
of the API server process --apiserver-pid from /proc. Run the API server
alone in its process (trustplane apiserver, with trustplane etcd apart), on
this machine, freshly started: the peak counts from its start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			ctx := cmd.Context()
			// Without --dir, bench has no etcd baseline, but still finds
			// admin.conf in the default data directory.
			restConfig, err := clientConfig(f.kubeconfig, cmp.Or(f.dir, datadir.DefaultDir))
			if err != nil {
				return err
			}
			// Measure the server, not client-go's rate limiter; speak
			// protobuf as the cluster's own components do.
			restConfig.QPS = -1
			restConfig.Burst = 2 * f.concurrency
			restConfig.ContentType = "application/vnd.kubernetes.protobuf"
			restConfig.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
			restConfig.UserAgent = "trustplane-bench/" + version
			client, err := kubernetes.NewForConfig(restConfig)
			if err != nil {
				return fmt.Errorf("client for %s: %w", restConfig.Host, err)
			}
			c := bench.Config{
				Client:       client,
				REST:         restConfig,
				ListObjects:  f.listObjects,
				ListRequests: f.listReqs,
				Concurrency:  f.concurrency,
				Requests:     f.requests,
				ObjectBytes:  f.objectBytes,
				Watchers:     f.watchers,
				WatchEvents:  f.watchEvents,
				WatchRate:    f.watchRate,
				Logger:       newLogger(),
				Hold:         f.hold,
				WatchList:    f.watchList,
			}
			if f.pid > 0 {
				c.Memory = bench.ProcessMemory(f.pid)
				// A wrong PID fails now, not after the creates.
				if _, err := c.Memory(ctx); err != nil {
					return err
				}
			}
			if f.dir != "" {
				cli, err := etcd.NewClient(ctx, etcd.APIServerClientConfig(datadir.Layout{Dir: f.dir}.PKI(), f.etcdServers))
				if err != nil {
					return err
				}
				defer cli.Close()
				c.Etcd = cli
			}
			results, runErr := bench.Run(ctx, c)
			if len(results) > 0 {
				out := cmd.OutOrStdout()
				var err error
				if f.output == "json" {
					err = bench.WriteJSON(out, results)
				} else {
					err = bench.WriteTable(out, results)
				}
				runErr = errors.Join(runErr, err)
			}
			return runErr
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default $KUBECONFIG, else admin.conf in --dir or in "+datadir.DefaultDir+")")
	fs.StringVar(&f.dir, "dir", "", "data directory of the cluster; enables the raw etcd baseline with the API server's etcd credentials in DIR/pki")
	fs.StringSliceVar(&f.etcdServers, "etcd-servers", f.etcdServers, "etcd client URLs for the baseline (with --dir)")
	fs.IntVar(&f.concurrency, "concurrency", f.concurrency, "operations in flight")
	fs.IntVar(&f.requests, "requests", f.requests, "operations in each of the create, get, list and etcd-put phases")
	fs.IntVar(&f.objectBytes, "object-bytes", f.objectBytes, "payload bytes of each Secret and ConfigMap")
	fs.IntVar(&f.listObjects, "list-objects", f.listObjects, "ConfigMaps the large lists list")
	fs.IntVar(&f.listReqs, "list-requests", f.listReqs, "lists of each variant of the large lists")
	fs.IntVar(&f.watchers, "watchers", f.watchers, "watches open during the watch fan-out")
	fs.IntVar(&f.watchEvents, "watch-events", f.watchEvents, "ConfigMaps created while the watches are open")
	fs.Float64Var(&f.watchRate, "watch-rate", 0, "events per second the watch phase creates; 0 creates them as fast as --concurrency allows")
	fs.IntVar(&f.hold, "hold", 0, "measure memory instead: ConfigMaps to create and watch before reading the API server's RSS")
	fs.BoolVar(&f.watchList, "watch-list", false, "with --hold, watch with the watch-list protocol (sendInitialEvents) as client-go informers do")
	fs.IntVar(&f.pid, "apiserver-pid", 0, "with --hold, the PID of the API server process, whose memory is read from /proc")
	fs.StringVarP(&f.output, "output", "o", f.output, "output format: table or json")
	cmd.AddCommand(newBenchSchedulerCommand())
	return cmd
}
