package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// BenchmarkDeployment1000 measures what issue 12 asks of the controller
// manager: a Deployment of 1,000 replicas to 1,000 Running pods on 100
// nodes (trustplane node --count 100, in its own process), then a rolling
// update of it to completion. The baseline, in the same run, is the admin
// creating 1,000 pods already bound to the nodes at a concurrency of 32,
// to 1,000 Running: the API server and the nodes without the controllers
// and the scheduler. It reports both times, their ratio, the rollout's
// time, and the controller manager's CPU per pod created. The controllers'
// clients have the controller manager's defaults (controllers.DefaultQPS
// and DefaultBurst), or BENCH_CM_QPS requests per second, burst twice
// that (20 is kube-controller-manager's default).
//
//	go test ./e2e -run '^$' -bench Deployment1000 -benchtime 1x
//	BENCH_CM_QPS=20 go test ./e2e -run '^$' -bench Deployment1000 -benchtime 1x
func BenchmarkDeployment1000(b *testing.B) {
	const (
		replicas = 1000
		nodes    = 100
	)
	c := e2etest.StartCluster(b, "--controllers=false")
	args := []string{"controller-manager", "--dir", c.Dir}
	if v, err := strconv.Atoi(os.Getenv("BENCH_CM_QPS")); err == nil && v > 0 {
		args = append(args, "--kube-api-qps", strconv.Itoa(v), "--kube-api-burst", strconv.Itoa(2*v))
	}
	manager := e2etest.Start(b, exec.Command(e2etest.Binary(b), args...))
	manager.WaitLine(b, "controller manager running: ")
	c.WaitForServiceAccount(b, metav1.NamespaceDefault)
	admin, _ := clientFor(b, c.AdminConf())
	ctx := b.Context()

	tok := tokenCreate(b, c)
	agents := e2etest.Start(b, exec.Command(e2etest.Binary(b), "node", "--name", "n", "--count", strconv.Itoa(nodes), "--server", c.URL,
		"--dir", b.TempDir(), "--token", tok["token"], "--ca-cert-hash", tok["ca-cert-hash"], "--pod-cidr", "10.0.0.0/24",
		"--capacity", "cpu=64,memory=256Gi,pods=110"))
	waitWithin(b, 5*time.Minute, fmt.Sprintf("%d Ready nodes", nodes), func(ctx context.Context) error {
		l, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for i := range l.Items {
			if nodeReady(&l.Items[i]) {
				ready++
			}
		}
		if ready < nodes {
			return fmt.Errorf("%d Ready", ready)
		}
		return nil
	})

	var deployTime, rolloutTime, baselineTime, cpu time.Duration
	for i := range b.N {
		ns := fmt.Sprintf("bench-%d", i)
		createNamespace(b, c, admin, ns)
		running := countRunning(b, admin, ns)
		labels := map[string]string{"app": "web"}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptrTo[int32](replicas),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
				},
			},
		}
		before := processCPU(b, manager.PID())
		start := time.Now()
		if _, err := admin.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitWithin(b, 10*time.Minute, "1,000 Running pods", func(context.Context) error {
			if n := running.Load(); n < replicas {
				return fmt.Errorf("%d Running", n)
			}
			return nil
		})
		deployTime += time.Since(start)

		start = time.Now()
		patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.example/web:2"}]}}}}`)
		if _, err := admin.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
		waitWithin(b, 10*time.Minute, "the rolling update complete", func(ctx context.Context) error {
			d, err := admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			s := d.Status
			if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != replicas || s.Replicas != replicas || s.AvailableReplicas != replicas {
				return fmt.Errorf("%+v", s)
			}
			return nil
		})
		rolloutTime += time.Since(start)
		cpu += processCPU(b, manager.PID()) - before

		baseNS := fmt.Sprintf("baseline-%d", i)
		createNamespace(b, c, admin, baseNS)
		baseRunning := countRunning(b, admin, baseNS)
		start = time.Now()
		work := make(chan int)
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for n := range work {
					pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", n), Labels: labels}, Spec: *dep.Spec.Template.Spec.DeepCopy()}
					pod.Spec.NodeName = fmt.Sprintf("n-%d", n%nodes)
					if _, err := admin.CoreV1().Pods(baseNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for n := range replicas {
			work <- n
		}
		close(work)
		wg.Wait()
		waitWithin(b, 10*time.Minute, "1,000 bound pods Running", func(context.Context) error {
			if n := baseRunning.Load(); n < replicas {
				return fmt.Errorf("%d Running", n)
			}
			return nil
		})
		baselineTime += time.Since(start)
	}
	if err := agents.Stop(); err != nil {
		b.Errorf("node agents: %v", err)
	}
	n := float64(b.N)
	b.ReportMetric(deployTime.Seconds()/n, "s/deploy-1000-running")
	b.ReportMetric(rolloutTime.Seconds()/n, "s/rollout-1000")
	b.ReportMetric(baselineTime.Seconds()/n, "s/baseline-1000-running")
	b.ReportMetric(deployTime.Seconds()/baselineTime.Seconds(), "deploy/baseline")
	b.ReportMetric(float64(cpu.Microseconds())/n/(2*replicas), "cm-cpu-µs/pod")
}

// countRunning counts the pods of namespace that have been seen Running.
func countRunning(b *testing.B, admin kubernetes.Interface, namespace string) *atomic.Int64 {
	var n atomic.Int64
	var mu sync.Mutex
	seen := map[types.UID]bool{}
	watchPods(b, admin, namespace, "", func(pod *corev1.Pod, _, _ bool) {
		if pod.Status.Phase != corev1.PodRunning {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !seen[pod.UID] {
			seen[pod.UID] = true
			n.Add(1)
		}
	})
	return &n
}
