package audit

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Rotation is done by the Writer itself rather than by
// gopkg.in/natefinch/lumberjack.v2, kube-apiserver's, whose file names and
// flags it keeps, because lumberjack cannot keep the log's guarantees:
//
//   - it rotates inside a Write, with no way to end the old file with a
//     checkpoint and start the new one with another;
//   - two rotations within one millisecond get one name, and the rename
//     replaces the first rotated file without a word;
//   - it neither syncs a file before renaming it nor the compressed copy
//     before removing the original;
//   - it compresses and prunes in a goroutine that nothing stops and whose
//     errors nothing sees;
//   - its sizes are whole megabytes, so a test cannot rotate a small log.

// Rotation says when the Writer rotates its file and which rotated files it
// keeps, as kube-apiserver's --audit-log-max* flags do. The zero value
// never rotates.
type Rotation struct {
	// MaxSize is the size in bytes past which the file is rotated before
	// the next event; 0 never rotates. The file may pass it by the
	// checkpoint that ends it, or by one event when it holds only that.
	MaxSize int64
	// MaxBackups is how many rotated files are kept, the newest; 0 keeps
	// all.
	MaxBackups int
	// MaxAge is how long a rotated file is kept, by the time in its name;
	// 0 keeps all.
	MaxAge time.Duration
	// Compress gzips rotated files, after rotation, in the background.
	Compress bool
}

func (r Rotation) validate() error {
	var errs []error
	if r.MaxSize < 0 {
		errs = append(errs, fmt.Errorf("audit log maximum size %d is negative", r.MaxSize))
	}
	if r.MaxBackups < 0 {
		errs = append(errs, fmt.Errorf("audit log maximum backups %d is negative", r.MaxBackups))
	}
	if r.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("audit log maximum age %s is negative", r.MaxAge))
	}
	return errors.Join(errs...)
}

func (r Rotation) rotates() bool { return r.MaxSize > 0 }

// backupTimeFormat is the time in a rotated file's name, lumberjack's (and
// so kube-apiserver's): audit.log becomes audit-2006-01-02T15-04-05.000.log,
// in UTC. Names sort in time order.
const backupTimeFormat = "2006-01-02T15-04-05.000"

// backupName is the name path gets when rotated at t.
func backupName(path string, t time.Time) string {
	dir, base := filepath.Split(path)
	ext := filepath.Ext(base)
	return filepath.Join(dir, strings.TrimSuffix(base, ext)+"-"+t.UTC().Format(backupTimeFormat)+ext)
}

type backup struct {
	path string
	time time.Time
	gz   bool
}

// backupFiles lists the rotated files of path, oldest first: a file
// rotated and then compressed, whose original is not yet removed, is listed
// once, as its original. A name that does not parse is not one of ours.
func backupFiles(path string) ([]backup, error) {
	dir, base := filepath.Split(path)
	ext := filepath.Ext(base)
	prefix := strings.TrimSuffix(base, ext) + "-"
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return nil, fmt.Errorf("list rotated audit logs: %w", err)
	}
	var bs []backup
	for _, e := range entries {
		name := e.Name()
		gz := strings.HasSuffix(name, ext+".gz")
		stem := strings.TrimSuffix(name, ".gz")
		if !e.Type().IsRegular() || !strings.HasPrefix(stem, prefix) || !strings.HasSuffix(stem, ext) {
			continue
		}
		t, err := time.Parse(backupTimeFormat, strings.TrimSuffix(strings.TrimPrefix(stem, prefix), ext))
		if err != nil {
			continue
		}
		if n := len(bs); n > 0 && bs[n-1].time.Equal(t) {
			// ReadDir sorts by name: X.log comes before X.log.gz.
			continue
		}
		bs = append(bs, backup{path: filepath.Join(dir, name), time: t, gz: gz})
	}
	slices.SortFunc(bs, func(a, b backup) int { return a.time.Compare(b.time) })
	return bs, nil
}

