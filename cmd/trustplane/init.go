package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trustplane/trustplane/datadir"
)

func newInitCommand() *cobra.Command {
	f := newClusterFlags()
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create the data directory: PKI, kubeconfigs, encryption and audit configuration",
		Long: `Create whatever is missing of the data directory. Existing keys, certificates and
configuration are kept; running init again changes nothing but the server URL
of the kubeconfigs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			return runInit(cmd, f)
		},
	}
	f.addTo(cmd.Flags())
	return cmd
}

func runInit(cmd *cobra.Command, f *clusterFlags) error {
	changed, err := datadir.Init(f.initOptions())
	if err != nil {
		return fmt.Errorf("init %s: %w", f.apiserver.DataDir, err)
	}
	out := cmd.OutOrStdout()
	if len(changed) == 0 {
		fmt.Fprintf(out, "%s is complete; nothing changed\n", f.apiserver.DataDir)
		return nil
	}
	for _, c := range changed {
		fmt.Fprintf(out, "wrote %s\n", c)
	}
	return nil
}
