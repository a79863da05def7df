package bench

import (
	"slices"
	"time"
)

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of
// sorted: the smallest sample that at least p% of the samples do not
// exceed. It is one of the samples, never an interpolation; zero when there
// are none. Integer arithmetic keeps the rank exact.
func percentile(sorted []time.Duration, p int) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := (p*n + 99) / 100 // ⌈p·n/100⌉
	return sorted[min(max(rank, 1), n)-1]
}

// summarize is the Result of a phase of ops operations that took elapsed,
// with one latency sample per operation (or per delivery). It sorts
// samples.
func summarize(phase string, ops int, elapsed time.Duration, samples []time.Duration) Result {
	slices.Sort(samples)
	res := Result{
		Phase:   phase,
		Ops:     ops,
		Seconds: elapsed.Seconds(),
		P50:     percentile(samples, 50),
		P99:     percentile(samples, 99),
	}
	if elapsed > 0 {
		res.PerSecond = float64(ops) / elapsed.Seconds()
	}
	return res
}
