package audit

import (
	"bufio"
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
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// DefaultCheckpointEvery is how many events the Writer chains between two
// signed checkpoints.
const DefaultCheckpointEvery = 1000

// Writer appends events to a file, one JSON object per line, each chained
// to the one before by a hash (see ChainAnnotation), with a signed
// checkpoint every so many events and when it closes. It is safe for
// concurrent use.
//
// Writes are committed in groups: each Write hashes its event into the
// chain under a lock held for microseconds and queues its line; a
// goroutine of the Writer's writes what is queued with one write(2) and
// then releases every Write of that group. A Write returns once its line
// is in the file, or with the error that kept it out. Holding the lock
// over the write(2), as the Writer first did, queued the server's
// requests behind whichever of them the kernel had descheduled mid-write:
// on a busy machine, 0.6 ms of waiting on the lock per audited create in
// BenchmarkSecretCreateAudit's mutex profile, none now.
//
// With a Rotation, the file is renamed when it would grow past its size
// and a new one started (see rotate.go); the chain runs on across files.
type Writer struct {
	signer note.Signer
	every  int64
	path   string
	rot    Rotation
	// mill compresses and prunes rotated files; nil without rotation.
	mill *mill

	mu sync.Mutex // guards the fields below
	// head is the chain as it stands after the events queued.
	head chainState
	// cur is the group that Writes join, not yet taken to be written.
	cur    *group
	closed bool
	// kick wakes the loop to write cur; closed by Close.
	kick chan struct{}

	loopDone chan struct{} // the loop has returned

	// The file and what is written, owned by the loop, and by
	// OpenRotatingWriter before it starts and Close after it returns.
	//
	// f is the file written, nil after a rotation or a write that failed
	// half-way, until the next write opens it again.
	f    *os.File
	size int64 // bytes in f
	// fileEvents counts the events in f: a file is not rotated before it
	// holds one.
	fileEvents int64
	// durable is the chain as it stands at the end of the file.
	durable chainState
	// lastBackup is the time in the newest rotated file's name.
	lastBackup time.Time
}

// group is the lines of Writes committed together.
type group struct {
	lines  []byte
	events int64
	// after is the chain once the group is written.
	after chainState
	// err, set before done is closed, is why the group is not written.
	err  error
	done chan struct{}
}

func newGroup() *group { return &group{done: make(chan struct{})} }

// OpenWriter opens path for appending, creating it 0600 and its directory
// 0700, and continues the hash chain where the file ends. signer signs the
// checkpoints, written every `every` events (DefaultCheckpointEvery when
// 0). The file is never rotated.
func OpenWriter(path string, signer note.Signer, every int) (*Writer, error) {
	return OpenRotatingWriter(path, signer, every, Rotation{})
}

// OpenRotatingWriter is OpenWriter with the file rotated as rot says.
// When path is new or holds no event (it was just rotated), the chain
// continues from the newest rotated file.
func OpenRotatingWriter(path string, signer note.Signer, every int, rot Rotation) (*Writer, error) {
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
	errs = append(errs, rot.validate())
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
	w := &Writer{signer: signer, every: int64(every), path: path, rot: rot, f: f,
		cur: newGroup(), kick: make(chan struct{}, 1), loopDone: make(chan struct{})}
	if err := w.resume(); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	w.head = w.durable
	if rot.rotates() {
		w.mill = startMill(path, rot)
	}
	go w.loop()
	return w, nil
}

// resume reads the chain's state back: from the end of the file, the last
// chained event or the last checkpoint, whichever comes last; when the
// file holds neither, from the newest rotated file, and then the file
// starts with a checkpoint of that state, so that the file verifies on its
// own once older files are removed. A last line without its newline (a
// write cut short by a crash) is ended, so that the next event starts a
// line of its own; it stays in the file, where audit verify reports it.
func (w *Writer) resume() error {
	st, err := w.f.Stat()
	if err != nil {
		return err
	}
	w.size = st.Size()
	found := false
	if w.size > 0 {
		var lastByte [1]byte
		if _, err := w.f.ReadAt(lastByte[:], w.size-1); err != nil {
			return err
		}
		if lastByte[0] != '\n' {
			if _, err := w.f.Write([]byte("\n")); err != nil {
				return err
			}
			w.size++
		}
		err := eachLineBackward(w.f, w.size, func(line []byte) bool {
			s, ok := stateOf(line)
			if !ok {
				return true
			}
			found = true
			w.durable = s
			// It may hold no event but the checkpoint it started with;
			// rotated, it would still verify.
			w.fileEvents = 1
			return false
		})
		if err != nil {
			return err
		}
	}
	backups, err := backupFiles(w.path)
	if err != nil {
		return err
	}
	if len(backups) > 0 {
		w.lastBackup = backups[len(backups)-1].time
	}
	if found || len(backups) == 0 {
		return nil
	}
	newest := backups[len(backups)-1].path
	s, err := lastState(newest)
	if err != nil {
		return fmt.Errorf("resume the chain from %s: %w", newest, err)
	}
	w.durable = s
	return w.startFile()
}

// chainState is where the chain stands after a line.
type chainState struct {
	seq    int64
	last   [sha256.Size]byte
	signed int64 // -1: unknown, the checkpoint at Close covers it again
}

// stateOf is the chain's state after line, if line is a chained event or
// a checkpoint.
func stateOf(line []byte) (chainState, bool) {
	if isCheckpoint(line) {
		msg, err := noteOf(line)
		if err != nil {
			return chainState{}, false
		}
		text, _, ok := bytes.Cut(msg, []byte("\n\n"))
		if !ok {
			return chainState{}, false
		}
		c, err := parseCheckpoint(string(text) + "\n")
		if err != nil {
			return chainState{}, false
		}
		return chainState{seq: c.count, last: c.hash, signed: c.count}, true
	}
	seq, hash, _, ok := chainFields(line)
	if !ok {
		return chainState{}, false
	}
	return chainState{seq: seq, last: hash, signed: -1}, true
}

// lastState is the chain's state at the end of a rotated file, gzipped
// or not.
func lastState(path string) (chainState, error) {
	if !strings.HasSuffix(path, ".gz") {
		f, err := os.Open(path)
		if err != nil {
			return chainState{}, err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return chainState{}, err
		}
		var s chainState
		found := false
		err = eachLineBackward(f, st.Size(), func(line []byte) bool {
			s, found = stateOf(line)
			return !found
		})
		if err == nil && !found {
			err = errors.New("no chained event or checkpoint")
		}
		return s, err
	}
	r, err := openLog(path)
	if err != nil {
		return chainState{}, err
	}
	defer r.Close()
	var s chainState
	found := false
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if n, ok := stateOf(bytes.TrimSuffix(line, []byte("\n"))); ok {
			s, found = n, true
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, err
		}
	}
	if !found {
		return s, errors.New("no chained event or checkpoint")
	}
	return s, nil
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
	if w.closed {
		w.mu.Unlock()
		return errors.New("audit log is closed")
	}
	seq := strconv.AppendInt(nil, w.head.seq+1, 10)
	g := w.cur
	start := len(g.lines)
	g.lines = append(g.lines, enc[:c]...)
	c += start
	g.lines = append(g.lines, make([]byte, hashLen)...)
	g.lines = append(g.lines, enc[c-start:s]...)
	g.lines = append(g.lines, seq...)
	g.lines = append(g.lines, enc[s:]...)
	line := g.lines[start:]
	hash := chainHash(w.head.last, line, c-start)
	hex.Encode(line[c-start:c-start+hashLen], hash[:])
	g.lines = append(g.lines, '\n')
	g.events++
	w.head.seq++
	w.head.last = hash
	var signErr error
	if w.head.seq%w.every == 0 {
		cp, err := signCheckpoint(checkpoint{origin: w.signer.Name(), count: w.head.seq, hash: w.head.last}, w.signer)
		if err == nil {
			g.lines = append(g.lines, cp...)
			w.head.signed = w.head.seq
		}
		signErr = err
	}
	g.after = w.head
	select {
	case w.kick <- struct{}{}:
	default: // the loop is due to run
	}
	w.mu.Unlock()

	<-g.done
	if g.err != nil {
		return fmt.Errorf("write audit log: %w", g.err)
	}
	// The event is written; the next checkpoint covers it.
	return signErr
}

