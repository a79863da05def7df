package main

import (
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
)

// minMemoryLimit is the smallest --memory-limit taken: below it the
// runtime would spend its time collecting garbage, and a limit that small
// is more likely a missing unit ("512" bytes for "512Mi") than meant.
const minMemoryLimit = 64 << 20

// memoryLimitFlag is --memory-limit: a soft limit on the memory of the Go
// runtime (runtime/debug.SetMemoryLimit). Near it the garbage collector
// runs more often, instead of letting the heap grow to twice what is live;
// it is not a cap: a process whose live data exceeds it goes on, and
// spends up to half its CPU on collections. It covers the runtime's
// memory, not the pages of the binary, which RSS counts too.
type memoryLimitFlag struct {
	value string
}

func (f *memoryLimitFlag) addTo(fs *pflag.FlagSet) {
	fs.StringVar(&f.value, "memory-limit", "", "soft limit of the Go runtime's memory, a quantity such as 400Mi; the garbage collector works harder near it (default none, or $GOMEMLIMIT)")
}

// bytes is the limit asked for, or 0 when none is.
func (f *memoryLimitFlag) bytes() (int64, error) {
	if f.value == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(f.value)
	if err != nil {
		return 0, fmt.Errorf("--memory-limit %q: %w", f.value, err)
	}
	n, ok := q.AsInt64()
	if !ok || n < minMemoryLimit {
		return 0, fmt.Errorf("--memory-limit %q must be at least 64Mi", f.value)
	}
	return n, nil
}

func (f *memoryLimitFlag) validate() error {
	_, err := f.bytes()
	return err
}

// apply sets the limit, if one was asked for. Without one the runtime
// keeps its own, from $GOMEMLIMIT or none.
func (f *memoryLimitFlag) apply(logger *slog.Logger) error {
	n, err := f.bytes()
	if err != nil || n == 0 {
		return err
	}
	debug.SetMemoryLimit(n)
	logger.Info("memory limit set", "bytes", n)
	return nil
}
