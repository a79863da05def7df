// Command trustplane runs and administers a trustplane control plane.
package main

import (
	"context"
	"errors"
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
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "error:", msg)
		}
		os.Exit(exitCode(err))
	}
}

// exitError is an error with the exit status it ends the process with;
// without err, the command has said all there is to say.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitCode is the exit status err ends the process with: 0 for none, an
// exitError's own, else 1.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if e := (*exitError)(nil); errors.As(err, &e) {
		return e.code
	}
	return 1
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "trustplane",
		Short:         "A Kubernetes-API-compatible control plane built around its trust boundaries",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newInitCommand(), newUpCommand(), newEtcdCommand(), newAPIServerCommand(), newControllerManagerCommand(), newSchedulerCommand(), newBenchCommand(), newVersionCommand(), newKubeconfigCommand(), newWhoCanCommand(), newRBACCommand(), newPolicyCommand(), newAuditCommand(), newTokenCommand(), newNodeCommand(), newSecretsEncryptCommand(), newKMSPluginCommand())
	return root
}

// newLogger is the application log. The Kubernetes libraries log through
// klog; they go to the same place.
func newLogger() *slog.Logger {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	klog.SetSlogLogger(logger)
	return logger
}
