package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trustplane/trustplane/controllers"
	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/scheduler"
)

func newUpCommand() *cobra.Command {
	f := newClusterFlags()
	var e etcdFlags
	var mem memoryLimitFlag
	var etcdServers []string
	runControllers := true
	var signing clusterSigningFlags
	var lifecycle nodeLifecycleFlags
	runSched := true
	var schedulerConfig string
	var nodes int
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Initialise the data directory if needed and run etcd, the API server, the scheduler and the controllers",
		Long: `Run a control plane in one process: etcd (unless --etcd-servers names an external
one), the API server, the scheduler (unless --scheduler=false) and the
controller manager (unless --controllers=false), and --nodes node agents
(trustplane node), each connecting to the others over mutual TLS with its
own credentials. When the encryption configuration names DIR/kms.sock
(init --encryption kms), the KMS v2 plugin runs too, before the API server
and stopped after it.
SIGINT or SIGTERM stop it; a restart keeps all data.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			if err := e.validate(); err != nil {
				return err
			}
			if err := mem.validate(); err != nil {
				return err
			}
			if nodes < 0 {
				return fmt.Errorf("--nodes %d: want 0 or more", nodes)
			}
			if err := lifecycle.validate(cmd.Flags()); err != nil {
				return err
			}
			// The scheduler's configuration is refused before anything
			// starts, as `trustplane scheduler --config` refuses it.
			sched := newSchedulerFlags()
			if schedulerConfig != "" {
				c, err := scheduler.LoadConfig(schedulerConfig)
				if err != nil {
					return fmt.Errorf("--scheduler-config: %w", err)
				}
				sched.applyConfig(c, pflag.NewFlagSet("up", pflag.ContinueOnError))
				if err := sched.validate(); err != nil {
					return fmt.Errorf("--scheduler-config: %w", err)
				}
			}
			if err := runInit(cmd, f); err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			logger := newLogger()
			if err := mem.apply(logger); err != nil {
				return err
			}
			o := *f.apiserver
			// The plugin stops after the API server, which may call it
			// until it has stopped.
			stopKMS, err := startKMSPlugin(ctx, datadir.Layout{Dir: o.DataDir}, logger, cancel)
			if err != nil {
				return err
			}
			defer stopKMS()
			if len(etcdServers) > 0 {
				o.EtcdServers = etcdServers
			} else {
				srv, err := startEtcd(ctx, o.DataDir, &e, logger)
				if err != nil {
					return err
				}
				// Stop etcd after the API server has finished.
				defer srv.Close()
				o.EtcdServers = []string{srv.ClientURL()}
				go func() {
					select {
					case err := <-srv.Err():
						logger.Error("etcd failed; stopping", "err", err)
						cancel()
					case <-ctx.Done():
					}
				}()
			}
			abs, err := filepath.Abs(datadir.Layout{Dir: o.DataDir}.Kubeconfig("admin"))
			if err != nil {
				return err
			}
			// The API server stops after the controller manager and the
			// scheduler, which give their Leases up on the way out.
			serverCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
			defer stopServer()
			managerDone, schedulerDone, nodesDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
			go func() {
				<-ctx.Done()
				timeout := time.After(5 * time.Second)
				for _, done := range []chan struct{}{managerDone, schedulerDone, nodesDone} {
					select {
					case <-done:
					case <-timeout:
					}
				}
				stopServer()
			}()
			return runAPIServer(serverCtx, &o, logger, func() {
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "trustplane is up: API server at %s\n", f.serverURL())
				fmt.Fprintf(out, "export KUBECONFIG=%s\n", abs)
				if runSched {
					go func() {
						defer close(schedulerDone)
						if sched.kubeconfig == "" {
							sched.kubeconfig = datadir.Layout{Dir: o.DataDir}.Kubeconfig("scheduler")
						}
						if err := runScheduler(ctx, sched, scheduler.NewIdentity(), logger.With("component", "scheduler")); err != nil {
							logger.Error("scheduler failed; stopping", "err", err)
							cancel()
						}
					}()
				} else {
					close(schedulerDone)
				}
				if nodes > 0 {
					go func() {
						defer close(nodesDone)
						if err := runLocalNodes(ctx, o.DataDir, f.serverURL(), nodes, logger.With("component", "node")); err != nil {
							logger.Error("node agents failed; stopping", "err", err)
							cancel()
						}
					}()
				} else {
					close(nodesDone)
				}
				if !runControllers {
					close(managerDone)
					return
				}
				// Over loopback TLS with its own identity, as if it ran
				// elsewhere.
				go func() {
					defer close(managerDone)
					kubeconfig := datadir.Layout{Dir: o.DataDir}.Kubeconfig("controller-manager")
					signing.defaults(o.DataDir)
					co := signing.options(controllers.Names(), 5, logger.With("component", "controller-manager"))
					co.NodeLifecycle = lifecycle.config
					if err := runControllerManager(ctx, kubeconfig, co); err != nil {
						logger.Error("controller manager failed; stopping", "err", err)
						cancel()
					}
				}()
			})
		},
	}
	f.addTo(cmd.Flags())
	addAuditLogFlags(cmd.Flags(), &f.apiserver.Audit)
	e.addTo(cmd.Flags())
	mem.addTo(cmd.Flags())
	cmd.Flags().BoolVar(&runSched, "scheduler", runSched, "run the scheduler too (trustplane scheduler runs it alone)")
	cmd.Flags().StringVar(&schedulerConfig, "scheduler-config", "", "the scheduler's KubeSchedulerConfiguration file (as trustplane scheduler --config)")
	cmd.Flags().BoolVar(&runControllers, "controllers", runControllers, "run the controller manager too (trustplane controller-manager runs it alone)")
	cmd.Flags().IntVar(&nodes, "nodes", 0, "run this many node agents too, node-0…, their certificates in DIR/nodes (trustplane node runs them elsewhere)")
	signing.addTo(cmd.Flags())
	lifecycle.addTo(cmd.Flags())
	cmd.Flags().StringSliceVar(&etcdServers, "etcd-servers", nil, "use the etcd at these client URLs instead of the embedded one")
	return cmd
}
