package main

import (
	"cmp"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/trustplane/trustplane/bench"
	"github.com/trustplane/trustplane/datadir"
)

func newBenchSchedulerCommand() *cobra.Command {
	var (
		kubeconfig, dir   string
		nodes, pods, conc int
		timeout           time.Duration
	)
	cmd := &cobra.Command{
		Use:   "scheduler [--nodes N] [--pods P]",
		Short: "Measure the scheduler of a running cluster: pods bound per second, and the time to bind",
		Long: `Measure the scheduler of a running cluster (trustplane up, with its scheduler
and controller manager): create --nodes simulated nodes (Node objects with
capacity and a Ready condition, created through the API; no kubelet runs
their pods), then --pods pods that fit only on them, as fast as the API
server takes them at --concurrency, and wait until every pod is bound. It
reports the rate at which the API server took the pods, the baseline of
this run, and ends with the line

  scheduled P pods on N nodes in S s: R pods/s, p50 X ms, p99 Y ms

where S runs from the first create to the last binding, and the
percentiles are of each pod's time from its create request to its binding
seen through a watch. The nodes and the run's namespace are deleted at the
end.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			restConfig, err := clientConfig(kubeconfig, cmp.Or(dir, datadir.DefaultDir))
			if err != nil {
				return err
			}
			restConfig.QPS = -1
			restConfig.ContentType = "application/vnd.kubernetes.protobuf"
			restConfig.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
			restConfig.UserAgent = "trustplane-bench/" + version
			client, err := kubernetes.NewForConfig(restConfig)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			res, err := bench.Scheduler(cmd.Context(), bench.SchedulerConfig{
				Client: client, Nodes: nodes, Pods: pods, Concurrency: conc, Timeout: timeout, Progress: out,
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "API server took the pods at %.0f creates/s; scheduling kept up at %.2f of that\n",
				res.CreatesPerSecond, res.PerSecond/res.CreatesPerSecond)
			fmt.Fprintln(out, res)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default $KUBECONFIG, else admin.conf in --dir or in "+datadir.DefaultDir+")")
	fs.StringVar(&dir, "dir", "", "data directory of the cluster, whose admin.conf is used")
	fs.IntVar(&nodes, "nodes", 1000, "simulated nodes to create")
	fs.IntVar(&pods, "pods", 5000, "pods to create and have scheduled")
	fs.IntVar(&conc, "concurrency", bench.DefaultConcurrency, "creates in flight")
	fs.DurationVar(&timeout, "timeout", 10*time.Minute, "how long to wait for every pod to be bound")
	return cmd
}
