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
	kubeconfig      string
	dir             string
	etcdServers     []string
	concurrency     int
	requests        int
	objectBytes     int
	watchers        int
	watchEvents     int
	watchRate       float64
	wideWatchers    int
	wideConnections int
	wideWatchEvents int
	wideWatchRate   float64
	listObjects     int
	listReqs        int
	output          string
	hold            int
	watchList       bool
	pid             int
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
		{"--wide-watch-events", f.wideWatchEvents},
	} {
		if n.v <= 0 {
			errs = append(errs, fmt.Errorf("%s %d must be positive", n.name, n.v))
		}
	}
	if !(f.watchRate > 0) {
		errs = append(errs, fmt.Errorf("--watch-rate %g must be positive", f.watchRate))
	}
	if f.wideWatchers < 0 {
		errs = append(errs, fmt.Errorf("--wide-watchers %d must not be negative", f.wideWatchers))
	}
	if f.wideConnections <= 0 {
		errs = append(errs, fmt.Errorf("--wide-connections %d must be positive", f.wideConnections))
	}
	if !(f.wideWatchRate > 0) {
		errs = append(errs, fmt.Errorf("--wide-watch-rate %g must be positive", f.wideWatchRate))
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
	if f.hold == 0 && f.watchList {
		errs = append(errs, errors.New("--watch-list is for --hold"))
	}
	if f.pid < 0 {
		errs = append(errs, fmt.Errorf("--apiserver-pid %d must be positive", f.pid))
	}
	if f.dir != "" && len(f.etcdServers) == 0 {
		errs = append(errs, errors.New("--dir needs at least one --etcd-servers URL"))
	}
	return errors.Join(errs...)
}

func newBenchCommand() *cobra.Command {
	f := benchFlags{
		etcdServers:     []string{"https://127.0.0.1:2379"},
		concurrency:     bench.DefaultConcurrency,
		requests:        bench.DefaultRequests,
		objectBytes:     bench.DefaultObjectBytes,
		watchers:        bench.DefaultWatchers,
		watchEvents:     bench.DefaultWatchEvents,
		watchRate:       bench.DefaultWatchRate,
		wideWatchers:    bench.DefaultWideWatchers,
		wideConnections: bench.DefaultWideConnections,
		wideWatchEvents: bench.DefaultWideWatchEvents,
		wideWatchRate:   bench.DefaultWideWatchRate,
		listObjects:     bench.DefaultListObjects,
		listReqs:        bench.DefaultListRequests,
		output:          "table",
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
of a list as decoded and as read from the connection; then the watch
fan-out, in three phases, each reporting the share of the events its
watchers received and the p50 and p99 latency from just before each create
to each delivery:

  watch        --watchers watches of ConfigMaps, --watch-events creates paced
               at --watch-rate per second: delivery under a load the cluster
               sustains;
  watch-burst  the same watchers, the creates as fast as --concurrency
               allows: the latency includes the queue of the burst;
  watch-wide   --wide-watchers watches spread over --wide-connections
               clients, each with its own connections, --wide-watch-events
               creates paced at --wide-watch-rate per second (0 watchers
               skips it).

The watches are in this process, each client with connections of its own,
whose number each phase reports, with this process's CPU time per delivery
and, given --apiserver-pid, the API server's (from /proc, on this machine).

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
				Client:          client,
				REST:            restConfig,
				ListObjects:     f.listObjects,
				ListRequests:    f.listReqs,
				Concurrency:     f.concurrency,
				Requests:        f.requests,
				ObjectBytes:     f.objectBytes,
				Watchers:        f.watchers,
				WatchEvents:     f.watchEvents,
				WatchRate:       f.watchRate,
				WideWatchers:    f.wideWatchers,
				WideConnections: f.wideConnections,
				WideWatchEvents: f.wideWatchEvents,
				WideWatchRate:   f.wideWatchRate,
				Logger:          newLogger(),
				Hold:            f.hold,
				WatchList:       f.watchList,
			}
			if f.wideWatchers == 0 {
				c.WideWatchers = -1
			}
			if f.pid > 0 {
				c.ServerCPU = bench.ProcessCPU(f.pid)
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
	fs.Float64Var(&f.watchRate, "watch-rate", f.watchRate, "events per second the watch phase creates")
	fs.IntVar(&f.wideWatchers, "wide-watchers", f.wideWatchers, "watches open during the watch-wide phase; 0 skips it")
	fs.IntVar(&f.wideConnections, "wide-connections", f.wideConnections, "clients, each with its own connections, that the watch-wide phase spreads its watches over")
	fs.IntVar(&f.wideWatchEvents, "wide-watch-events", f.wideWatchEvents, "ConfigMaps created while the watch-wide phase's watches are open")
	fs.Float64Var(&f.wideWatchRate, "wide-watch-rate", f.wideWatchRate, "events per second the watch-wide phase creates")
	fs.IntVar(&f.hold, "hold", 0, "measure memory instead: ConfigMaps to create and watch before reading the API server's RSS")
	fs.BoolVar(&f.watchList, "watch-list", false, "with --hold, watch with the watch-list protocol (sendInitialEvents) as client-go informers do")
	fs.IntVar(&f.pid, "apiserver-pid", 0, "the PID of the API server process, whose CPU time per watch delivery (and, with --hold, memory) is read from /proc")
	fs.StringVarP(&f.output, "output", "o", f.output, "output format: table or json")
	cmd.AddCommand(newBenchSchedulerCommand())
	return cmd
}
