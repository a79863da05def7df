package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// The node lifecycle flags default to kube's; one set to 0, which the
// controller would read as its default, is refused, each named.
func TestNodeLifecycleFlags(t *testing.T) {
	parse := func(args ...string) (*nodeLifecycleFlags, *pflag.FlagSet) {
		t.Helper()
		var f nodeLifecycleFlags
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		f.addTo(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return &f, fs
	}
	f, fs := parse()
	checkValidation(t, f.validate(fs), nil)
	if c := f.config; c.NodeMonitorGracePeriod != 40*time.Second || c.NodeMonitorPeriod != 5*time.Second || c.NodeEvictionRate != 0.1 || c.UnhealthyZoneThreshold != 0.55 {
		t.Errorf("defaults %+v, want kube's", c)
	}
	f, fs = parse("--node-monitor-grace-period=3s", "--node-eviction-rate=0.5")
	if err := f.validate(fs); err != nil || f.config.NodeMonitorGracePeriod != 3*time.Second || f.config.NodeEvictionRate != 0.5 {
		t.Errorf("set: %+v, %v", f.config, err)
	}
	f, fs = parse("--node-eviction-rate=0", "--node-monitor-grace-period=0s")
	checkValidation(t, f.validate(fs), []string{"--node-eviction-rate 0", "--node-monitor-grace-period 0", "-taint-eviction-controller"})
}
