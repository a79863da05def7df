package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/trustplane/trustplane/controllers"
	"github.com/trustplane/trustplane/datadir"
)

func newUpCommand() *cobra.Command {
	f := newClusterFlags()
	var e etcdFlags
	var mem memoryLimitFlag
	var etcdServers []string
	runControllers := true
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Initialise the data directory if needed and run etcd, the API server and the controllers",
		Long: `Run a control plane in one process: etcd (unless --etcd-servers names an external
one), the API server and the controller manager (unless --controllers=false),
each connecting to the others over mutual TLS with its own credentials.
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
			// The API server stops after the controller manager, which
			// gives its Lease up on the way out.
			serverCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
			defer stopServer()
			managerDone := make(chan struct{})
			go func() {
				<-ctx.Done()
				select {
				case <-managerDone:
				case <-time.After(5 * time.Second):
				}
				stopServer()
			}()
			return runAPIServer(serverCtx, &o, logger, func() {
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "trustplane is up: API server at %s\n", f.serverURL())
				fmt.Fprintf(out, "export KUBECONFIG=%s\n", abs)
				if !runControllers {
					close(managerDone)
					return
				}
				// Over loopback TLS with its own identity, as if it ran
				// elsewhere.
				go func() {
					defer close(managerDone)
					kubeconfig := datadir.Layout{Dir: o.DataDir}.Kubeconfig("controller-manager")
					if err := runControllerManager(ctx, kubeconfig, controllers.Names(), 5, logger.With("component", "controller-manager")); err != nil {
						logger.Error("controller manager failed; stopping", "err", err)
						cancel()
					}
				}()
			})
		},
	}
	f.addTo(cmd.Flags())
	e.addTo(cmd.Flags())
	mem.addTo(cmd.Flags())
	cmd.Flags().BoolVar(&runControllers, "controllers", runControllers, "run the controller manager too (trustplane controller-manager runs it alone)")
	cmd.Flags().StringSliceVar(&etcdServers, "etcd-servers", nil, "use the etcd at these client URLs instead of the embedded one")
	return cmd
}
