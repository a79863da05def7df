package bench

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is the unit of the CPU times in /proc/<pid>/stat, USER_HZ,
// which is 100 on every Linux architecture Go supports.
const clockTicks = 100

// ProcessCPU returns a reader of the CPU time (user and system) that
// process pid has used since it started, from /proc/<pid>/stat, for
// Config.ServerCPU.
func ProcessCPU(pid int) func() (time.Duration, error) {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	return func() (time.Duration, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("read CPU time of the API server: %w", err)
		}
		d, err := parseStat(string(b))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		return d, nil
	}
}

// parseStat returns utime + stime from the text of /proc/<pid>/stat. The
// command name, the second field, is in parentheses and may hold spaces:
// the fields are counted from the last ")".
func parseStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("no command name in stat")
	}
	// After ")": state is field 3, utime field 14 and stime field 15.
	fields := strings.Fields(s[i+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("stat has %d fields after the command name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("CPU time %q is not a count of ticks", f)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// selfCPU is the CPU time (user and system) this process has used.
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// cpuMeter measures the CPU time this process and, when server is not
// nil, the API server use over a phase.
type cpuMeter struct {
	server               func() (time.Duration, error)
	selfStart, servStart time.Duration
}

func startCPU(server func() (time.Duration, error)) (*cpuMeter, error) {
	m := &cpuMeter{server: server}
	var err error
	if m.selfStart, err = selfCPU(); err != nil {
		return nil, err
	}
	if server != nil {
		if m.servStart, err = server(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// perOp returns the CPU time per operation of this process and of the
// server since start; the server's is zero when it is not measured.
func (m *cpuMeter) perOp(ops int) (client, server time.Duration, err error) {
	if ops <= 0 {
		return 0, 0, nil
	}
	self, err := selfCPU()
	if err != nil {
		return 0, 0, err
	}
	client = (self - m.selfStart) / time.Duration(ops)
	if m.server != nil {
		s, err := m.server()
		if err != nil {
			return 0, 0, err
		}
		server = (s - m.servStart) / time.Duration(ops)
	}
	return client, server, nil
}
