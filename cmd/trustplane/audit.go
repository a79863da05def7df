package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/datadir"
)

func newAuditCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Query the audit log and verify that it is untouched",
	}
	cmd.AddCommand(newAuditVerifyCommand(), newAuditQueryCommand())
	return cmd
}

// auditFiles are the log files that args name, or the data directory's
// audit log without args.
func auditFiles(args []string, dir string) ([]string, error) {
	if len(args) == 0 {
		args = []string{filepath.Dir(datadir.Layout{Dir: dir}.AuditLog())}
	}
	files, err := audit.LogFiles(args)
	if err != nil {
		return nil, badInput(err)
	}
	return files, nil
}

func newAuditVerifyCommand() *cobra.Command {
	dir := datadir.DefaultDir
	var key string
	cmd := &cobra.Command{
		Use:   "verify [FILE|DIR...]",
		Short: "Check the audit log's hash chain and signed checkpoints",
		Long: `Read the audit log files (a directory stands for its rotated files, oldest
first, gzipped or not, then audit.log; without arguments, the data
directory's) as one log and check that every event chains to the one
before by its hash, across files, and that every checkpoint is signed by
the audit key and states the chain as it is at that point. When the
oldest files were removed by rotation, the log starts at the signed
checkpoint the first file left begins with, and the report says from
which event.

The first event that was edited, deleted, inserted, reordered or cut off,
or a checkpoint that was forged, is reported as FILE:LINE. Events after
the last checkpoint chain, but a cut at the end of the log after them
would not show: the report says how far the signature goes.

Exit status: 0 when the log is untouched, 1 when it was changed, 2 when
it cannot be read or the key is bad.`,
		Example: `  trustplane audit verify
  trustplane audit verify /backup/audit.log --key audit-signing.pub`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if key == "" {
				key = filepath.Join(datadir.Layout{Dir: dir}.PKI(), audit.VerifierKeyFile)
			}
			verifier, err := audit.LoadVerifier(key)
			if err != nil {
				return badInput(err)
			}
			files, err := auditFiles(args, dir)
			if err != nil {
				return err
			}
			v, err := audit.Verify(files, note.VerifierList(verifier))
			if err != nil {
				return badInput(err)
			}
			out := cmd.OutOrStdout()
			if v.Finding != nil {
				fmt.Fprintln(out, v.Finding)
				return &exitError{code: exitFailed, err: errors.New("the audit log was changed")}
			}
			if v.First > 1 {
				// The oldest files were rotated away; the first left
				// starts with a signed checkpoint.
				fmt.Fprintf(out, "OK: events %d to %d, %d checkpoints", v.First, v.Events, v.Checkpoints)
			} else {
				fmt.Fprintf(out, "OK: %d events, %d checkpoints", v.Events, v.Checkpoints)
			}
			if v.Checkpoints > 0 {
				fmt.Fprintf(out, ", the last at %s", v.LastCheckpoint)
			}
			fmt.Fprintln(out)
			switch {
			case v.Events > v.Signed && v.Signed == 0:
				fmt.Fprintf(out, "no checkpoint signs the %d events: a cut at the end of the log would not show\n", v.Events)
			case v.Events > v.Signed:
				fmt.Fprintf(out, "events %d to %d come after the last checkpoint: a cut at the end of the log after event %d would not show\n", v.Signed+1, v.Events, v.Signed)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", dir, "data directory whose audit log and key are used by default")
	cmd.Flags().StringVar(&key, "key", "", "the audit key's public key, in the note verifier format (default DIR/pki/"+audit.VerifierKeyFile+")")
	return cmd
}
