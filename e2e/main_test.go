package e2e

import (
	"os"
	"testing"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

func TestMain(m *testing.M) { os.Exit(e2etest.Main(m)) }
