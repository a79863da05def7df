package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// Writer appends events to a file, one JSON object per line. It is safe for
// concurrent use; each event is one write of one whole line.
type Writer struct {
	mu   sync.Mutex // guards f
	f    *os.File
	path string
}

// OpenWriter opens path for appending, creating it 0600 and its directory
// 0700.
func OpenWriter(path string) (*Writer, error) {
	if path == "" {
		return nil, errors.New("audit log path is not set")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create audit log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	return &Writer{f: f, path: path}, nil
}

// Write appends ev. An error means the event is not recorded, and the
// request it describes must be refused.
func (w *Writer) Write(ev *auditv1.Event) error {
	line, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode audit event: %w", err)
	}
	line = append(line, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return errors.New("audit log is closed")
	}
	if _, err := w.f.Write(line); err != nil {
		return fmt.Errorf("write audit log: %w", err)
	}
	return nil
}

// Close flushes the file to disk and closes it; later writes fail.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := errors.Join(w.f.Sync(), w.f.Close())
	w.f = nil
	return err
}
