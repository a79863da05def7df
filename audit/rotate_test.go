package audit

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// rotatedLog writes n events to dir/audit.log in two runs of a writer
// that rotates past 2,000 bytes (four events a file), with a checkpoint
// every 10 events, and returns the log's files, oldest first.
func rotatedLog(t *testing.T, dir string, signer note.Signer, n int, rot Rotation) []string {
	t.Helper()
	writeRuns(t, filepath.Join(dir, "audit.log"), signer, n, rot)
	files, err := LogFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func verifyFiles(t *testing.T, files []string, verifiers note.Verifiers) *Verification {
	t.Helper()
	v, err := Verify(files, verifiers)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestWriterRotatesAndChainsAcross(t *testing.T) {
	for _, gzipped := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "gzip"}[gzipped], func(t *testing.T) {
			signer, verifiers := testKeys(t, KeyName)
			dir := t.TempDir()
			files := rotatedLog(t, dir, signer, 100, Rotation{MaxSize: 2000, Compress: gzipped})
			if len(files) < 10 {
				t.Fatalf("%d files, want 100 events rotated into 10 or more", len(files))
			}
			for i, f := range files[:len(files)-1] {
				if got := strings.HasSuffix(f, ".gz"); got != gzipped {
					t.Errorf("rotated file %s: compressed %v, want %v", f, got, gzipped)
				}
				lines := fileLines(t, f)
				if !IsCheckpoint([]byte(lines[len(lines)-1])) {
					t.Errorf("rotated file %s does not end with a checkpoint", f)
				}
				if i > 0 && !IsCheckpoint([]byte(lines[0])) {
					t.Errorf("rotated file %s does not start with a checkpoint", f)
				}
				if st, _ := os.Stat(f); st.Mode().Perm() != 0o600 {
					t.Errorf("rotated file %s is %v, want 0600", f, st.Mode().Perm())
				}
			}
			v := verifyFiles(t, files, verifiers)
			if v.Finding != nil || v.First != 1 || v.Events != 100 || v.Signed != 100 {
				t.Fatalf("got %v, events %d to %d, signed %d; want no finding, 1 to 100, signed 100", v.Finding, v.First, v.Events, v.Signed)
			}
			// The middle file removed: the next one's first checkpoint
			// counts the events that are gone.
			mid := files[len(files)/2]
			if err := os.Rename(mid, mid+".away"); err != nil {
				t.Fatal(err)
			}
			v = verifyFiles(t, append(append([]string{}, files[:len(files)/2]...), files[len(files)/2+1:]...), verifiers)
			if v.Finding == nil || v.Finding.What != Deleted || v.Finding.File != files[len(files)/2+1] || v.Finding.Line != 1 {
				t.Errorf("a rotated file removed: got %v, want a deletion at the start of %s", v.Finding, files[len(files)/2+1])
			}
		})
	}
}

// TestVerifyCatchesALineRemovedFromARotatedFile removes each line of a
// rotated file in turn, events and checkpoints, and wants it found there.
func TestVerifyCatchesALineRemovedFromARotatedFile(t *testing.T) {
	signer, verifiers := testKeys(t, KeyName)
	dir := t.TempDir()
	files := rotatedLog(t, dir, signer, 40, Rotation{MaxSize: 2000})
	f := files[2]
	lines := fileLines(t, f)
	for n := range lines {
		without := append(append([]string{}, lines[:n]...), lines[n+1:]...)
		if err := os.WriteFile(f, []byte(strings.Join(without, "")), 0o600); err != nil {
			t.Fatal(err)
		}
		v := verifyFiles(t, files, verifiers)
		// A checkpoint removed leaves every event chained: the one that
		// ends a file is repeated by the next file's first line, and the
		// one that starts a file only repeats the last one.
		if IsCheckpoint([]byte(lines[n])) {
			if v.Finding != nil {
				t.Errorf("checkpoint on line %d removed: got %v, want no finding", n+1, v.Finding)
			}
			continue
		}
		if v.Finding == nil || v.Finding.File != f || v.Finding.Line != n+1 || v.Finding.What != Deleted {
			t.Errorf("line %d removed: got %v, want a deletion at %s:%d", n+1, v.Finding, f, n+1)
		}
	}
}

