package bench

import (
	"os"
	"strings"
	"testing"
)

// kernelStatus is the part of a /proc/<pid>/status around the lines read,
// as Linux 6 writes it.
const kernelStatus = `Name:	trustplane
Umask:	0022
State:	S (sleeping)
Tgid:	3055
VmPeak:	 2661904 kB
VmSize:	 2661904 kB
VmLck:	       0 kB
VmPin:	       0 kB
VmHWM:	  581400 kB
VmRSS:	  568832 kB
RssAnon:	  519376 kB
RssFile:	   49456 kB
RssShmem:	       0 kB
Threads:	12
`

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  string
		want    Memory
		wantErr string
	}{
		{"kernel", kernelStatus, Memory{RSS: 568832 << 10, Peak: 581400 << 10}, ""},
		{"order does not matter", "VmRSS: 1 kB\nVmHWM: 2 kB\n", Memory{RSS: 1 << 10, Peak: 2 << 10}, ""},
		{"zero", "VmHWM:\t0 kB\nVmRSS:\t0 kB\n", Memory{}, ""},
		{"kernel thread", "Name:\tkthreadd\nState:\tS (sleeping)\n", Memory{}, "no VmRSS and VmHWM"},
		{"no peak", "VmRSS:\t1 kB\n", Memory{}, "no VmRSS and VmHWM"},
		{"other unit", "VmHWM:\t2 MB\nVmRSS:\t1 kB\n", Memory{}, `VmHWM: "2 MB" is not a size in kB`},
		{"not a number", "VmHWM:\t2 kB\nVmRSS:\tlots kB\n", Memory{}, `VmRSS: "lots kB" is not a size in kB`},
		{"negative", "VmHWM:\t-2 kB\nVmRSS:\t1 kB\n", Memory{}, `VmHWM: "-2 kB" is not a size in kB`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatus(strings.NewReader(tc.status))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("parseStatus() = %+v, %v, want an error saying %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("parseStatus() = %+v, %v, want %+v", got, err, tc.want)
			}
		})
	}
}

func TestProcessMemory(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	m, err := ProcessMemory(os.Getpid())(t.Context())
	if err != nil {
		t.Fatalf("memory of the test process: %v", err)
	}
	if m.RSS <= 0 || m.Peak < m.RSS {
		t.Errorf("memory of the test process = %+v, want 0 < RSS <= peak", m)
	}

	// A PID that no process can have: above the kernel's maximum.
	if m, err := ProcessMemory(1 << 30)(t.Context()); err == nil || !strings.Contains(err.Error(), "memory of process 1073741824") {
		t.Errorf("memory of no process = %+v, %v, want an error naming the PID", m, err)
	}
}
