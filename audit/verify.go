package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// What a Finding says happened to the log at its place.
const (
	Edited    = "edited"    // an event's bytes do not match its hash
	Deleted   = "deleted"   // events are missing
	Inserted  = "inserted"  // a line that is not the next event of the chain
	Reordered = "reordered" // events out of their order
	CutOff    = "cut off"   // a line cut short
	Forged    = "forged checkpoint"
)

// A Finding is the first place where an audit log departs from its chain.
type Finding struct {
	File string
	Line int // from 1
	What string
	// Detail says what was expected and what was found.
	Detail string
}

func (f *Finding) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", f.File, f.Line, f.What, f.Detail)
}

// Verification is the outcome of Verify.
type Verification struct {
	// First is the number of the first event verified: 1, or where the
	// first file starts with a checkpoint, the event after it, because the
	// files before it were rotated away.
	First int64
	// Events is the number of events verified, up to the finding if any:
	// the last event's number.
	Events int64
	// Checkpoints is the number of checkpoints verified; Signed is the
	// count the last of them states, at LastCheckpoint (file:line).
	Checkpoints    int
	Signed         int64
	LastCheckpoint string
	// Finding is the first departure from the chain, nil when there is
	// none.
	Finding *Finding
}

// Verify checks the hash chain of the events in files, read in order as one
// log, and the checkpoints among them with verifiers, and reports the
// first line where the log was changed. An error is a failure to read.
//
// Each event's sequence number, which its hash covers, tells what
// happened at the first broken link: a number that is the one expected but
// a hash that does not match is an edit; a number ahead is a deletion,
// unless the next line holds the number expected (a reordering); a number
// behind is a line inserted again (a duplicate) or out of order. Lines cut
// off after the last checkpoint cannot be told from a log that ends there:
// Signed says how far the signature goes.
//
// A log whose first line is a signed checkpoint starts where it says: each
// file the Writer starts after a rotation opens with one, so that the
// files left once older ones are removed verify on their own. Files
// removed from the start of the log cannot be told from files rotated
// away: First says where the log starts.
func Verify(files []string, verifiers note.Verifiers) (*Verification, error) {
	v := &Verification{First: 1}
	lr := &lineReader{files: files}
	defer lr.close()
	var prev [sha256.Size]byte
	for {
		l, err := lr.next()
		if err == io.EOF {
			return v, nil
		}
		if err != nil {
			return nil, err
		}
		find := func(what, format string, args ...any) (*Verification, error) {
			v.Finding = &Finding{File: l.file, Line: l.num, What: what, Detail: fmt.Sprintf(format, args...)}
			return v, nil
		}
		if !l.complete {
			return find(CutOff, "the last line ends without its newline, after %d bytes", len(l.text))
		}
		if isCheckpoint(l.text) {
			c, err := openCheckpoint(l.text, verifiers)
			if err != nil {
				return find(Forged, "%v", err)
			}
			if v.Events == 0 && v.Checkpoints == 0 {
				v.First, v.Events, prev = c.count+1, c.count, c.hash
			}
			if c.count > v.Events && !nextIs(lr, v.Events+1) {
				// The events it counts are gone, as when a rotated file is
				// removed from the middle of the log.
				if c.count == v.Events+1 {
					return find(Deleted, "event %d is missing before a checkpoint of %d events", c.count, c.count)
				}
				return find(Deleted, "events %d to %d are missing before a checkpoint of %d events", v.Events+1, c.count, c.count)
			}
			if c.count != v.Events || c.hash != prev {
				return find(Inserted, "a checkpoint of %d events ending in %s, after %d events ending in %s", c.count, hex.EncodeToString(c.hash[:]), v.Events, hex.EncodeToString(prev[:]))
			}
			v.Checkpoints++
			v.Signed = c.count
			v.LastCheckpoint = fmt.Sprintf("%s:%d", l.file, l.num)
			continue
		}
		want := v.Events + 1
		seq, hash, at, ok := chainFields(l.text)
		switch {
		case !ok:
			return find(Inserted, "not a chained event: event %d expected", want)
		case seq == want:
			if chainHash(prev, l.text, at) != hash {
				return find(Edited, "event %d does not match its hash", seq)
			}
			v.Events, prev = seq, hash
		case seq > want:
			if n, err := lr.peek(); err == nil && n.complete {
				nseq, _, _, ok := chainFields(n.text)
				switch {
				case ok && nseq == want:
					return find(Reordered, "event %d comes before event %d", seq, want)
				case ok && nseq == seq:
					return find(Edited, "event %d is numbered %d", want, seq)
				}
			}
			if seq == want+1 {
				return find(Deleted, "event %d is missing before event %d", want, seq)
			}
			return find(Deleted, "events %d to %d are missing before event %d", want, seq-1, seq)
		case seq == v.Events && hash == prev:
			return find(Inserted, "event %d again, a copy of the line before", seq)
		default:
			return find(Reordered, "event %d after event %d", seq, v.Events)
		}
	}
}