// loop writes the queued groups, one at a time, until Close closes kick
// and what was queued before is written.
func (w *Writer) loop() {
	defer close(w.loopDone)
	for range w.kick {
		w.writeQueued()
	}
	w.writeQueued()
}

// writeQueued writes the groups queued until none is left. A group that
// fails fails the group queued after it too, whose events chain to its
// own, and the chain goes back to the end of the file.
func (w *Writer) writeQueued() {
	for {
		w.mu.Lock()
		g := w.cur
		if g.events == 0 {
			w.mu.Unlock()
			return
		}
		w.cur = newGroup()
		w.mu.Unlock()

		err := w.writeGroup(g)

		w.mu.Lock()
		var next *group
		if err == nil {
			w.durable = g.after
		} else {
			g.err = err
			next, w.cur = w.cur, newGroup()
			next.err = fmt.Errorf("an audit event before failed: %w", err)
			w.head = w.durable
		}
		w.mu.Unlock()
		close(g.done)
		if next != nil {
			close(next.done)
		}
	}
}

// writeGroup writes g's lines, first rotating the file if they would grow
// it past its size.
func (w *Writer) writeGroup(g *group) error {
	if w.f != nil && w.rot.MaxSize > 0 && w.fileEvents > 0 && w.size+int64(len(g.lines)) > w.rot.MaxSize {
		if err := w.rotate(); err != nil {
			return fmt.Errorf("rotate: %w", err)
		}
	}
	if err := w.append(g.lines); err != nil {
		return err
	}
	w.fileEvents += g.events
	return nil
}

