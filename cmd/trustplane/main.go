// Command trustplane runs and administers a trustplane control plane.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// version is trustplane's own version.
const version = "0.1.0-dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "trustplane",
		Short:         "A Kubernetes-API-compatible control plane built around its trust boundaries",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newInitCommand(), newUpCommand(), newEtcdCommand(), newAPIServerCommand(), newBenchCommand(), newVersionCommand(), newKubeconfigCommand(), newWhoCanCommand())
	return root
}

// newLogger is the application log. The Kubernetes libraries log through
// klog; they go to the same place.
func newLogger() *slog.Logger {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	klog.SetSlogLogger(logger)
	return logger
}
