package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/mod/sumdb/note"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// DefaultCheckpointEvery is how many events the Writer chains between two
// signed checkpoints.
const DefaultCheckpointEvery = 1000

// Writer appends events to a file, one JSON object per line, each chained
// to the one before by a hash (see ChainAnnotation), with a signed
// checkpoint every so many events and when it closes. It is safe for
// concurrent use; each event is one write of one whole line.
type Writer struct {
	signer note.Signer
	every  int64
	path   string

	mu   sync.Mutex // guards the fields below
	f    *os.File
	seq  int64             // events chained so far
	last [sha256.Size]byte // hash of event seq
	// signed is the count the last checkpoint written states.
	signed int64
}

// OpenWriter opens path for appending, creating it 0600 and its directory
// 0700, and continues the hash chain where the file ends. signer signs the
// checkpoints, written every `every` events (DefaultCheckpointEvery when
// 0).
func OpenWriter(path string, signer note.Signer, every int) (*Writer, error) {
	var errs []error
	if path == "" {
		errs = append(errs, errors.New("audit log path is not set"))
	}
	if signer == nil {
		errs = append(errs, errors.New("audit checkpoint signer is not set"))
	}
	if every < 0 {
		errs = append(errs, fmt.Errorf("audit checkpoint interval %d is negative", every))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if every == 0 {
		every = DefaultCheckpointEvery
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create audit log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	w := &Writer{signer: signer, every: int64(every), path: path, f: f}
	if err := w.resume(); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	return w, nil
}

// resume reads the chain's state back from the end of the file: the last
// chained event, or the last checkpoint, whichever comes last. A last line
// without its newline (a write cut short by a crash) is ended, so that the
// next event starts a line of its own; it stays in the file, where audit
// verify reports it.
func (w *Writer) resume() error {
	st, err := w.f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		return nil
	}
	var lastByte [1]byte
	if _, err := w.f.ReadAt(lastByte[:], st.Size()-1); err != nil {
		return err
	}
	if lastByte[0] != '\n' {
		if _, err := w.f.Write([]byte("\n")); err != nil {
			return err
		}
	}
	return eachLineBackward(w.f, st.Size(), func(line []byte) bool {
		if isCheckpoint(line) {
			msg, err := noteOf(line)
			if err != nil {
				return true
			}
			text, _, ok := bytes.Cut(msg, []byte("\n\n"))
			if !ok {
				return true
			}
			c, err := parseCheckpoint(string(text) + "\n")
			if err != nil {
				return true
			}
			w.seq, w.last, w.signed = c.count, c.hash, c.count
			return false
		}
		seq, hash, _, ok := chainFields(line)
		if !ok {
			return true
		}
		w.seq, w.last = seq, hash
		// Unknown: the checkpoint at Close covers it again.
		w.signed = -1
		return false
	})
}

// eachLineBackward calls fn with the lines of the first size bytes of f,
// last first, until fn returns false.
func eachLineBackward(f io.ReaderAt, size int64, fn func([]byte) bool) error {
	const chunk = 64 << 10
	var tail []byte // the start of a line whose end was read
	end := size
	for end > 0 {
		start := max(end-chunk, 0)
		buf := make([]byte, end-start, int(end-start)+len(tail))
		if _, err := f.ReadAt(buf, start); err != nil {
			return err
		}
		buf = append(buf, tail...)
		for {
			i := bytes.LastIndexByte(buf[:len(buf)-1], '\n')
			if i < 0 {
				break
			}
			if line := bytes.TrimSuffix(buf[i+1:], []byte("\n")); len(line) > 0 && !fn(line) {
				return nil
			}
			buf = buf[:i+1]
		}
		tail = buf
		end = start
	}
	if line := bytes.TrimSuffix(tail, []byte("\n")); len(line) > 0 {
		fn(line)
	}
	return nil
}

// Write appends ev, chained to the event before. An error means the event
// may not be recorded, and the request it describes must be refused.
func (w *Writer) Write(ev *auditv1.Event) error {
	// Encoded outside the lock with both chain annotations empty; their
	// values are set in place under it.
	e := *ev
	e.Annotations = make(map[string]string, len(ev.Annotations)+2)
	maps.Copy(e.Annotations, ev.Annotations)
	e.Annotations[ChainAnnotation] = ""
	e.Annotations[SeqAnnotation] = ""
	enc, err := json.Marshal(&e)
	if err != nil {
		return fmt.Errorf("encode audit event: %w", err)
	}
	// The annotations are the event's last field, so these are theirs.
	c := bytes.LastIndex(enc, chainKey) + len(chainKey)
	s := bytes.LastIndex(enc, seqKey) + len(seqKey)
	if c < len(chainKey) || s < len(seqKey) || c > s {
		return errors.New("encode audit event: chain annotations not found")
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return errors.New("audit log is closed")
	}
	seq := strconv.AppendInt(nil, w.seq+1, 10)
	line := make([]byte, 0, len(enc)+hashLen+len(seq)+1)
	line = append(line, enc[:c]...)
	line = append(line, make([]byte, hashLen)...)
	line = append(line, enc[c:s]...)
	line = append(line, seq...)
	line = append(line, enc[s:]...)
	hash := chainHash(w.last, line, c)
	hex.Encode(line[c:c+hashLen], hash[:])
	line = append(line, '\n')
	if _, err := w.f.Write(line); err != nil {
		return fmt.Errorf("write audit log: %w", err)
	}
	w.seq++
	w.last = hash
	if w.seq%w.every == 0 {
		return w.checkpoint()
	}
	return nil
}

// checkpoint writes a signed checkpoint of the chain as it stands.
func (w *Writer) checkpoint() error {
	line, err := signCheckpoint(checkpoint{origin: w.signer.Name(), count: w.seq, hash: w.last}, w.signer)
	if err != nil {
		return err
	}
	if _, err := w.f.Write(line); err != nil {
		return fmt.Errorf("write audit checkpoint: %w", err)
	}
	w.signed = w.seq
	return nil
}

// Close writes a checkpoint of the events that the last one does not
// cover, flushes the file to disk and closes it; later writes fail.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	var errs []error
	if w.seq > 0 && w.signed != w.seq {
		errs = append(errs, w.checkpoint())
	}
	errs = append(errs, w.f.Sync(), w.f.Close())
	w.f = nil
	return errors.Join(errs...)
}
