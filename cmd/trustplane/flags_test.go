package main

import (
	"strings"
	"testing"
)

// checkValidation checks a flag validation result: nil when want is empty,
// otherwise an error naming every flag in want.
func checkValidation(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Errorf("validate() = %v, want nil", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("validate() = nil, want an error naming %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("validate() = %q, want it to name %q", err, w)
		}
	}
}
