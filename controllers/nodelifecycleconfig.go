package controllers

import (
	"errors"
	"fmt"
	"time"
)

// NodeLifecycleConfig is kube-controller-manager's configuration of its
// node lifecycle controller, flag by flag; a zero field is kube's
// default.
type NodeLifecycleConfig struct {
	// NodeMonitorPeriod is how often every node's health is checked
	// (--node-monitor-period, 5s).
	NodeMonitorPeriod time.Duration
	// NodeMonitorGracePeriod is how long a node may go without a
	// heartbeat, its Lease renewed or its Ready condition posted,
	// before its conditions are Unknown and it is tainted unreachable
	// (--node-monitor-grace-period, 40s).
	NodeMonitorGracePeriod time.Duration
	// NodeStartupGracePeriod is that grace for a node that never posted
	// its Ready condition (--node-startup-grace-period, 1m).
	NodeStartupGracePeriod time.Duration
	// NodeEvictionRate is how many nodes a second are given a NoExecute
	// taint in a zone that is healthy, or wholly down while another is
	// not (--node-eviction-rate, 0.1).
	NodeEvictionRate float32
	// SecondaryNodeEvictionRate is that rate in a zone where at least
	// UnhealthyZoneThreshold of the nodes (and more than two) are not
	// Ready, when it has more than LargeClusterSizeThreshold nodes; a
	// smaller such zone gets none (--secondary-node-eviction-rate,
	// 0.01; --large-cluster-size-threshold, 50;
	// --unhealthy-zone-threshold, 0.55).
	SecondaryNodeEvictionRate float32
	LargeClusterSizeThreshold int
	UnhealthyZoneThreshold    float32
}

// withDefaults is c with kube's default for every zero field.
func (c NodeLifecycleConfig) withDefaults() NodeLifecycleConfig {
	or := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	or(&c.NodeMonitorPeriod, 5*time.Second)
	or(&c.NodeMonitorGracePeriod, 40*time.Second)
	or(&c.NodeStartupGracePeriod, time.Minute)
	if c.NodeEvictionRate == 0 {
		c.NodeEvictionRate = 0.1
	}
	if c.SecondaryNodeEvictionRate == 0 {
		c.SecondaryNodeEvictionRate = 0.01
	}
	if c.LargeClusterSizeThreshold == 0 {
		c.LargeClusterSizeThreshold = 50
	}
	if c.UnhealthyZoneThreshold == 0 {
		c.UnhealthyZoneThreshold = 0.55
	}
	return c
}

// validate reports every problem at once.
func (c NodeLifecycleConfig) validate() error {
	var errs []error
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--node-monitor-period", c.NodeMonitorPeriod},
		{"--node-monitor-grace-period", c.NodeMonitorGracePeriod},
		{"--node-startup-grace-period", c.NodeStartupGracePeriod},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %s is negative", d.flag, d.v))
		}
	}
	if c.NodeEvictionRate < 0 {
		errs = append(errs, fmt.Errorf("--node-eviction-rate %g is negative", c.NodeEvictionRate))
	}
	if c.SecondaryNodeEvictionRate < 0 {
		errs = append(errs, fmt.Errorf("--secondary-node-eviction-rate %g is negative", c.SecondaryNodeEvictionRate))
	}
	if c.LargeClusterSizeThreshold < 0 {
		errs = append(errs, fmt.Errorf("--large-cluster-size-threshold %d is negative", c.LargeClusterSizeThreshold))
	}
	if c.UnhealthyZoneThreshold < 0 || c.UnhealthyZoneThreshold > 1 {
		errs = append(errs, fmt.Errorf("--unhealthy-zone-threshold %g is not between 0 and 1", c.UnhealthyZoneThreshold))
	}
	return errors.Join(errs...)
}
