package e2e

import (
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

// build is the trustplane binary, built at most once per test run into
// binDir, which TestMain removes afterwards.
var (
	binDir string
	build  struct {
		once sync.Once
		path string
		err  error
	}
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "trustplane-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: create binary directory:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// trustplaneBinary returns the path of the trustplane binary, building it
// on first use. Building lazily keeps `go test -run X` for other tests, and
// -short, from paying for it.
func trustplaneBinary(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		build.path, build.err = buildBinary(filepath.Join(binDir, "trustplane"))
	})
	if build.err != nil {
		t.Fatalf("build trustplane: %v", build.err)
	}
	return build.path
}

func buildBinary(out string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
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
// trusting that the working directory is one level below its root.
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
