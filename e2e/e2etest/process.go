package e2etest

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// StartTimeout bounds the wait for a line that a starting process
	// prints; the first `trustplane up` also creates the PKI.
	StartTimeout = 60 * time.Second
	// StopTimeout bounds SIGTERM to exit.
	StopTimeout = 20 * time.Second
)

// Process is a child process that runs while the test uses it. Its methods
// are for the test's goroutine: they are not safe for concurrent use.
type Process struct {
	cmd  *exec.Cmd
	name string
	// out holds what the process wrote: stderr as it is, stdout a line at a
	// time behind "stdout: ".
	out *Buffer
	// lines carries stdout lines to WaitLine; when nobody reads them, the
	// lines past its buffer are dropped (they are still in out).
	lines chan string
	// exited is closed once the process has exited and err is set.
	exited  chan struct{}
	err     error
	stopped bool
}

// Start starts cmd, whose Stdout and Stderr must be unset. The process is
// stopped with SIGTERM when the test ends, and must then exit with status
// 0; its output goes to the test log if the test failed.
func Start(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	p := &Process{
		cmd:    cmd,
		name:   strings.Join(append([]string{filepath.Base(cmd.Path)}, cmd.Args[1:]...), " "),
		out:    &Buffer{},
		lines:  make(chan string, 64),
		exited: make(chan struct{}),
	}
	cmd.Stderr = p.out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	go func() {
		// Read stdout to its end before Wait, as os/exec requires.
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintf(p.out, "stdout: %s\n", sc.Text())
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop %s: %v", p.name, err)
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", p.name, p.out.String())
		}
	})
	return p
}

// WaitLine returns the first line of stdout, after those returned before,
// that starts with prefix. It fails the test if the process exits first or
// prints no such line within StartTimeout.
func (p *Process) WaitLine(t testing.TB, prefix string) string {
	t.Helper()
	timeout := time.NewTimer(StartTimeout)
	defer timeout.Stop()
	for {
		select {
		case line := <-p.lines:
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-p.exited:
			// Lines printed just before the exit may still be queued.
			if line, ok := p.queuedLine(prefix); ok {
				return line
			}
			p.stopped = true
			t.Fatalf("%s exited before it printed %q: %v", p.name, prefix, p.err)
		case <-timeout.C:
			t.Fatalf("%s did not print %q within %s", p.name, prefix, StartTimeout)
		}
	}
}

// queuedLine returns the first line already queued that starts with
// prefix, without waiting for more.
func (p *Process) queuedLine(prefix string) (string, bool) {
	for {
		select {
		case line := <-p.lines:
			if strings.HasPrefix(line, prefix) {
				return line, true
			}
		default:
			return "", false
		}
	}
}

// Stop sends SIGTERM and waits for the process to exit; it kills the
// process if it takes longer than StopTimeout. Only a clean exit with
// status 0 is success; an exit before Stop is an error. Stopping a process
// again does nothing.
func (p *Process) Stop() error {
	if p.stopped {
		return nil
	}
	p.stopped = true
	select {
	case <-p.exited:
		return fmt.Errorf("exited while the test still used it: %v", p.err)
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("send SIGTERM: %w", err)
	}
	timeout := time.NewTimer(StopTimeout)
	defer timeout.Stop()
	select {
	case <-p.exited:
		if p.err != nil {
			return fmt.Errorf("exit after SIGTERM: %v, want exit status 0", p.err)
		}
		return nil
	case <-timeout.C:
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("still running %s after SIGTERM; killed", StopTimeout)
	}
}

// Kill ends the process with SIGKILL, as a crash would, and waits for it
// to exit; the test's end then expects nothing more of it.
func (p *Process) Kill() {
	if p.stopped {
		return
	}
	p.stopped = true
	p.cmd.Process.Kill()
	<-p.exited
}

// Running is whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// PID returns the process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Output returns what the process has written so far: stderr, and stdout
// lines behind "stdout: ".
func (p *Process) Output() string { return p.out.String() }

// Buffer is a bytes.Buffer safe for concurrent writes and reads: a child
// process's output, or a server's log, that the test reads while it is
// written.
type Buffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
