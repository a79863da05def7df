package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/scheduler"
)

// schedulerFlags are the flags of `trustplane scheduler`, and those of
// `up` that reach the scheduler it runs.
type schedulerFlags struct {
	kubeconfig                                string
	leaderElect                               bool
	leaseDuration, renewDeadline, retryPeriod time.Duration
	qps                                       float32
	burst                                     int
	// profile and the backoffs are a --config file's; the defaults when
	// nil and zero.
	profile                    *scheduler.Profile
	initialBackoff, maxBackoff time.Duration
}

func newSchedulerFlags() *schedulerFlags {
	return &schedulerFlags{
		leaderElect:   true,
		leaseDuration: 15 * time.Second,
		renewDeadline: 10 * time.Second,
		retryPeriod:   2 * time.Second,
		// kube-scheduler's 50 per second would hold it to 50 bindings a
		// second; the API server's own limits protect it.
		qps:   1000,
		burst: 2000,
	}
}

func (f *schedulerFlags) addTo(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "the scheduler's kubeconfig (default DIR/scheduler.conf)")
	fs.BoolVar(&f.leaderElect, "leader-elect", f.leaderElect, "elect a leader through the Lease kube-system/kube-scheduler before scheduling")
	fs.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", f.leaseDuration, "how long a standby waits after the leader's last renewal before it takes over")
	fs.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", f.renewDeadline, "how long the leader tries to renew before it gives up leading")
	fs.DurationVar(&f.retryPeriod, "leader-elect-retry-period", f.retryPeriod, "how often to try to acquire or renew the Lease")
	fs.Float32Var(&f.qps, "kube-api-qps", f.qps, "requests per second to the API server")
	fs.IntVar(&f.burst, "kube-api-burst", f.burst, "requests in a burst to the API server")
}

func (f *schedulerFlags) validate() error {
	var errs []error
	if f.leaderElect && !(f.leaseDuration > f.renewDeadline && f.renewDeadline > f.retryPeriod && f.retryPeriod > 0) {
		errs = append(errs, fmt.Errorf("leader election needs lease duration %s > renew deadline %s > retry period %s > 0", f.leaseDuration, f.renewDeadline, f.retryPeriod))
	}
	if f.qps <= 0 || f.burst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps %g and --kube-api-burst %d must be positive", f.qps, f.burst))
	}
	return errors.Join(errs...)
}

// applyConfig takes what a KubeSchedulerConfiguration file sets, except
// where a flag given on the command line says otherwise, as
// kube-scheduler's flags override its --config.
func (f *schedulerFlags) applyConfig(c *scheduler.Config, fs *pflag.FlagSet) {
	fromFile := func(flag string, set bool) bool { return set && !fs.Changed(flag) }
	if fromFile("kubeconfig", c.Kubeconfig != "") {
		f.kubeconfig = c.Kubeconfig
	}
	if fromFile("kube-api-qps", c.QPS > 0) {
		f.qps = c.QPS
	}
	if fromFile("kube-api-burst", c.Burst > 0) {
		f.burst = c.Burst
	}
	if fromFile("leader-elect", c.LeaderElect != nil) {
		f.leaderElect = *c.LeaderElect
	}
	if fromFile("leader-elect-lease-duration", c.LeaseDuration > 0) {
		f.leaseDuration = c.LeaseDuration
	}
	if fromFile("leader-elect-renew-deadline", c.RenewDeadline > 0) {
		f.renewDeadline = c.RenewDeadline
	}
	if fromFile("leader-elect-retry-period", c.RetryPeriod > 0) {
		f.retryPeriod = c.RetryPeriod
	}
	f.profile, f.initialBackoff, f.maxBackoff = c.Profile, c.InitialBackoff, c.MaxBackoff
}

func newSchedulerCommand() *cobra.Command {
	f := newSchedulerFlags()
	var dir, configFile string
	cmd := &cobra.Command{
		Use:   "scheduler [--kubeconfig FILE]",
		Short: "Run the scheduler alone",
		Long: `Run the scheduler: a client-go program that talks to the API server only, as
system:kube-scheduler (--kubeconfig, default DIR/scheduler.conf), and places
pending pods on nodes as kube-scheduler's default profile does, binding them
through pods/binding. Instances that share a cluster elect one leader through
the Lease kube-system/kube-scheduler; a standby takes over within the lease
duration once the leader stops renewing it.

--config FILE reads a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)
as kube-scheduler does: its default profile's plugins (weights of score
plugins, plugins disabled at multiPoint, filter or score) and InterPodAffinity
arguments, percentageOfNodesToScore, the pod backoffs, clientConnection and
leaderElection; kube's defaults for what it leaves out, and flags given on the
command line over the file. Unknown fields, unknown plugins, plugins trustplane
does not run and profiles for other scheduler names are refused at start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configFile != "" {
				c, err := scheduler.LoadConfig(configFile)
				if err != nil {
					return fmt.Errorf("--config: %w", err)
				}
				f.applyConfig(c, cmd.Flags())
			}
			if err := f.validate(); err != nil {
				return err
			}
			if f.kubeconfig == "" {
				f.kubeconfig = datadir.Layout{Dir: dir}.Kubeconfig("scheduler")
			}
			id := scheduler.NewIdentity()
			fmt.Fprintf(cmd.OutOrStdout(), "scheduler running as %s\n", id)
			return runScheduler(cmd.Context(), f, id, newLogger())
		},
	}
	cmd.Flags().StringVar(&dir, "dir", datadir.DefaultDir, "data directory whose scheduler.conf is used without --kubeconfig")
	cmd.Flags().StringVar(&configFile, "config", "", "a KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1)")
	f.addTo(cmd.Flags())
	return cmd
}

// runScheduler runs the scheduler with the identity of f's kubeconfig
// until ctx is done.
func runScheduler(ctx context.Context, f *schedulerFlags, id string, logger *slog.Logger) error {
	cfg, err := clientConfig(f.kubeconfig, "")
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	return scheduler.Run(ctx, scheduler.Options{
		Config:         cfg,
		Logger:         logger,
		Identity:       id,
		LeaderElect:    f.leaderElect,
		LeaseDuration:  f.leaseDuration,
		RenewDeadline:  f.renewDeadline,
		RetryPeriod:    f.retryPeriod,
		Profile:        f.profile,
		InitialBackoff: f.initialBackoff,
		MaxBackoff:     f.maxBackoff,
	})
}
