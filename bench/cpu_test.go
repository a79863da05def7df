package bench

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       time.Duration
		wantErr    string
	}{
		{"plain", "42 (trustplane) S 1 42 42 0 -1 4194560 100 0 0 0 250 125 0 0 20 0 12 0 100 0 0", 3750 * time.Millisecond, ""},
		{"spaces and parentheses in the name", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 0 0", 30 * time.Millisecond, ""},
		{"no name", "42 trustplane S 1", 0, "no command name"},
		{"short", "42 (x) S 1 2 3", 0, "fields after the command name"},
		{"not a number", "42 (x) S 1 42 42 0 -1 0 0 0 0 0 x 1 0", 0, `"x" is not a count`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat(tc.stat)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseStat() = %s, %v; want an error saying %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("parseStat() = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// The reader of a live process reads this test's own; one of no process
// fails.
func TestProcessCPU(t *testing.T) {
	if _, err := ProcessCPU(os.Getpid())(); err != nil {
		t.Errorf("CPU time of this process: %v", err)
	}
	if _, err := ProcessCPU(-1)(); err == nil {
		t.Error("CPU time of PID -1 read without error")
	}
}
