package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trustplane/trustplane/controllers"
	"github.com/trustplane/trustplane/datadir"
)

func newControllerManagerCommand() *cobra.Command {
	var (
		dir        string
		kubeconfig string
		list       []string
		workers    int
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
out, as kube-controller-manager's flag does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			names, err := controllers.Select(list)
			if err != nil {
				return err
			}
			if kubeconfig == "" {
				kubeconfig = datadir.Layout{Dir: dir}.Kubeconfig("controller-manager")
			}
			fmt.Fprintf(cmd.OutOrStdout(), "controller manager running: %s\n", strings.Join(names, ", "))
			return runControllerManager(cmd.Context(), kubeconfig, names, workers, newLogger())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&dir, "dir", datadir.DefaultDir, "data directory whose controller-manager.conf is used without --kubeconfig")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "the controller manager's kubeconfig (default DIR/controller-manager.conf)")
	fs.StringSliceVar(&list, "controllers", []string{"*"}, "controllers to run: *, names, -name")
	fs.IntVar(&workers, "concurrent-syncs", 5, "keys each controller syncs at once")
	return cmd
}

// runControllerManager runs the controllers with the identity of the
// kubeconfig at path until ctx is done.
func runControllerManager(ctx context.Context, path string, names []string, workers int, logger *slog.Logger) error {
	cfg, err := clientConfig(path, "")
	if err != nil {
		return err
	}
	return controllers.Run(ctx, controllers.Options{Config: cfg, Controllers: names, Workers: workers, Logger: logger})
}
