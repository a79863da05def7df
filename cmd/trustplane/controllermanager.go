package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trustplane/trustplane/controllers"
	"github.com/trustplane/trustplane/datadir"
)

func newControllerManagerCommand() *cobra.Command {
	var (
		dir        string
		kubeconfig string
		list       []string
		workers    int
		signing    clusterSigningFlags
		qps        float32
		burst      int
		lifecycle  nodeLifecycleFlags
	)
	cmd := &cobra.Command{
		Use:   "controller-manager [--kubeconfig FILE] [--controllers a,b,-c]",
		Short: "Run the controllers alone, each as its own ServiceAccount",
		Long: `Run the controller manager: client-go controllers that talk to the API server
only. Its own identity (--kubeconfig, default DIR/controller-manager.conf)
may do one thing, obtain tokens for the controllers' ServiceAccounts in
kube-system; each controller then writes as its own ServiceAccount, within
its own role. Instances that share a cluster elect one leader through the
Lease kube-system/kube-controller-manager; a standby takes over within 15s.

Controllers: ` + strings.Join(controllers.Names(), ", ") + `.
--controllers takes "*" (all, the default), names, and -name to leave one
out, as kube-controller-manager's flag does.

csrsigning signs node client certificates with the cluster CA, whose
certificate and key it reads from files (--cluster-signing-cert-file and
--cluster-signing-key-file, default DIR/pki/ca.crt and ca.key), as kube's
controller does: the controller manager runs on the control plane's host,
beside the API server, and the CA key never goes through the API.

nodelifecycle turns a node whose Lease and status were not renewed for
--node-monitor-grace-period Unknown and taints it
node.kubernetes.io/unreachable:NoExecute, at most --node-eviction-rate nodes
a second per zone; taint-eviction-controller then deletes its pods that do
not tolerate the taint, or once their tolerationSeconds have passed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := lifecycle.validate(cmd.Flags()); err != nil {
				return err
			}
			names, err := controllers.Select(list)
			if err != nil {
				return err
			}
			if kubeconfig == "" {
				kubeconfig = datadir.Layout{Dir: dir}.Kubeconfig("controller-manager")
			}
			signing.defaults(dir)
			if qps <= 0 || burst <= 0 {
				return fmt.Errorf("--kube-api-qps %g and --kube-api-burst %d must be positive", qps, burst)
			}
			o := signing.options(names, workers, newLogger())
			o.QPS, o.Burst = qps, burst
			o.NodeLifecycle = lifecycle.config
			if err := controllers.CheckOptions(o); err != nil {
				// The signing CA is by default in the data directory,
				// which --kubeconfig alone does not name.
				return fmt.Errorf("%w (name the cluster signing CA with --cluster-signing-cert-file and --cluster-signing-key-file or the data directory with --dir, or leave the signer out: --controllers=*,-csrsigning)", err)
			}
			if o.Config, err = clientConfig(kubeconfig, ""); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "controller manager running: %s\n", strings.Join(names, ", "))
			return controllers.Run(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&dir, "dir", datadir.DefaultDir, "data directory whose controller-manager.conf is used without --kubeconfig")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "the controller manager's kubeconfig (default DIR/controller-manager.conf)")
	fs.StringSliceVar(&list, "controllers", []string{"*"}, "controllers to run: *, names, -name")
	fs.IntVar(&workers, "concurrent-syncs", 5, "keys each controller syncs at once")
	fs.Float32Var(&qps, "kube-api-qps", controllers.DefaultQPS, "requests per second of each controller's client (kube-controller-manager's default is 20)")
	fs.IntVar(&burst, "kube-api-burst", controllers.DefaultBurst, "requests in a burst of each controller's client (kube-controller-manager's default is 30)")
	signing.addTo(fs)
	lifecycle.addTo(fs)
	return cmd
}

// nodeLifecycleFlags are kube-controller-manager's flags of its node
// lifecycle controller, with its defaults.
type nodeLifecycleFlags struct {
	config controllers.NodeLifecycleConfig
}

func (f *nodeLifecycleFlags) addTo(fs *pflag.FlagSet) {
	c := &f.config
	fs.DurationVar(&c.NodeMonitorPeriod, "node-monitor-period", 5*time.Second, "how often every node's heartbeats are checked")
	fs.DurationVar(&c.NodeMonitorGracePeriod, "node-monitor-grace-period", 40*time.Second, "how long a node may go without renewing its Lease or posting its status before it is Unknown and tainted unreachable")
	fs.DurationVar(&c.NodeStartupGracePeriod, "node-startup-grace-period", time.Minute, "that grace for a node that never posted its status")
	fs.Float32Var(&c.NodeEvictionRate, "node-eviction-rate", 0.1, "nodes per second given a NoExecute taint in a healthy zone")
	fs.Float32Var(&c.SecondaryNodeEvictionRate, "secondary-node-eviction-rate", 0.01, "nodes per second given a NoExecute taint in an unhealthy zone larger than --large-cluster-size-threshold; a smaller one gets none")
	fs.IntVar(&c.LargeClusterSizeThreshold, "large-cluster-size-threshold", 50, "nodes a zone must have for the secondary rate to apply")
	fs.Float32Var(&c.UnhealthyZoneThreshold, "unhealthy-zone-threshold", 0.55, "share of a zone's nodes (more than two) not ready that makes it unhealthy")
}

// validate refuses a flag set to 0: the controller reads 0 as kube's
// default, which would quietly turn a rate of 0, meant to stop
// evictions, into one that does not.
func (f *nodeLifecycleFlags) validate(fs *pflag.FlagSet) error {
	c := f.config
	var errs []error
	for _, flag := range []struct {
		name string
		zero bool
	}{
		{"node-monitor-period", c.NodeMonitorPeriod == 0},
		{"node-monitor-grace-period", c.NodeMonitorGracePeriod == 0},
		{"node-startup-grace-period", c.NodeStartupGracePeriod == 0},
		{"node-eviction-rate", c.NodeEvictionRate == 0},
		{"secondary-node-eviction-rate", c.SecondaryNodeEvictionRate == 0},
		{"large-cluster-size-threshold", c.LargeClusterSizeThreshold == 0},
		{"unhealthy-zone-threshold", c.UnhealthyZoneThreshold == 0},
	} {
		if flag.zero && fs.Changed(flag.name) {
			errs = append(errs, fmt.Errorf("--%s 0: want more than 0", flag.name))
		}
	}
	if len(errs) > 0 {
		errs = append(errs, errors.New("(to stop taint-based eviction, leave its controller out: --controllers=*,-taint-eviction-controller)"))
	}
	return errors.Join(errs...)
}

// clusterSigningFlags are kube-controller-manager's flags of the CA that
// csrsigning signs with.
type clusterSigningFlags struct {
	certFile, keyFile string
	duration          time.Duration
}

func (f *clusterSigningFlags) addTo(fs *pflag.FlagSet) {
	fs.StringVar(&f.certFile, "cluster-signing-cert-file", "", "the CA certificate csrsigning signs node client certificates with (default DIR/pki/ca.crt)")
	fs.StringVar(&f.keyFile, "cluster-signing-key-file", "", "the CA's key (default DIR/pki/ca.key)")
	fs.DurationVar(&f.duration, "cluster-signing-duration", 365*24*time.Hour, "the longest a signed certificate lives; never beyond the CA")
}

// defaults makes the files the cluster CA's in dir, unless set.
func (f *clusterSigningFlags) defaults(dir string) {
	pkiDir := datadir.Layout{Dir: dir}.PKI()
	f.certFile = cmp.Or(f.certFile, filepath.Join(pkiDir, "ca.crt"))
	f.keyFile = cmp.Or(f.keyFile, filepath.Join(pkiDir, "ca.key"))
}

func (f *clusterSigningFlags) options(names []string, workers int, logger *slog.Logger) controllers.Options {
	return controllers.Options{
		Controllers: names, Workers: workers, Logger: logger,
		ClusterSigningCertFile: f.certFile, ClusterSigningKeyFile: f.keyFile, ClusterSigningDuration: f.duration,
	}
}

// runControllerManager runs the controllers of o with the identity of the
// kubeconfig at path until ctx is done.
func runControllerManager(ctx context.Context, path string, o controllers.Options) error {
	cfg, err := clientConfig(path, "")
	if err != nil {
		return err
	}
	o.Config = cfg
	return controllers.Run(ctx, o)
}
