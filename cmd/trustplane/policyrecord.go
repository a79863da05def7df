package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/trustplane/trustplane/admission/opa/policytest"
	"github.com/trustplane/trustplane/datadir"
)

// policyRecordFlags are the flags of `trustplane policy record`.
type policyRecordFlags struct {
	dir       string
	auditLogs []string
	out       string
	objects   []string
}

func newPolicyRecordCommand() *cobra.Command {
	f := policyRecordFlags{dir: datadir.DefaultDir}
	cmd := &cobra.Command{
		Use:   "record --audit-log FILE... --out DIR [--objects FILE]... [POLICIES...]",
		Short: "Turn audited requests into AdmissionReview fixtures and a suite that policy verify replays",
		Long: `Turn the audit events recorded at level RequestResponse into AdmissionReview
fixtures (DIR/reviews/*.json, built by the server's own input builder) and
a suite (DIR/recorded.yaml) whose cases expect the outcome the API server
gave each request: allowed, warned (with the warnings), or denied by the
policies (with their messages). Record real traffic, then replay it
against a changed policy to see what would change:

  trustplane policy verify DIR --policies ./changed-policies

An event becomes a case when its request reached the policies and its
object can be rebuilt from the log: a create from its body; an update, a
patch or a delete from the object as the log last saw it stored. The rest
is counted, by why: Secrets and (by default) ConfigMaps are audited at
Metadata, without bodies, so they are not recorded; requests refused by
authorization or another admission step say nothing of the policies.

Policies that read other objects (data.kubernetes: namespaces,
ServiceAccounts) decide by what the cluster held: --objects copies files of
such objects into the suite (kubectl get namespaces,serviceaccounts -A -o
yaml > objects.yaml). The files written are readable by their owner only,
as the audit log is.

Once written, the suite is replayed against POLICIES (directories or .rego
files; without them, the data directory's policies/, when it has them),
and the cases whose outcome the replay does not reproduce are listed.

Exit status: 0 when the suite is written, 2 when the input is bad (a line
of a log that is not an audit event, with its file:line; a DIR that holds
a recording already; no event that could be made into a case).`,
		Example: `  trustplane policy record --audit-log trustplane-data/audit/audit.log --out recorded/
  trustplane policy verify recorded/ --policies ./policies-next`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(f.auditLogs) == 0 || f.out == "" {
				return badInput(errors.New("--audit-log and --out are required"))
			}
			rec, err := policytest.Record(policytest.RecordOptions{AuditLogs: f.auditLogs, Out: f.out, Objects: f.objects})
			if err != nil {
				return badInput(err)
			}
			w := cmd.OutOrStdout()
			writeRecording(w, rec)
			policies := policyPaths(args, f.dir)
			if len(args) == 0 {
				if _, err := os.Stat(policies[0]); err != nil {
					fmt.Fprintf(w, "not replayed: no policies given, and none in %s\n", policies[0])
					return nil
				}
			}
			report, err := policytest.Verify(cmd.Context(), policytest.VerifyOptions{Policies: policies, Suites: []string{rec.Suite}})
			if err != nil {
				return badInput(fmt.Errorf("replay against %v: %w", policies, err))
			}
			fmt.Fprintf(w, "replayed against %v: %d of %d cases reproduce the server's outcome\n", policies, len(report.Results)-report.Failed(), len(report.Results))
			if report.Failed() > 0 {
				fmt.Fprintln(w, "not reproduced (the policies changed since, or they read objects the suite lacks: see --objects):")
				for _, r := range report.Results {
					if r.Fail {
						fmt.Fprintf(w, "  %s\n", r.Name)
					}
				}
			}
			return nil
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&f.dir, "dir", f.dir, "data directory whose policies/ the recording is replayed against without POLICIES")
	flags.StringArrayVar(&f.auditLogs, "audit-log", nil, "audit log to record, JSON lines of audit.k8s.io/v1 events; repeat for more, oldest first")
	flags.StringVar(&f.out, "out", "", "directory to write the suite and its reviews to")
	flags.StringArrayVar(&f.objects, "objects", nil, "file of objects the cluster held (namespaces, ServiceAccounts), for the policies' data; repeat for more")
	return cmd
}

// writeRecording says what a recording holds and what it left out.
func writeRecording(w io.Writer, rec *policytest.Recording) {
	total := 0
	for _, n := range rec.Cases {
		total += n
	}
	fmt.Fprintf(w, "recorded %d cases into %s: %d allowed, %d warned, %d denied\n", total, rec.Suite,
		rec.Cases[policytest.Allowed], rec.Cases[policytest.Warned], rec.Cases[policytest.Denied])
	for _, why := range slices.Sorted(maps.Keys(rec.Skipped)) {
		fmt.Fprintf(w, "skipped %d: %s\n", rec.Skipped[why], why)
	}
}
