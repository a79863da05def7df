package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// SchedulerConfig configures the scheduler benchmark.
type SchedulerConfig struct {
	// Client is an identity that may create nodes, namespaces and pods
	// (the admin).
	Client kubernetes.Interface
	// Nodes and Pods are how many of each to create.
	Nodes, Pods int
	// Concurrency is how many creates are in flight.
	Concurrency int
	// Timeout bounds the wait for every pod to be bound.
	Timeout time.Duration
	// Progress, if set, is told what the run is doing.
	Progress io.Writer
}

// SchedulerResult is what the scheduler benchmark measured.
type SchedulerResult struct {
	Nodes, Pods int
	// Elapsed is from the first pod's create to the last one's binding.
	Elapsed time.Duration
	// PerSecond is pods bound per second over Elapsed.
	PerSecond float64
	// P50 and P99 are of each pod's time from its create request to its
	// binding seen through a watch.
	P50, P99 time.Duration
	// CreatesPerSecond is the rate at which the API server took the
	// pods, the baseline that scheduling cannot beat in this run.
	CreatesPerSecond float64
}

// String is the result's last line.
func (r SchedulerResult) String() string {
	return fmt.Sprintf("scheduled %d pods on %d nodes in %.1f s: %.0f pods/s, p50 %d ms, p99 %d ms",
		r.Pods, r.Nodes, r.Elapsed.Seconds(), r.PerSecond, r.P50.Milliseconds(), r.P99.Milliseconds())
}

// benchTaint keeps every other pod off the simulated nodes, which run
// nothing.
const benchTaint = "trustplane.io/bench"

