package apiserver

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func TestPodLifecycle(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	pods := cs.CoreV1().Pods("default")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Status.Phase != corev1.PodPending || created.Spec.RestartPolicy != corev1.RestartPolicyAlways || created.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways || created.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("created pod: phase %q restartPolicy %q pullPolicy %q qos %q; want kube's defaults", created.Status.Phase, created.Spec.RestartPolicy, created.Spec.Containers[0].ImagePullPolicy, created.Status.QOSClass)
	}
	// DefaultTolerationSeconds: five minutes on a node not ready or
	// unreachable.
	if tol := created.Spec.Tolerations; len(tol) != 2 || tol[0].Key != corev1.TaintNodeNotReady || tol[1].Key != corev1.TaintNodeUnreachable ||
		tol[0].TolerationSeconds == nil || *tol[0].TolerationSeconds != 300 || tol[1].TolerationSeconds == nil || *tol[1].TolerationSeconds != 300 {
		t.Errorf("created pod's tolerations: %+v, want not-ready and unreachable for 300s", tol)
	}
	created.Spec.Containers[0].Command = []string{"sh"}
	if _, err := pods.Update(ctx, created, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing a pod's command: %v, want Invalid", err)
	}

	bind := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if err := pods.Bind(ctx, bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || bound.Spec.NodeName != "n1" {
		t.Fatalf("after binding: %v %v, want node n1", bound, err)
	}
	bind.Target.Name = "n2"
	if err := pods.Bind(ctx, bind, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("binding a bound pod: %v, want Conflict", err)
	}
	list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1,status.phase!=Succeeded"})
	if err != nil || len(list.Items) != 1 {
		t.Errorf("pods on n1: %v %v", list, err)
	}

	// A bound pod waits for its node agent; an unbound one goes at once.
	if err := pods.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	terminating, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || terminating.DeletionTimestamp == nil || *terminating.DeletionGracePeriodSeconds != 30 {
		t.Errorf("bound pod after delete: %v %v, want terminating with 30s grace", terminating, err)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	// A delete with no grace period finishes the terminating pod.
	if _, err := pods.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("terminating pod after a delete with grace 0: %v, want NotFound", err)
	}
	if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "loose"}, Spec: pod.Spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "loose", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "loose", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("unbound pod after delete: %v, want NotFound", err)
	}
}

func TestDeploymentScaleAndStatus(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	deps := cs.AppsV1().Deployments("default")
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}},
		},
	}
	created, err := deps.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *created.Spec.Replicas != 1 || created.Generation != 1 || created.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Errorf("created deployment: replicas %d generation %d strategy %q; want 1, 1, RollingUpdate", *created.Spec.Replicas, created.Generation, created.Spec.Strategy.Type)
	}
	scale, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 1 || scale.Status.Selector != "app=web" {
		t.Fatalf("scale: %+v %v", scale, err)
	}
	scale.Spec.Replicas = 3
	if scale, err = deps.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil || scale.Spec.Replicas != 3 {
		t.Fatalf("update scale: %+v %v", scale, err)
	}
	stale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", ResourceVersion: created.ResourceVersion}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
	if _, err := deps.UpdateScale(ctx, "web", stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("scale with a stale resourceVersion: %v, want Conflict", err)
	}
	got, err := deps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || *got.Spec.Replicas != 3 || got.Generation != 2 {
		t.Fatalf("after scaling: %v %v, want 3 replicas at generation 2", got, err)
	}
	got.Status.Replicas = 3
	got.Status.ObservedGeneration = 2
	st, err := deps.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil || st.Status.Replicas != 3 || st.Generation != 2 {
		t.Errorf("status update: %v %v", st, err)
	}
	got = st.DeepCopy()
	got.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	if _, err := deps.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing the selector: %v, want Invalid", err)
	}
}

// Two candidates, one leader; the other takes over when it stops.
func TestLeaderElection(t *testing.T) {
	const leaseDuration = 2 * time.Second
	ts := startServer(t)
	var mu sync.Mutex
	var leaders []string
	run := func(ctx context.Context, id string) {
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: "lock", Namespace: "kube-system"},
			Client:     ts.clientset(t, admin).CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		}
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: leaseDuration, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
			ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) {
					mu.Lock()
					leaders = append(leaders, id)
					mu.Unlock()
				},
				OnStoppedLeading: func() {},
			},
		})
	}
	ctxA, stopA := context.WithCancel(context.Background())
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopA()
	defer stopB()
	doneA := make(chan struct{})
	go func() { run(ctxA, "a"); close(doneA) }()
	waitFor := func(n int) []string {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			got := append([]string(nil), leaders...)
			mu.Unlock()
			if len(got) >= n {
				return got
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("fewer than %d leaders in time", n)
		return nil
	}
	waitFor(1)
	bStarted := time.Now()
	go run(ctxB, "b")
	// b must not lead while a renews: wait until a has renewed the lease
	// more than a lease's duration after b began to try, so that a lease
	// a failed to renew would have passed to b by then.
	leases := ts.clientset(t, admin).CoordinationV1().Leases("kube-system")
	lease, err := leases.Get(context.Background(), "lock", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the lease: %v", err)
	}
	w, err := leases.Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=lock", ResourceVersion: lease.ResourceVersion})
	if err != nil {
		t.Fatalf("watch the lease: %v", err)
	}
	defer w.Stop()
	timeout := time.After(20 * time.Second)
	for {
		holder := "no one"
		if h := lease.Spec.HolderIdentity; h != nil {
			holder = *h
		}
		if holder != "a" {
			t.Fatalf("lease held by %s while a renews, want a", holder)
		}
		if r := lease.Spec.RenewTime; r != nil && r.After(bStarted.Add(leaseDuration)) {
			break
		}
		select {
		case ev, ok := <-w.ResultChan():
			if l, isLease := ev.Object.(*coordinationv1.Lease); ok && isLease {
				lease = l
				continue
			}
			t.Fatalf("lease watch ended or failed: %v", ev.Object)
		case <-timeout:
			t.Fatalf("a has not renewed the lease since %v", lease.Spec.RenewTime)
		}
	}
	mu.Lock()
	if len(leaders) != 1 {
		t.Errorf("leaders %v while a leads, want only a", leaders)
	}
	mu.Unlock()
	stopA()
	<-doneA
	if got := waitFor(2); got[0] != "a" || got[1] != "b" {
		t.Errorf("leaders %v, want a then b", got)
	}
}
