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

func newSchedulerCommand() *cobra.Command {
	f := newSchedulerFlags()
	var dir string
	cmd := &cobra.Command{
		Use:   "scheduler [--kubeconfig FILE]",
		Short: "Run the scheduler alone",
		Long: `Run the scheduler: a client-go program that talks to the API server only, as
system:kube-scheduler (--kubeconfig, default DIR/scheduler.conf), and places
pending pods on nodes as kube-scheduler's default profile does, binding them
through pods/binding. Instances that share a cluster elect one leader through
the Lease kube-system/kube-scheduler; a standby takes over within the lease
duration once the leader stops renewing it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
		Config:        cfg,
		Logger:        logger,
		Identity:      id,
		LeaderElect:   f.leaderElect,
		LeaseDuration: f.leaseDuration,
		RenewDeadline: f.renewDeadline,
		RetryPeriod:   f.retryPeriod,
	})
}
