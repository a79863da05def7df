package policies_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/trustplane/trustplane/admission/opa/policytest"
)

// The library decides the requests of testdata/ as its suites expect,
// through the server's own input builder and admission plugin: what
// `trustplane policy verify policies/testdata --policies policies` runs.
func TestSuites(t *testing.T) {
	report, err := policytest.Verify(context.Background(), policytest.VerifyOptions{Policies: []string{"."}, Suites: []string{"testdata"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Results) < 15 {
		t.Errorf("%d cases; the suites of testdata/ hold more", len(report.Results))
	}
	if report.Failed() > 0 {
		var out bytes.Buffer
		if err := report.Write(&out, policytest.Pretty, false); err != nil {
			t.Fatal(err)
		}
		t.Errorf("%d cases failed:\n%s", report.Failed(), out.String())
	}
}
