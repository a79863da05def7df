package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trustplane/trustplane/apiserver"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the trustplane version and the Kubernetes API version it serves",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "trustplane %s (Kubernetes API %s, %s)\n", version, apiserver.Version.GitVersion, apiserver.Version.GoVersion)
		},
	}
}
