package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/trustplane/trustplane/scheduler"
)

// A KubeSchedulerConfiguration's settings apply unless a flag given on
// the command line says otherwise, as kube-scheduler's.
func TestSchedulerApplyConfig(t *testing.T) {
	c, err := scheduler.ParseConfig([]byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: /from/file.conf
  qps: 100
  burst: 200
leaderElection:
  leaderElect: false
  leaseDuration: 30s
`))
	if err != nil {
		t.Fatal(err)
	}
	f := newSchedulerFlags()
	fs := pflag.NewFlagSet("scheduler", pflag.ContinueOnError)
	f.addTo(fs)
	if err := fs.Parse([]string{"--kube-api-qps", "5", "--leader-elect=true"}); err != nil {
		t.Fatal(err)
	}
	f.applyConfig(c, fs)
	if f.kubeconfig != "/from/file.conf" || f.qps != 5 || f.burst != 200 || !f.leaderElect || f.leaseDuration != 30*time.Second || f.profile == nil {
		t.Errorf("kubeconfig %q, qps %g, burst %d, leader-elect %t, lease %s, profile %v; want the file's but for qps 5 and leader-elect true",
			f.kubeconfig, f.qps, f.burst, f.leaderElect, f.leaseDuration, f.profile)
	}
}
