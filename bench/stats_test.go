package bench

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	// ms makes 1..n milliseconds, already sorted.
	ms := func(n int) []time.Duration {
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(i+1) * time.Millisecond
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      int
		want   time.Duration
	}{
		{"no samples", nil, 50, 0},
		{"one sample p50", ms(1), 50, time.Millisecond},
		{"one sample p99", ms(1), 99, time.Millisecond},
		{"two samples p50 is the lower", ms(2), 50, 1 * time.Millisecond},
		{"two samples p99 is the upper", ms(2), 99, 2 * time.Millisecond},
		{"ten samples p50", ms(10), 50, 5 * time.Millisecond},
		{"ten samples p99", ms(10), 99, 10 * time.Millisecond},
		{"hundred samples p50", ms(100), 50, 50 * time.Millisecond},
		{"hundred samples p99 exact rank", ms(100), 99, 99 * time.Millisecond},
		{"hundred samples p100", ms(100), 100, 100 * time.Millisecond},
		{"101 samples p99 rounds the rank up", ms(101), 99, 100 * time.Millisecond},
		{"2000 samples p99", ms(2000), 99, 1980 * time.Millisecond},
		{"10000 samples p50", ms(10000), 50, 5000 * time.Millisecond},
		{"repeated values", []time.Duration{1, 1, 1, 7}, 50, 1},
		{"one outlier reaches p99", []time.Duration{1, 1, 1, 7}, 99, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("percentile(%d samples, %d) = %s, want %s", len(tc.sorted), tc.p, got, tc.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	// Unsorted on purpose: summarize sorts.
	samples := []time.Duration{4 * time.Millisecond, 1 * time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond}
	got := summarize(PhaseGet, 4, 2*time.Second, samples)
	want := Result{Phase: PhaseGet, Ops: 4, Seconds: 2, PerSecond: 2, P50: 2 * time.Millisecond, P99: 4 * time.Millisecond}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	if got := summarize(PhaseGet, 0, 0, nil); got.PerSecond != 0 || got.P50 != 0 || got.P99 != 0 {
		t.Errorf("summarize of nothing = %+v, want zero rates and latencies", got)
	}
}

func TestNameIndex(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix string
		n      int
		want   int
		wantOK bool
	}{
		{configMapName(0), configMapPrefix, 10, 0, true},
		{configMapName(9), configMapPrefix, 10, 9, true},
		{configMapName(10), configMapPrefix, 10, 0, false},
		{holdName(99999), holdPrefix, 100000, 99999, true},
		{holdName(3), configMapPrefix, 10, 0, false},
		{configMapName(3), holdPrefix, 10, 0, false},
		{"kube-root-ca.crt", configMapPrefix, 10, 0, false},
		{"watch-x", configMapPrefix, 10, 0, false},
		{"watch--1", configMapPrefix, 10, 0, false},
	} {
		got, ok := nameIndex(tc.name, tc.prefix, tc.n)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("nameIndex(%q, %q, %d) = %d, %t, want %d, %t", tc.name, tc.prefix, tc.n, got, ok, tc.want, tc.wantOK)
		}
	}
}
