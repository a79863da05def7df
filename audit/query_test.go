package audit

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestQuery(t *testing.T) {
	signer, _ := testKeys(t, KeyName)
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	writeLog(t, path, signer, 30)
	// The same log gzipped, as a rotated file.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(dir, "audit-2000-01-01T00-00-00.000.log.gz")
	f, err := os.Create(gz)
	if err != nil {
		t.Fatal(err)
	}
	z := gzip.NewWriter(f)
	z.Write(data)
	z.Close()
	f.Close()

	names := func(files []string, filter Filter) []string {
		var got []string
		err := Query(files, &filter, func(_ []byte, e *Event) error {
			got = append(got, e.Name())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// testEvent(i): user-(i%3), secret s<i>; the second run's events are
	// numbered from 30.
	for _, tt := range []struct {
		name   string
		filter Filter
		want   []string
	}{
		{"by name", Filter{Name: "s31"}, []string{"s31"}},
		{"by user and name", Filter{User: "user-1", Name: "s4"}, []string{"s4"}},
		{"a user and a name that do not go together", Filter{User: "user-0", Name: "s4"}, nil},
		{"a value in another field", Filter{Namespace: "s4"}, nil},
		{"by decision", Filter{Decision: "forbid"}, nil},
		{"by code, none recorded", Filter{Code: 200}, nil},
		{"by time, all before", Filter{From: time.Now()}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := names([]string{path}, tt.filter); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if got := names([]string{path}, Filter{User: "user-2", Verb: "get", Resource: "secrets", Namespace: "default", Decision: "allow", SourceIP: "127.0.0.1"}); len(got) != 10 {
		t.Errorf("user-2's events: got %v, want 10", got)
	}
	files, err := LogFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(files, []string{gz, path}) {
		t.Fatalf("LogFiles: got %v, want the rotated file, then audit.log", files)
	}
	if got := names(files, Filter{Name: "s31"}); !slices.Equal(got, []string{"s31", "s31"}) {
		t.Errorf("through the gzipped file: got %v, want s31 twice", got)
	}
}

// Requests picks one event per request, whatever stages are recorded.
func TestRequestsPick(t *testing.T) {
	var q Requests
	var picked []string
	for _, e := range []Event{
		{AuditID: "g", Stage: "RequestReceived"},
		{AuditID: "w", Stage: "RequestReceived"},
		{AuditID: "w", Stage: "ResponseStarted"},
		{AuditID: "g", Stage: "ResponseComplete"},
		{AuditID: "p", Stage: "ResponseStarted"},
		{AuditID: "p", Stage: "Panic"},
		{AuditID: "w", Stage: "ResponseComplete"},
		{AuditID: "x", Stage: "Panic"},
		{AuditID: "c", Stage: "ResponseComplete"},
	} {
		if q.Pick(&e) {
			picked = append(picked, e.AuditID+" "+e.Stage)
		}
	}
	want := []string{"w ResponseStarted", "g ResponseComplete", "p ResponseStarted", "x Panic", "c ResponseComplete"}
	if !slices.Equal(picked, want) {
		t.Errorf("picked %v, want %v", picked, want)
	}
	if len(q.started) != 0 {
		t.Errorf("%d watches kept after their end", len(q.started))
	}
}
