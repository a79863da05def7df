package opa

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// testSuffix marks a file of tests. The tests of policy p.rego are in
// p_test.rego, and run with p.rego and the library packages alone, as the
// policy is evaluated: each policy file in a namespace of its own.
const testSuffix = "_test.rego"

func isTestFile(path string) bool { return strings.HasSuffix(path, testSuffix) }

// runTests runs each test file's tests against its policy and the
// libraries, as written.
func runTests(ctx context.Context, modules map[string]*ast.Module) error {
	results, err := Test(ctx, modules, "")
	if err != nil {
		return err
	}
	var failed []error
	for _, r := range results {
		switch {
		case r.Error != nil:
			failed = append(failed, fmt.Errorf("%s: %s: %v", r.Location, r.Name, r.Error))
		case r.Fail:
			failed = append(failed, fmt.Errorf("%s: %s failed", r.Location, r.Name))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("policy tests: %w", errors.Join(failed...))
	}
	return nil
}

// Test runs the tests of modules (path → parsed module), each test file
// in its group (see TestGroups). filter, a regular expression, selects
// tests by name, as opa test --run does; "" runs them all. It reports
// every test's result, in file order.
func Test(ctx context.Context, modules map[string]*ast.Module, filter string) ([]*tester.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	var results []*tester.Result
	for _, group := range TestGroups(modules) {
		runner := tester.NewRunner().SetStore(inmem.New()).SetTimeout(testTimeout).
			SetCompiler(ast.NewCompiler().WithCapabilities(Capabilities()))
		if filter != "" {
			runner = runner.Filter(filter)
		}
		ch, err := runner.Run(ctx, group.Modules)
		if err != nil {
			return nil, fmt.Errorf("compile %s with its policy: %w", group.TestFile, err)
		}
		for r := range ch {
			results = append(results, r)
		}
	}
	return results, nil
}

// TestGroup is one test file, or a policy without tests, with what it is
// compiled with.
type TestGroup struct {
	TestFile string
	Modules  map[string]*ast.Module
}

// TestGroups are the tests of modules as the server evaluates the
// policies: each file named *_test.rego with the policy of the same name
// and every module that is neither a policy nor a test (a policy without
// tests alone with those), in file order.
func TestGroups(modules map[string]*ast.Module) []TestGroup {
	libraries := map[string]*ast.Module{}
	var tests []string
	for path, m := range modules {
		switch {
		case isTestFile(path):
			tests = append(tests, path)
		case !m.Package.Path.Equal(admissionPackage):
			libraries[path] = m
		}
	}
	// A policy without tests is a group of its own, so that it is
	// compiled all the same.
	for path, m := range modules {
		if !isTestFile(path) && m.Package.Path.Equal(admissionPackage) {
			if _, tested := modules[strings.TrimSuffix(path, ".rego")+testSuffix]; !tested {
				tests = append(tests, path)
			}
		}
	}
	sort.Strings(tests)
	groups := make([]TestGroup, 0, len(tests))
	for _, path := range tests {
		group := maps.Clone(libraries)
		group[path] = modules[path]
		if policy := strings.TrimSuffix(path, testSuffix) + ".rego"; isTestFile(path) && modules[policy] != nil {
			group[policy] = modules[policy]
		}
		groups = append(groups, TestGroup{TestFile: path, Modules: group})
	}
	return groups
}