// rotate ends the file with a checkpoint of the chain, syncs and closes
// it, and renames it with the time; the next write starts a new file. A
// name is never reused, even within a millisecond or when the clock goes
// back. On an error the file stays where it is, and is written on.
func (w *Writer) rotate() error {
	if w.durable.signed != w.durable.seq {
		if err := w.checkpoint(); err != nil {
			return err
		}
	}
	if w.f == nil {
		// The checkpoint's write failed half-way and closed it.
		return errors.New("audit log closed by a failed write")
	}
	if err := w.f.Sync(); err != nil {
		return err
	}
	t := time.Now().UTC().Truncate(time.Millisecond)
	if !t.After(w.lastBackup) {
		t = w.lastBackup.Add(time.Millisecond)
	}
	name := backupName(w.path, t)
	if _, err := os.Lstat(name); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("rotated audit log %s exists", name)
	}
	if err := os.Rename(w.path, name); err != nil {
		return err
	}
	w.lastBackup = t
	err := errors.Join(w.f.Close(), syncDir(filepath.Dir(w.path)))
	w.f, w.size, w.fileEvents = nil, 0, 0
	w.mill.notify()
	if err != nil {
		return err
	}
	return w.reopen()
}

// mill compresses and prunes rotated files in a goroutine of its own, so
// that no request waits on gzip, stopped by stop.
type mill struct {
	path string
	rot  Rotation
	work chan struct{} // a pass is due
	done chan struct{} // the goroutine has returned
	mu   sync.Mutex    // guards errs
	errs []error
}

func startMill(path string, rot Rotation) *mill {
	m := &mill{path: path, rot: rot, work: make(chan struct{}, 1), done: make(chan struct{})}
	m.notify() // files left by an earlier run
	go m.run()
	return m
}

func (m *mill) notify() {
	select {
	case m.work <- struct{}{}:
	default:
	}
}

func (m *mill) run() {
	defer close(m.done)
	for range m.work {
		if err := m.pass(time.Now()); err != nil {
			m.mu.Lock()
			m.errs = append(m.errs, err)
			m.mu.Unlock()
		}
	}
}

// stop waits for the pass under way and returns every error of the passes.
func (m *mill) stop() error {
	close(m.work)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	return errors.Join(m.errs...)
}

// pass removes the rotated files beyond MaxBackups or older than MaxAge,
// then compresses those that are left, when Compress is set.
func (m *mill) pass(now time.Time) error {
	bs, err := backupFiles(m.path)
	if err != nil {
		return err
	}
	var errs []error
	keep := bs[:0]
	for i, b := range bs {
		tooMany := m.rot.MaxBackups > 0 && len(bs)-i > m.rot.MaxBackups
		tooOld := m.rot.MaxAge > 0 && now.Sub(b.time) > m.rot.MaxAge
		if !tooMany && !tooOld {
			keep = append(keep, b)
			continue
		}
		for _, p := range []string{strings.TrimSuffix(b.path, ".gz"), strings.TrimSuffix(b.path, ".gz") + ".gz"} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove rotated audit log: %w", err))
			}
		}
	}
	if m.rot.Compress {
		for _, b := range keep {
			if !b.gz {
				if err := compress(b.path); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// compress writes path.gz, synced, then removes path. A copy cut short
// by a crash is a .gz.tmp file, which the next pass writes again.
func compress(path string) error {
	in, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("compress rotated audit log: %w", err)
	}
	defer in.Close()
	tmp := path + ".gz.tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("compress rotated audit log: %w", err)
	}
	z := gzip.NewWriter(out)
	_, err = io.Copy(z, in)
	err = errors.Join(err, z.Close(), out.Sync(), out.Close())
	if err == nil {
		err = os.Rename(tmp, path+".gz")
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err == nil {
		err = os.Remove(path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compress rotated audit log %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