// append writes line at the end of the file, opening it again if a
// rotation or a failed write closed it. A write that fails half-way is cut
// back off, so that the next line starts where this one would have; if
// that fails too, the file is closed, to be opened again, its last line
// ended, by the next write.
func (w *Writer) append(line []byte) error {
	if w.f == nil {
		if err := w.reopen(); err != nil {
			return err
		}
	}
	n, err := w.f.Write(line)
	if err == nil {
		w.size += int64(n)
		return nil
	}
	if n > 0 {
		if terr := w.f.Truncate(w.size); terr != nil {
			w.f.Close()
			w.f = nil
		}
	}
	return err
}

// reopen opens the file again after a rotation or a failed write: a new
// file starts with a checkpoint of the chain so far; a last line left
// without its newline is ended.
func (w *Writer) reopen() error {
	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	w.f, w.size, w.fileEvents = f, st.Size(), 0
	if w.size == 0 {
		if err := w.startFile(); err != nil {
			w.f.Close()
			w.f = nil
			return err
		}
		return nil
	}
	// Not new: it holds events, or a rotation could not rename it.
	w.fileEvents = 1
	var lastByte [1]byte
	if _, err := f.ReadAt(lastByte[:], w.size-1); err != nil {
		return err
	}
	if lastByte[0] != '\n' {
		if _, err := f.Write([]byte("\n")); err != nil {
			w.f.Close()
			w.f = nil
			return err
		}
		w.size++
	}
	return nil
}

// startFile writes the checkpoint that a new file of a chain already
// started begins with.
func (w *Writer) startFile() error {
	if w.durable.seq == 0 {
		return nil
	}
	return w.checkpoint()
}

// checkpoint writes a signed checkpoint of the chain as it stands at the
// end of the file.
func (w *Writer) checkpoint() error {
	line, err := signCheckpoint(checkpoint{origin: w.signer.Name(), count: w.durable.seq, hash: w.durable.last}, w.signer)
	if err != nil {
		return err
	}
	if err := w.append(line); err != nil {
		return fmt.Errorf("write audit checkpoint: %w", err)
	}
	w.durable.signed = w.durable.seq
	return nil
}

// Close refuses new writes, waits for the queued ones to be written,
// writes a checkpoint of the events that the last one does not cover,
// flushes the file to disk and closes it. Then it waits for the
// compression and pruning of rotated files under way, and returns their
// errors too.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	close(w.kick)
	w.mu.Unlock()
	<-w.loopDone

	var errs []error
	if w.durable.seq > 0 && w.durable.signed != w.durable.seq {
		errs = append(errs, w.checkpoint())
	}
	if w.f != nil {
		errs = append(errs, w.f.Sync(), w.f.Close())
		w.f = nil
	}
	if w.mill != nil {
		errs = append(errs, w.mill.stop())
	}
	return errors.Join(errs...)
}