// nextIs reports whether the line after the current one is event seq.
func nextIs(lr *lineReader, seq int64) bool {
	n, err := lr.peek()
	if err != nil || !n.complete {
		return false
	}
	nseq, _, _, ok := chainFields(n.text)
	return ok && nseq == seq
}

type line struct {
	file     string
	num      int
	text     []byte // without its newline
	complete bool   // it ended with a newline
}

// lineReader reads the lines of files one after the other, with one line
// of look-ahead.
type lineReader struct {
	files  []string
	f      io.ReadCloser
	r      *bufio.Reader
	name   string
	num    int
	peeked *line
}

func (lr *lineReader) next() (*line, error) {
	if l := lr.peeked; l != nil {
		lr.peeked = nil
		return l, nil
	}
	for {
		if lr.r == nil {
			if len(lr.files) == 0 {
				return nil, io.EOF
			}
			f, err := openLog(lr.files[0])
			if err != nil {
				return nil, err
			}
			lr.f, lr.r, lr.name, lr.num = f, bufio.NewReaderSize(f, 1<<20), lr.files[0], 0
			lr.files = lr.files[1:]
		}
		text, err := lr.r.ReadBytes('\n')
		if len(text) > 0 {
			lr.num++
			l := &line{file: lr.name, num: lr.num, text: bytes.TrimSuffix(text, []byte("\n"))}
			l.complete = len(l.text) < len(text)
			return l, nil
		}
		if err != io.EOF {
			return nil, fmt.Errorf("read %s: %w", lr.name, err)
		}
		lr.f.Close()
		lr.f, lr.r = nil, nil
	}
}

func (lr *lineReader) peek() (*line, error) {
	if lr.peeked == nil {
		l, err := lr.next()
		if err != nil {
			return nil, err
		}
		lr.peeked = l
	}
	return lr.peeked, nil
}

func (lr *lineReader) close() {
	if lr.f != nil {
		lr.f.Close()
	}
}

// LogFiles lists the audit log files that paths name, in the order they
// are read: a file is itself; a directory holds rotated files, named
// audit-TIME.log or audit-TIME.log.gz, whose names sort in time order,
// and then audit.log, the newest. A rotated file found both as itself and
// compressed (the Writer was compressing it) is read once, uncompressed.
func LogFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		var rotated []string
		for _, pattern := range []string{"audit-*.log", "audit-*.log.gz"} {
			m, err := filepath.Glob(filepath.Join(p, pattern))
			if err != nil {
				return nil, err
			}
			rotated = append(rotated, m...)
		}
		slices.SortFunc(rotated, func(a, b string) int {
			if c := strings.Compare(strings.TrimSuffix(a, ".gz"), strings.TrimSuffix(b, ".gz")); c != 0 {
				return c
			}
			return strings.Compare(a, b) // X.log before X.log.gz
		})
		rotated = slices.CompactFunc(rotated, func(a, b string) bool {
			return strings.TrimSuffix(a, ".gz") == strings.TrimSuffix(b, ".gz")
		})
		files = append(files, rotated...)
		f := filepath.Join(p, "audit.log")
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		} else if len(rotated) == 0 {
			return nil, fmt.Errorf("no audit log in %s: %w", p, err)
		}
	}
	if len(files) == 0 {
		return nil, errors.New("no audit log files")
	}
	return files, nil
}
