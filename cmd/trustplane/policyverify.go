package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/admission/opa/policytest"
	"github.com/trustplane/trustplane/datadir"
)

// policyVerifyFlags are the flags of `trustplane policy verify`.
type policyVerifyFlags struct {
	dir      string
	policies []string
	run      string
	output   string
	verbose  bool
	timeout  time.Duration
}

func newPolicyVerifyCommand() *cobra.Command {
	f := policyVerifyFlags{dir: datadir.DefaultDir, output: policytest.Pretty, timeout: opa.DefaultTimeout}
	cmd := &cobra.Command{
		Use:   "verify SUITE.yaml...|DIR... [--policies PATH]...",
		Short: "Check that the policies decide suites of admission requests as expected",
		Long: `Decide every case of the suites with the policies at --policies (directories
or .rego files; without it, the data directory's policies/), exactly as the
API server would decide it (see policy eval), and check that each outcome
is the one the case expects. A directory is searched for suites: YAML files
with a list of cases; the manifests and reviews they name sit beside them.

A suite:

  objects:                  # what exists in the cluster: the policies'
    - namespaces.yaml       # data.kubernetes (files of one or more
                            # objects, or objects inline)
  cases:
    - name: a Secret in default is denied
      object: secret.yaml   # a file of one object, or the object inline
      operation: CREATE     # CREATE (default), UPDATE, DELETE, CONNECT
      oldObject: old.yaml   # with UPDATE: the object as stored
      namespace: default    # default: the object's, else default
      user: alice           # default: admin, in trustplane:cluster-admins
      groups: [dev]
      dryRun: false
      expect:
        outcome: denied     # allowed (and no warnings), warned, denied
        deniedBy: [secrets_namespace]      # exactly these policies refuse
        messages: ['namespace "default"']  # regexps the refusal matches
        warnings: ['would deny']           # each matches a Warning header
        patched: patched.yaml              # the object after the patches
    - name: a request as recorded (policy record writes these)
      review: review.json   # a whole AdmissionReview instead
      expect: {outcome: allowed}

Paths are relative to the suite. Each case is reported as a test, in the
formats of policy test; a failed case shows what differed and the
decision, with Secret data redacted.

Exit status: 0 when every case gets its expected outcome, 1 when one does
not, 2 when the input is bad (a suite or policy that does not load, a
file a suite names that is missing, with file:line).`,
		Example: `  trustplane policy verify ./testdata
  trustplane policy verify suite.yaml --policies ./policies -o junit > report.xml
  trustplane policy verify recorded/ --policies ./changed-policies`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return badInput(errors.New("give the suites to verify: SUITE.yaml files or directories"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(policytest.Formats, f.output) {
				return badInput(fmt.Errorf("-o %q: want one of %s", f.output, strings.Join(policytest.Formats, ", ")))
			}
			if f.timeout <= 0 {
				return badInput(fmt.Errorf("--timeout %s must be positive", f.timeout))
			}
			report, err := policytest.Verify(cmd.Context(), policytest.VerifyOptions{
				Policies: policyPaths(f.policies, f.dir),
				Suites:   args,
				Run:      f.run,
				Timeout:  f.timeout,
			})
			if err := writeReport(cmd, report, err, f.output, f.verbose); err != nil {
				return err
			}
			if n := report.Failed(); n > 0 {
				return &exitError{code: exitFailed, err: fmt.Errorf("%d of %d cases failed", n, len(report.Results))}
			}
			return nil
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&f.dir, "dir", f.dir, "data directory whose policies/ are used without --policies")
	flags.StringArrayVar(&f.policies, "policies", nil, "policies to verify, a directory or .rego file; repeat for more")
	flags.StringVar(&f.run, "run", "", `verify only the cases whose "suite.case name" matches this regular expression`)
	flags.StringVarP(&f.output, "output", "o", f.output, "output format: "+strings.Join(policytest.Formats, ", "))
	flags.BoolVarP(&f.verbose, "verbose", "v", false, "list every case, not only those that failed")
	flags.DurationVar(&f.timeout, "timeout", f.timeout, "time limit of each evaluation, as the server's --admission-policy-timeout")
	return cmd
}
