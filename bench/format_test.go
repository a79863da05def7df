package bench

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// sample is a run with every phase, as Run returns it.
var sample = []Result{
	{Phase: PhaseCreate, Ops: 2000, Seconds: 1.2345, PerSecond: 1620.1, P50: 18_456_789, P99: 61_200_000, Bytes: 1024, Ratio: 0.4213},
	{Phase: PhaseGet, Ops: 2000, Seconds: 0.25, PerSecond: 8000, P50: 3_456_000, P99: 12_345_678},
	{Phase: PhaseList, Ops: 2000, Seconds: 20.5, PerSecond: 97.56, P50: 310 * time.Millisecond, P99: 1_234_567_890, Items: 2000},
	{Phase: PhaseListLarge, Ops: 20, Seconds: 2.2, PerSecond: 9.09, P50: 102_345_678, P99: 197 * time.Millisecond, Items: 10000,
		Format: FormatProtobuf, ResourceVersion: new(""), AcceptGzip: true, WireBytes: 12_510_000, BodyBytes: 12_480_000},
	{Phase: PhaseListLarge, Ops: 20, Seconds: 7.1, PerSecond: 2.82, P50: 347 * time.Millisecond, P99: 628 * time.Millisecond, Items: 10000,
		Format: FormatJSON, ResourceVersion: new("0"), AcceptGzip: true, Gzipped: 20, WireBytes: 11_010_000, BodyBytes: 18_140_000},
	{Phase: PhaseListLarge, Ops: 20, Seconds: 6.9, PerSecond: 2.9, P50: 329 * time.Millisecond, P99: 545 * time.Millisecond, Items: 10000,
		Format: FormatJSON, ResourceVersion: new("0"), WireBytes: 18_240_000, BodyBytes: 18_140_000},
	{Phase: PhaseWatch, Ops: 10000, Seconds: 0.5, PerSecond: 20000, P50: 45_678, P99: 2 * time.Millisecond, Rate: 50, Watchers: 100, Delivered: 10000, Expected: 10000},
	{Phase: PhaseEtcdPut, Ops: 2000, Seconds: 0.52, PerSecond: 3846.2, P50: 7_890_123, P99: 25 * time.Millisecond, Bytes: 1310},
}

// holdSample is a run with Config.Hold, as Run returns it.
var holdSample = []Result{
	{Phase: PhaseHold, Ops: 100000, Seconds: 61.03, PerSecond: 1638.5, P50: 17_400_000, P99: 52_400_000, Bytes: 1024,
		Watchers: 10, Delivered: 1000000, Expected: 1000000, RSSBytes: 595_591_168, PeakRSSBytes: 601_247_744, BaseRSSBytes: 97_943_552},
}

func TestWriteTable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results []Result
	}{
		{"table.golden", sample},
		{"table-short-watch.golden", []Result{{Phase: PhaseWatch, Ops: 150, Seconds: 30.1, PerSecond: 4.98, P50: 12 * time.Second, P99: 29*time.Second + 900*time.Millisecond, Watchers: 2, Delivered: 150, Expected: 200}}},
		{"table-hold.golden", holdSample},
		{"table-empty.golden", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteTable(&buf, tc.results); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name, buf.Bytes())
		})
	}
}

func TestWriteJSON(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results []Result
	}{
		{"results.json.golden", sample},
		{"results-hold.json.golden", holdSample},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteJSON(&buf, tc.results); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name, buf.Bytes())

			// The output reads back as the results.
			var got []Result
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("read back: %v", err)
			}
			if diff := cmp.Diff(tc.results, got); diff != "" {
				t.Errorf("results read back differ (-wrote +read):\n%s", diff)
			}
		})
	}

	var buf bytes.Buffer
	if err := WriteJSON(&buf, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "[]\n"; got != want {
		t.Errorf("WriteJSON(nil) = %q, want %q", got, want)
	}
}

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0"},
		{-time.Millisecond, "0"},
		{999, "999ns"},
		{1234, "1.23µs"},
		{45_678, "45.7µs"},
		{1_234_567, "1.23ms"},
		{18_456_789, "18.5ms"},
		{789_400_000, "789ms"},
		{1_234_567_890, "1.23s"},
		{12_345_678_900, "12.3s"},
		{2*time.Hour + 1500*time.Millisecond, "2h0m2s"},
	} {
		if got := formatDuration(tc.d); got != tc.want {
			t.Errorf("formatDuration(%d) = %q, want %q", int64(tc.d), got, tc.want)
		}
	}
}

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}
