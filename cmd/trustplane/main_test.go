package main

import (
	"os"
	"testing"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// TestMain removes, after the tests, the binary that the end-to-end tests
// build.
func TestMain(m *testing.M) { os.Exit(e2etest.Main(m)) }
