package bench

import (
	"testing"
	"time"
)

// The last line of `trustplane bench scheduler`, which the README's
// figures quote: seconds to a tenth, whole pods per second, whole
// milliseconds.
func TestSchedulerResultString(t *testing.T) {
	r := SchedulerResult{
		Nodes: 1000, Pods: 5000,
		Elapsed:   12*time.Second + 345*time.Millisecond,
		PerSecond: 405.02,
		P50:       41*time.Millisecond + 900*time.Microsecond,
		P99:       1234 * time.Millisecond,
		// Not in the line: the command prints it apart.
		CreatesPerSecond: 900,
	}
	want := "scheduled 5000 pods on 1000 nodes in 12.3 s: 405 pods/s, p50 41 ms, p99 1234 ms"
	if got := r.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
