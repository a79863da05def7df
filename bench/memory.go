package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Memory is the resident memory of a process, as the kernel counts it.
type Memory struct {
	// RSS is the resident set size now (VmRSS).
	RSS int64
	// Peak is the highest RSS since the process started (VmHWM).
	Peak int64
}

// ProcessMemory returns a reader of the memory of the local process pid,
// from /proc/<pid>/status. The API server is measured from outside, as the
// kernel sees it: the Go runtime's own figures miss what it has not
// returned to the kernel, and what is not Go heap.
func ProcessMemory(pid int) func(context.Context) (Memory, error) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	return func(context.Context) (Memory, error) {
		f, err := os.Open(path)
		if err != nil {
			return Memory{}, fmt.Errorf("memory of process %d: %w", pid, err)
		}
		defer f.Close()
		m, err := parseStatus(f)
		if err != nil {
			return Memory{}, fmt.Errorf("memory of process %d: %s: %w", pid, path, err)
		}
		return m, nil
	}
}

// parseStatus reads VmRSS and VmHWM from the text of /proc/<pid>/status,
// lines such as "VmRSS:\t  123456 kB". Both must be there: a kernel thread
// or a zombie has neither, and is not a server to measure.
func parseStatus(r io.Reader) (Memory, error) {
	var m Memory
	var haveRSS, havePeak bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		n, err := parseKiB(value)
		if err != nil {
			return Memory{}, fmt.Errorf("%s: %w", name, err)
		}
		if name == "VmRSS" {
			m.RSS, haveRSS = n, true
		} else {
			m.Peak, havePeak = n, true
		}
	}
	if err := sc.Err(); err != nil {
		return Memory{}, err
	}
	if !haveRSS || !havePeak {
		return Memory{}, errors.New("no VmRSS and VmHWM lines")
	}
	return m, nil
}

// parseKiB parses "  123456 kB" into bytes.
func parseKiB(s string) (int64, error) {
	f := strings.Fields(s)
	if len(f) != 2 || f[1] != "kB" {
		return 0, fmt.Errorf("%q is not a size in kB", strings.TrimSpace(s))
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size in kB", strings.TrimSpace(s))
	}
	return n << 10, nil
}