// Scheduler measures the scheduler of a running cluster: it creates
// c.Nodes simulated nodes (Node objects with capacity and a Ready
// condition, no kubelet behind them), then c.Pods pods that fit only on
// them as fast as the API server takes them, and waits until every pod is
// bound. It deletes its nodes and its namespace, pods and all, at the end.
func Scheduler(ctx context.Context, c SchedulerConfig) (res SchedulerResult, err error) {
	if c.Client == nil || c.Nodes <= 0 || c.Pods <= 0 || c.Concurrency <= 0 {
		return res, errors.New("bench scheduler: a client, and positive nodes, pods and concurrency")
	}
	c.Timeout = cmp.Or(c.Timeout, 10*time.Minute)
	progress := c.Progress
	if progress == nil {
		progress = io.Discard
	}
	suffix, err := randomSuffix()
	if err != nil {
		return res, err
	}
	name := "bench-sched-" + suffix
	r := &run{Config: Config{Client: c.Client, Namespace: name, Timeout: DefaultTimeout}}
	owned, err := r.createNamespace(ctx)
	defer func() {
		cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if owned {
			err = errors.Join(err, r.deleteNamespace(cleanupCtx))
		}
		err = errors.Join(err, c.Client.CoreV1().Nodes().DeleteCollection(cleanupCtx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: benchTaint + "=" + suffix}))
	}()
	if err != nil {
		return res, err
	}

	fmt.Fprintf(progress, "creating %d simulated nodes (Node objects with capacity and a Ready condition, no kubelet)\n", c.Nodes)
	if _, _, err := runOps(ctx, c.Nodes, c.Concurrency, DefaultTimeout, func(ctx context.Context, i int) error {
		return createSimulatedNode(ctx, c.Client, fmt.Sprintf("%s-%04d", name, i), suffix)
	}); err != nil {
		return res, fmt.Errorf("create nodes: %w", err)
	}
	if err := waitForServiceAccount(ctx, c.Client, name); err != nil {
		return res, err
	}

	// Bindings are seen through a watch opened before the first create.
	w, err := c.Client.CoreV1().Pods(name).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return res, fmt.Errorf("watch pods: %w", err)
	}
	defer w.Stop()
	var (
		mu      sync.Mutex
		created = make([]time.Time, c.Pods) // guarded by mu, as bound
		bound   = map[string]time.Time{}
	)
	watched := make(chan error, 1)
	go func() {
		deadline := time.After(c.Timeout)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					watched <- errors.New("the watch of pods ended")
					return
				}
				if ev.Type == watch.Error {
					watched <- fmt.Errorf("watch of pods: %v", apierrors.FromObject(ev.Object))
					return
				}
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || p.Spec.NodeName == "" {
					continue
				}
				mu.Lock()
				if _, seen := bound[p.Name]; !seen {
					bound[p.Name] = time.Now()
				}
				n := len(bound)
				mu.Unlock()
				if n == c.Pods {
					watched <- nil
					return
				}
			case <-deadline:
				mu.Lock()
				n := len(bound)
				mu.Unlock()
				watched <- fmt.Errorf("%d of %d pods bound within %s", n, c.Pods, c.Timeout)
				return
			case <-ctx.Done():
				watched <- ctx.Err()
				return
			}
		}
	}()

	fmt.Fprintf(progress, "creating %d pods at concurrency %d\n", c.Pods, c.Concurrency)
	start := time.Now()
	_, createElapsed, err := runOps(ctx, c.Pods, c.Concurrency, DefaultTimeout, func(ctx context.Context, i int) error {
		mu.Lock()
		created[i] = time.Now()
		mu.Unlock()
		_, err := c.Client.CoreV1().Pods(name).Create(ctx, benchPod(i, suffix), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return res, fmt.Errorf("create pods: %w", err)
	}
	fmt.Fprintf(progress, "created %d pods in %.1f s; waiting for their bindings\n", c.Pods, createElapsed.Seconds())
	if err := <-watched; err != nil {
		return res, err
	}
	mu.Lock()
	defer mu.Unlock()
	var last time.Time
	latencies := make([]time.Duration, 0, c.Pods)
	for i, t := range created {
		b := bound[podName(i)]
		latencies = append(latencies, b.Sub(t))
		if b.After(last) {
			last = b
		}
	}
	slices.Sort(latencies)
	res = SchedulerResult{
		Nodes: c.Nodes, Pods: c.Pods,
		Elapsed:          last.Sub(start),
		P50:              percentile(latencies, 50),
		P99:              percentile(latencies, 99),
		CreatesPerSecond: float64(c.Pods) / createElapsed.Seconds(),
	}
	res.PerSecond = float64(c.Pods) / res.Elapsed.Seconds()
	return res, nil
}

func podName(i int) string { return fmt.Sprintf("pod-%05d", i) }

// benchPod asks for a little CPU and memory, as a small web server would,
// so that the resource filters and scores have work to do; it goes only
// on the run's nodes.
func benchPod(i int, suffix string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(i), Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{benchTaint: suffix},
			Tolerations: append([]corev1.Toleration{{Key: benchTaint, Operator: corev1.TolerationOpEqual, Value: suffix, Effect: corev1.TaintEffectNoSchedule}},
				heartbeatTolerations()...),
			AutomountServiceAccountToken: new(false),
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.example/bench:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("100m"),
					corev1.ResourceMemory: resource.MustParse("128Mi"),
				}},
			}},
		},
	}
}

// heartbeatTolerations let the run's pods on its nodes, which post no
// heartbeats: a node lifecycle controller taints such a node unreachable
// once its grace period (40 s) has passed, which a long run outlasts.
// Placing pods on the nodes is what is measured, not their health.
func heartbeatTolerations() []corev1.Toleration {
	var out []corev1.Toleration
	for _, key := range []string{corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady} {
		for _, effect := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
			out = append(out, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect})
		}
	}
	return out
}

// createSimulatedNode creates a node of 32 CPUs, 256 GiB and 110 pods,
// Ready, as a node agent would report it, tainted for the run's pods only.
func createSimulatedNode(ctx context.Context, client kubernetes.Interface, name, suffix string) error {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{benchTaint: suffix, corev1.LabelHostname: name}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: benchTaint, Value: suffix, Effect: corev1.TaintEffectNoSchedule}}},
	}
	n, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	now := metav1.Now()
	n.Status = corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}},
	}
	_, err = client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

// waitForServiceAccount waits for the namespace's default ServiceAccount,
// which the controller manager creates and without which no pod is
// admitted.
func waitForServiceAccount(ctx context.Context, client kubernetes.Interface, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	for {
		_, err := client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no default ServiceAccount in %s (is the controller manager running?): %v", namespace, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
