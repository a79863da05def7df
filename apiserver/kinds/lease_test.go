package kinds

import (
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
)

func TestValidateLease(t *testing.T) {
	int32p := func(v int32) *int32 { return &v }
	str := func(s string) *string { return &s }
	strategy := func(s string) *coordinationv1.CoordinatedLeaseStrategy {
		v := coordinationv1.CoordinatedLeaseStrategy(s)
		return &v
	}
	for _, tc := range []struct {
		name string
		spec coordinationv1.LeaseSpec
		want []string
	}{
		{"empty", coordinationv1.LeaseSpec{}, nil},
		{"held", coordinationv1.LeaseSpec{HolderIdentity: str("node-1"), LeaseDurationSeconds: int32p(40), LeaseTransitions: int32p(0)}, nil},
		{"long holder identity", coordinationv1.LeaseSpec{HolderIdentity: str(strings.Repeat("h", 1000))}, nil},
		{"coordinated", coordinationv1.LeaseSpec{Strategy: strategy("OldestEmulationVersion"), PreferredHolder: str("apiserver-1")}, nil},
		{"third-party strategy", coordinationv1.LeaseSpec{Strategy: strategy("example.com/newest")}, nil},
		{"zero duration", coordinationv1.LeaseSpec{LeaseDurationSeconds: int32p(0)},
			[]string{e("spec.leaseDurationSeconds", invalid)}},
		{"negative transitions", coordinationv1.LeaseSpec{LeaseTransitions: int32p(-1)},
			[]string{e("spec.leaseTransitions", invalid)}},
		{"unknown strategy", coordinationv1.LeaseSpec{Strategy: strategy("Newest")},
			[]string{e("spec.strategy.strategy", notSupported)}},
		{"malformed third-party strategy", coordinationv1.LeaseSpec{Strategy: strategy("example.com/new est")},
			[]string{e("spec.strategy.strategy", invalid)}},
		{"preferred holder without strategy", coordinationv1.LeaseSpec{PreferredHolder: str("apiserver-1")},
			[]string{e("spec.preferredHolder", forbidden)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &coordinationv1.Lease{Spec: tc.spec}
			l.Name, l.Namespace = "node-1", "kube-node-lease"
			checkErrs(t, ValidateLease(l, nil), tc.want...)
			checkErrs(t, ValidateLease(l, l.DeepCopy()), tc.want...)
		})
	}
}
