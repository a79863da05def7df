package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trustplane/trustplane/admission/opa/policytest"
	"github.com/trustplane/trustplane/datadir"
)

// Exit statuses of the policy commands, beside 0.
const (
	// exitFailed: a test failed or errored, coverage is below the
	// threshold, a request is denied, a live object would be denied
	// (audit).
	exitFailed = 1
	// exitBadInput: what the command was given is wrong: a policy that
	// does not parse, compile or pass its tests (eval, audit), a path or
	// a file that does not exist or does not decode, a bad flag, a
	// kubeconfig that does not load or a cluster it cannot read (audit).
	exitBadInput = 2
)

func badInput(err error) error { return &exitError{code: exitBadInput, err: err} }

func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Test Rego admission policies, with the server's own input and engine",
		Long: `Commands for policy authors. Each takes the policies to use, directories or
.rego files, as opa test does (without any: the data directory's
policies/), so that an author tests a working copy, not the running set.
Policies are Rego v1, as the API server reads them. test, verify, eval and
record run offline; audit judges the live objects of a cluster.

Exit status: 0 when all is well, 1 when a test failed or a request (or a
live object) would be denied, 2 when the input is bad (a file that does
not parse, with its file:line; a path that does not exist; a bad flag) or
the audit could not read the cluster.`,
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput(err) })
	cmd.AddCommand(newPolicyTestCommand(), newPolicyVerifyCommand(), newPolicyEvalCommand(), newPolicyAuditCommand(), newPolicyRecordCommand())
	return cmd
}

// policyPaths are the policies a policy command reads: its arguments, or
// the data directory's.
func policyPaths(args []string, dir string) []string {
	if len(args) > 0 {
		return args
	}
	return []string{datadir.Layout{Dir: dir}.Policies()}
}

// writeReport writes the report of a run that ended with err: bad input
// exits 2.
func writeReport(cmd *cobra.Command, report *policytest.Report, err error, format string, verbose bool) error {
	if inputErr := (*policytest.InputError)(nil); errors.As(err, &inputErr) {
		return badInput(err)
	}
	if err != nil {
		return err
	}
	return report.Write(cmd.OutOrStdout(), format, verbose)
}

// policyTestFlags are the flags of `trustplane policy test`.
type policyTestFlags struct {
	dir       string
	run       string
	coverage  bool
	threshold float64
	output    string
	verbose   bool
	timeout   time.Duration
}

func (f *policyTestFlags) validate() error {
	if !slices.Contains(policytest.Formats, f.output) {
		return fmt.Errorf("-o %q: want one of %s", f.output, strings.Join(policytest.Formats, ", "))
	}
	return nil
}

func newPolicyTestCommand() *cobra.Command {
	f := policyTestFlags{dir: datadir.DefaultDir, output: policytest.Pretty, timeout: policytest.DefaultTestTimeout}
	cmd := &cobra.Command{
		Use:   "test [PATH...]",
		Short: "Run the Rego unit tests of policies with OPA's tester",
		Long: `Run the unit tests (rules named test_*) of the policies at PATH, directories
(read recursively) or .rego files, with OPA's tester; without PATH, those of
the data directory's policies/. Only .rego files are read, as the server
reads its policy directory.

--coverage reports which lines the tests evaluate; --threshold N (a
percentage, implying --coverage) fails the run below it.

Exit status: 0 when every test passes, 1 when a test fails or errors or
coverage is below the threshold, 2 when the input is bad (a file that does
not parse or compile, with its file:line; a path that does not exist; a
bad flag).`,
		Example: `  trustplane policy test
  trustplane policy test ./policies --run secret -v
  trustplane policy test ./policies --threshold 90 -o junit > report.xml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.validate(); err != nil {
				return badInput(err)
			}
			report, err := policytest.Run(cmd.Context(), policytest.Options{
				Paths:     policyPaths(args, f.dir),
				Run:       f.run,
				Coverage:  f.coverage || cmd.Flags().Changed("threshold"),
				Threshold: f.threshold,
				Verbose:   f.verbose,
				Timeout:   f.timeout,
			})
			if err := writeReport(cmd, report, err, f.output, f.verbose); err != nil {
				return err
			}
			var failures []error
			if n := report.Failed(); n > 0 {
				failures = append(failures, fmt.Errorf("%d of %d tests failed", n, len(report.Results)))
			}
			if report.BelowThreshold() {
				failures = append(failures, fmt.Errorf("coverage %.2f%% is below the threshold %g%%", report.Coverage.Coverage, report.Threshold))
			}
			if len(failures) > 0 {
				return &exitError{code: exitFailed, err: errors.Join(failures...)}
			}
			return nil
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&f.dir, "dir", f.dir, "data directory whose policies/ are tested when no PATH is given")
	flags.StringVar(&f.run, "run", "", "run only the tests whose name matches this regular expression")
	flags.BoolVar(&f.coverage, "coverage", false, "report the coverage of the policies by their tests")
	flags.Float64Var(&f.threshold, "threshold", 0, "least coverage, in percent, the run passes with (implies --coverage)")
	flags.StringVarP(&f.output, "output", "o", f.output, "output format: "+strings.Join(policytest.Formats, ", "))
	flags.BoolVarP(&f.verbose, "verbose", "v", false, "list every test, and the notes and failed expressions of each failure")
	flags.DurationVar(&f.timeout, "timeout", f.timeout, "time limit of each test")
	return cmd
}