// TestWriterResumesFromARotatedFile: a writer stopped right after a
// rotation, before the new file was created, continues the chain from the
// rotated file, compressed or not.
func TestWriterResumesFromARotatedFile(t *testing.T) {
	for _, gzipped := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "gzip"}[gzipped], func(t *testing.T) {
			signer, verifiers := testKeys(t, KeyName)
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.log")
			writeLog(t, path, signer, 15)
			rotated := backupName(path, time.Now())
			if err := os.Rename(path, rotated); err != nil {
				t.Fatal(err)
			}
			if gzipped {
				if err := compress(rotated); err != nil {
					t.Fatal(err)
				}
			}
			// An empty audit.log is new too.
			if gzipped {
				if err := os.WriteFile(path, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			writeLog(t, path, signer, 6)
			files, err := LogFiles([]string{dir})
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != 2 {
				t.Fatalf("files %v, want the rotated file and audit.log", files)
			}
			v := verifyFiles(t, files, verifiers)
			if v.Finding != nil || v.Events != 21 || v.Signed != 21 {
				t.Fatalf("got %v, %d events, signed %d; want no finding, 21, 21", v.Finding, v.Events, v.Signed)
			}
			// audit.log alone starts at the checkpoint it opens with.
			v = verifyFiles(t, files[1:], verifiers)
			if v.Finding != nil || v.First != 16 || v.Events != 21 {
				t.Errorf("audit.log alone: got %v, events %d to %d; want no finding, 16 to 21", v.Finding, v.First, v.Events)
			}
		})
	}
}

// TestWriterPrunesRotatedFiles: beyond MaxBackups, the oldest rotated
// files go; past MaxAge, by the time in their names, too. What is left
// verifies from the checkpoint the oldest remaining file starts with.
func TestWriterPrunesRotatedFiles(t *testing.T) {
	signer, verifiers := testKeys(t, KeyName)
	dir := t.TempDir()
	files := rotatedLog(t, dir, signer, 60, Rotation{MaxSize: 2000, MaxBackups: 3, Compress: true})
	if len(files) != 4 {
		t.Fatalf("files %v, want 3 rotated files and audit.log", files)
	}
	v := verifyFiles(t, files, verifiers)
	if v.Finding != nil || v.First <= 1 || v.Events != 60 {
		t.Fatalf("got %v, events %d to %d; want no finding, from after 1 to 60", v.Finding, v.First, v.Events)
	}

	// The oldest file made two days old; a writer keeping one day of
	// files, and all of them by count, removes it when it opens.
	old := backupName(filepath.Join(dir, "audit.log"), time.Now().Add(-48*time.Hour)) + ".gz"
	if err := os.Rename(files[0], old); err != nil {
		t.Fatal(err)
	}
	w, err := OpenRotatingWriter(filepath.Join(dir, "audit.log"), signer, 10, Rotation{MaxSize: 2000, MaxAge: 24 * time.Hour, Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the file past its age is still there: %v", err)
	}
	left, err := LogFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 3 || left[0] != files[1] {
		t.Errorf("left %v, want %v", left, files[1:])
	}
}

// A rotated file being compressed is listed both ways for a moment; it is
// read once.
func TestLogFilesReadsAFileBeingCompressedOnce(t *testing.T) {
	signer, verifiers := testKeys(t, KeyName)
	dir := t.TempDir()
	files := rotatedLog(t, dir, signer, 20, Rotation{MaxSize: 2000})
	// The copy without the removal of the original.
	data, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	z := gzip.NewWriter(&gz)
	z.Write(data)
	z.Close()
	if err := os.WriteFile(files[1]+".gz", gz.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := LogFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(again, " ") != strings.Join(files, " ") {
		t.Fatalf("got %v, want %v", again, files)
	}
	if v := verifyFiles(t, again, verifiers); v.Finding != nil {
		t.Errorf("got %v, want no finding", v.Finding)
	}
}

// A write that fails is an error, and the event is not counted in the
// chain: here the log is /dev/full, where every write fails as on a full
// disk.
func TestWriterFailsOnAFullDisk(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	signer, _ := testKeys(t, KeyName)
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWriter(path, signer, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(testEvent(1)); err == nil {
		t.Fatal("a write to a full disk succeeded")
	}
	if w.head.seq != 0 || w.durable.seq != 0 {
		t.Errorf("the chain counts %d events, %d written; want 0", w.head.seq, w.durable.seq)
	}
	w.Close()
}

// fileLines are the lines of a log file, gzipped or not, with their
// newlines.
func fileLines(t *testing.T, path string) []string {
	t.Helper()
	r, err := openLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(data), "\n")[:bytes.Count(data, []byte("\n"))]
}

// Writes from many goroutines at once, committed in groups and rotated,
// make one chain.
func TestConcurrentWritesChainAcrossRotations(t *testing.T) {
	signer, verifiers := testKeys(t, KeyName)
	dir := t.TempDir()
	w, err := OpenRotatingWriter(filepath.Join(dir, "audit.log"), signer, 7, Rotation{MaxSize: 4000, Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				if err := w.Write(testEvent(g*100 + i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := LogFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	v := verifyFiles(t, files, verifiers)
	if v.Finding != nil || v.Events != 400 || v.Signed != 400 || len(files) < 3 {
		t.Errorf("got %v, %d events, %d signed, %d files; want no finding, 400, 400, 3 files or more", v.Finding, v.Events, v.Signed, len(files))
	}
}
