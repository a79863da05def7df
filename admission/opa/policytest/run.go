package policytest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/topdown/lineage"

	"github.com/trustplane/trustplane/admission/opa"
)

// DefaultTestTimeout bounds each test, as opa test does.
const DefaultTestTimeout = 5 * time.Second

// Options say which tests to run, and how.
type Options struct {
	// Paths are .rego files and directories, read recursively for .rego
	// files, as the server reads its policy directory: other files are
	// not data documents here, since the server would not load them.
	Paths []string
	// Run, when set, runs only the tests whose name matches it.
	Run string
	// Coverage measures which lines the tests evaluate; Threshold, a
	// percentage, is the least the run passes with.
	Coverage  bool
	Threshold float64
	// Verbose keeps, for the report, each test's notes and failed
	// expressions, as opa test -v shows them.
	Verbose bool
	// Timeout bounds each test; 0 is DefaultTestTimeout.
	Timeout time.Duration
}

// InputError is a problem with what the tests were given rather than
// with what they found: a path that does not exist, a file that does not
// parse or compile (with its file:line), bad options.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }

func (e *InputError) Unwrap() error { return e.Err }

// Report is what a run found.
type Report struct {
	// Results are every test's, by file, line and name.
	Results []*tester.Result
	// Coverage is nil unless asked for.
	Coverage  *cover.Report
	Threshold float64
}

// Failed counts the tests that failed or could not be evaluated.
func (r *Report) Failed() int {
	n := 0
	for _, t := range r.Results {
		if t.Fail || t.Error != nil {
			n++
		}
	}
	return n
}

// BelowThreshold reports whether coverage was asked for and is below
// the threshold.
func (r *Report) BelowThreshold() bool {
	return r.Coverage != nil && r.Coverage.Coverage < r.Threshold
}

// Passed reports whether every test passed (or was skipped) and coverage
// reached the threshold.
func (r *Report) Passed() bool { return r.Failed() == 0 && !r.BelowThreshold() }

// Run runs the tests (rules named test_*) of the policies at o.Paths with
// OPA's tester.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.validate(); err != nil {
		return nil, &InputError{err}
	}
	modules, err := parse(o.Paths)
	if err != nil {
		return nil, &InputError{err}
	}
	// Each test file runs with its policy alone, as the server tests a
	// set before it loads it.
	var cov *cover.Cover
	if o.Coverage {
		cov = cover.New()
	}
	report := &Report{Threshold: o.Threshold}
	for _, group := range opa.TestGroups(modules) {
		runner := tester.NewRunner().
			SetStore(inmem.New()).
			SetDefaultRegoVersion(ast.RegoV1).
			SetModules(group.Modules).
			SetCompiler(ast.NewCompiler().WithCapabilities(opa.Capabilities())).
			CapturePrintOutput(true).
			EnableTracing(o.Verbose).
			SetTimeout(cmp.Or(o.Timeout, DefaultTestTimeout)).
			Filter(o.Run)
		if cov != nil {
			runner.SetCoverageQueryTracer(cov)
		}
		ch, err := runner.RunTests(ctx, nil)
		if err != nil {
			// The options are valid: what is left is the policies'.
			return nil, &InputError{fmt.Errorf("compile %s with its policy: %w", group.TestFile, err)}
		}
		for r := range ch {
			r.Trace = lineage.Filter(r.Trace, func(e *topdown.Event) bool {
				return e.Op == topdown.NoteOp || e.Op == topdown.FailOp
			})
			report.Results = append(report.Results, r)
		}
	}
	slices.SortFunc(report.Results, func(a, b *tester.Result) int {
		return cmp.Or(
			cmp.Compare(a.Location.File, b.Location.File),
			cmp.Compare(a.Location.Row, b.Location.Row),
			cmp.Compare(a.Package+"."+a.Name, b.Package+"."+b.Name),
		)
	})
	if cov != nil {
		c := cov.Report(modules)
		report.Coverage = &c
	}
	return report, nil
}

func (o Options) validate() error {
	var errs []error
	if len(o.Paths) == 0 {
		errs = append(errs, errors.New("no policies given"))
	}
	if _, err := regexp.Compile(o.Run); err != nil {
		errs = append(errs, fmt.Errorf("--run %q: %w", o.Run, err))
	}
	if o.Threshold < 0 || o.Threshold > 100 {
		errs = append(errs, fmt.Errorf("--threshold %v: want a percentage from 0 to 100", o.Threshold))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("--timeout %s must not be negative", o.Timeout))
	}
	return errors.Join(errs...)
}

// parse reads and parses, as the server does (Rego v1, with METADATA
// annotations), every .rego file at paths. A file named as a path must be
// a .rego file. Every file that does not parse is reported, with its
// file:line.
func parse(paths []string) (map[string]*ast.Module, error) {
	modules := map[string]*ast.Module{}
	var errs []error
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() && !strings.HasSuffix(p, ".rego") {
			return nil, fmt.Errorf("%s is not a .rego file", p)
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".rego") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			m, err := ast.ParseModuleWithOpts(path, string(src), ast.ParserOptions{ProcessAnnotation: true, RegoVersion: ast.RegoV1})
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			modules[path] = m
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("parse policies: %w", err)
	}
	if len(modules) == 0 {
		return nil, fmt.Errorf("no .rego files in %s", strings.Join(paths, ", "))
	}
	return modules, nil
}
