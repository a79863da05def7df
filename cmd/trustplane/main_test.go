package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// TestMain removes, after the tests, the binary that the end-to-end tests
// build.
func TestMain(m *testing.M) { os.Exit(e2etest.Main(m)) }

// runRoot runs `trustplane args...` in-process, as main would: stderr
// holds the error main prints, code the exit status.
func runRoot(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	if err != nil && err.Error() != "" {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), exitCode(err)
}
