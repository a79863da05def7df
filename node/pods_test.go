package node

import (
	"log/slog"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func testWorker(t *testing.T, cidr string) *podWorker {
	t.Helper()
	_, r, err := net.ParseCIDR(cidr)
	if err != nil {
		t.Fatal(err)
	}
	ips, err := newPodIPs(r)
	if err != nil {
		t.Fatal(err)
	}
	c := &Config{Name: "n1", Address: net.ParseIP("192.0.2.10"), PodCIDR: r, Logger: slog.New(slog.DiscardHandler)}
	return &podWorker{a: &agent{c: c, clock: clocktesting.NewFakeClock(time.Now())}, ips: ips}
}

// The status the node reports for a pod: running, finished after its
// run, failed past its deadline or with a run it cannot read.
func TestDesiredStatus(t *testing.T) {
	start := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	pod := func(restart corev1.RestartPolicy, runFor string, deadline *int64, started bool) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1", Annotations: map[string]string{}},
			Spec: corev1.PodSpec{NodeName: "n1", RestartPolicy: restart, ActiveDeadlineSeconds: deadline,
				InitContainers: []corev1.Container{{Name: "init", Image: "i"}},
				Containers:     []corev1.Container{{Name: "a", Image: "a:1"}, {Name: "b", Image: "b:1"}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
		}
		if runFor != "" {
			p.Annotations[RunForAnnotation] = runFor
		}
		if started {
			p.Status.StartTime = ptr.To(metav1.NewTime(start))
		}
		return p
	}
	for _, tt := range []struct {
		name   string
		pod    *corev1.Pod
		now    time.Time
		phase  corev1.PodPhase
		reason string
		after  time.Duration
	}{
		{"a new pod runs", pod(corev1.RestartPolicyAlways, "", nil, false), start, corev1.PodRunning, "", 0},
		{"run-for is ignored when it restarts", pod(corev1.RestartPolicyAlways, "1s", nil, true), start.Add(time.Hour), corev1.PodRunning, "", 0},
		{"runs until its run ends", pod(corev1.RestartPolicyNever, "30s", nil, true), start.Add(10 * time.Second), corev1.PodRunning, "", 20 * time.Second},
		{"succeeds when its run ends", pod(corev1.RestartPolicyOnFailure, "30s", nil, true), start.Add(30 * time.Second), corev1.PodSucceeded, "", 0},
		{"fails with a run it cannot read", pod(corev1.RestartPolicyNever, "soon", nil, true), start, corev1.PodFailed, "InvalidRunFor", 0},
		{"fails with a negative run", pod(corev1.RestartPolicyNever, "-1s", nil, true), start, corev1.PodFailed, "InvalidRunFor", 0},
		{"runs until its deadline", pod(corev1.RestartPolicyAlways, "", ptr.To[int64](60), true), start.Add(15 * time.Second), corev1.PodRunning, "", 45 * time.Second},
		{"the sooner of deadline and run", pod(corev1.RestartPolicyNever, "2m", ptr.To[int64](60), true), start, corev1.PodRunning, "", 60 * time.Second},
		{"fails past its deadline", pod(corev1.RestartPolicyNever, "2m", ptr.To[int64](60), true), start.Add(time.Minute), corev1.PodFailed, "DeadlineExceeded", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := testWorker(t, "10.244.0.0/24")
			s, after := w.desired(tt.pod, tt.now)
			if s.Phase != tt.phase || s.Reason != tt.reason || after != tt.after {
				t.Fatalf("phase %s reason %q after %s, want %s %q %s", s.Phase, s.Reason, after, tt.phase, tt.reason, tt.after)
			}
			if s.HostIP != "192.0.2.10" || s.PodIP != "10.244.0.1" || s.StartTime == nil {
				t.Errorf("host %s pod %s start %v", s.HostIP, s.PodIP, s.StartTime)
			}
			if len(s.ContainerStatuses) != 2 || s.ContainerStatuses[1].Image != "b:1" {
				t.Fatalf("container statuses %+v", s.ContainerStatuses)
			}
			ready := condition(s, corev1.PodReady)
			switch tt.phase {
			case corev1.PodRunning:
				if ready != corev1.ConditionTrue || s.ContainerStatuses[0].State.Running == nil || len(s.InitContainerStatuses) != 1 || s.InitContainerStatuses[0].State.Terminated == nil {
					t.Errorf("running pod: ready %s statuses %+v %+v", ready, s.ContainerStatuses, s.InitContainerStatuses)
				}
			default:
				term := s.ContainerStatuses[0].State.Terminated
				if ready != corev1.ConditionFalse || term == nil || (term.ExitCode == 0) != (tt.phase == corev1.PodSucceeded) {
					t.Errorf("finished pod: ready %s terminated %+v", ready, term)
				}
			}
			if condition(s, corev1.PodScheduled) != corev1.ConditionTrue {
				t.Errorf("the scheduler's condition was lost: %+v", s.Conditions)
			}
			// A second look changes nothing: no write for a pod at rest.
			again := tt.pod.DeepCopy()
			again.Status = *s
			if s2, _ := w.desired(again, tt.now); tt.phase == corev1.PodRunning && !equalStatus(s, s2) {
				t.Errorf("status changed on a second look:\n%+v\n%+v", s, s2)
			}
		})
	}
}

func condition(s *corev1.PodStatus, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func equalStatus(a, b *corev1.PodStatus) bool {
	return a.Phase == b.Phase && a.PodIP == b.PodIP && len(a.Conditions) == len(b.Conditions) &&
		a.ContainerStatuses[0].State.Running.StartedAt.Equal(&b.ContainerStatuses[0].State.Running.StartedAt)
}

// Pod addresses: one per pod, never the range's first or last, reused
// once released, none when the range is full.
func TestPodIPs(t *testing.T) {
	_, r, _ := net.ParseCIDR("10.0.0.0/29")
	p, err := newPodIPs(r)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]types.UID{}
	for i := range 6 {
		uid := types.UID(rune('a' + i))
		ip := p.assign(uid)
		if ip == nil {
			t.Fatalf("pod %d: no address in a /29", i)
		}
		if ip.String() == "10.0.0.0" || ip.String() == "10.0.0.7" || seen[ip.String()] != "" {
			t.Fatalf("pod %d got %s (seen %v)", i, ip, seen)
		}
		seen[ip.String()] = uid
		if again := p.assign(uid); !again.Equal(ip) {
			t.Errorf("pod %s: %s then %s", uid, ip, again)
		}
	}
	if ip := p.assign("full"); ip != nil {
		t.Errorf("a full range gave %s", ip)
	}
	p.release("c")
	if ip := p.assign("next"); ip == nil || seen[ip.String()] != "c" {
		t.Errorf("after a release: %v, want c's address back", ip)
	}
	if _, err := newPodIPs(&net.IPNet{IP: net.ParseIP("10.0.0.0").To4(), Mask: net.CIDRMask(31, 32)}); err == nil {
		t.Error("a /31 was taken as a pod range")
	}
}
