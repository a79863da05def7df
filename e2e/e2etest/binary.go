// Package e2etest runs the real trustplane binary for tests: it builds the
// binary from this module once per test process, starts it on free
// loopback ports in a temporary data directory, waits for it to say it is
// ready, and stops it with SIGTERM when the test ends, failing the test
// unless it exits cleanly. What the processes wrote goes to the test log
// when the test fails.
//
// A package that uses it calls Main from its TestMain, which removes the
// built binary afterwards:
//
//	func TestMain(m *testing.M) { os.Exit(e2etest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		c := e2etest.StartCluster(t)
//		client := ... c.Kubeconfig("admin") ...
//	}
package e2etest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// buildTimeout bounds `go build` of the binary.
	buildTimeout = 5 * time.Minute
	// RunTimeout bounds a command run to its end by Run.
	RunTimeout = 5 * time.Minute
)

// build is the binary of this test process, built at most once into a
// directory that Main creates and removes.
var build struct {
	dir  string // set by Main before any test runs
	once sync.Once
	path string
	err  error
}

// Main runs the tests of m and removes the binary that Binary built, and
// returns the exit code for os.Exit.
func Main(m *testing.M) int {
	dir, err := os.MkdirTemp("", "trustplane-e2etest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2etest: create binary directory:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	build.dir = dir
	return m.Run()
}

// Binary returns the path of the trustplane binary, building it on first
// use. Building lazily keeps `go test -run X` of other tests, and -short,
// from paying for it.
func Binary(t testing.TB) string {
	t.Helper()
	if build.dir == "" {
		t.Fatal("e2etest.Binary: call e2etest.Main from the package's TestMain")
	}
	build.once.Do(func() {
		build.path, build.err = buildBinary(filepath.Join(build.dir, "trustplane"))
	})
	if build.err != nil {
		t.Fatalf("build trustplane: %v", build.err)
	}
	return build.path
}

func buildBinary(out string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/trustplane")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %s: %w\n%s", root, err, b)
	}
	return out, nil
}

// moduleRoot asks the go command which module the test runs in, rather than
// trusting the working directory to be at a given depth below its root.
func moduleRoot(ctx context.Context) (string, error) {
	b, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(b))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD = %q: not inside a module", gomod)
	}
	return filepath.Dir(gomod), nil
}

// Run runs the binary with args to its end, within RunTimeout. A non-zero
// exit is returned as an *exec.ExitError, for the test to judge.
func Run(t testing.TB, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), RunTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, Binary(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.Bytes(), errOut.Bytes(), err
}
