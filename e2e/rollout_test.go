package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// A controller manager killed in the middle of a rolling update, and
// started again, completes it; no ReplicaSet ever holds more active pods
// than the most replicas it had been asked for by then, and the
// Deployment never more than its replicas and maxSurge, as watches of
// every pod and ReplicaSet see throughout.
func TestRolloutSurvivesControllerManagerKill(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	const replicas, surge = 20, 5
	c := e2etest.StartCluster(t, "--controllers=false")
	// Held to 5 requests a second, the rollout takes long enough for the
	// kill to land in its middle.
	startManager := func() *e2etest.Process {
		p := e2etest.Start(t, exec.Command(e2etest.Binary(t), "controller-manager", "--dir", c.Dir, "--kube-api-qps", "5", "--kube-api-burst", "5"))
		p.WaitLine(t, "controller manager running: ")
		return p
	}
	manager := startManager()
	c.WaitForServiceAccount(t, metav1.NamespaceDefault)
	admin, _ := clientFor(t, c.AdminConf())
	ctx := t.Context()
	tok := tokenCreate(t, c)
	e2etest.Start(t, exec.Command(e2etest.Binary(t), "node", "--name", "n", "--count", "3", "--server", c.URL, "--dir", t.TempDir(),
		"--token", tok["token"], "--ca-cert-hash", tok["ca-cert-hash"]))

	createNamespace(t, c, admin, "roll")
	rec := recordPods(t, admin, "roll")
	history := recordReplicaSets(t, admin, "roll")
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptrTo[int32](replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptrTo(intstr.FromInt32(surge)), MaxUnavailable: ptrTo(intstr.FromInt32(surge)),
			}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptrTo[int64](1),
					Containers:                    []corev1.Container{{Name: "web", Image: "registry.example/web:1"}},
				},
			},
		},
	}
	if _, err := admin.AppsV1().Deployments("roll").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	complete := func(ctx context.Context) error {
		d, err := admin.AppsV1().Deployments("roll").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s := d.Status; s.ObservedGeneration < d.Generation || s.UpdatedReplicas != replicas || s.Replicas != replicas || s.AvailableReplicas != replicas {
			return fmt.Errorf("generation %d, status %+v", d.Generation, s)
		}
		return nil
	}
	waitWithin(t, e2etest.StartTimeout, "the Deployment available", complete)

	patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.example/web:2"}]}}}}`)
	if _, err := admin.AppsV1().Deployments("roll").Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rollout under way", func(ctx context.Context) error {
		d, err := admin.AppsV1().Deployments("roll").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.UpdatedReplicas == 0 {
			return errors.New("no pod of the new template yet")
		}
		return nil
	})
	manager.Kill()
	if complete(ctx) == nil {
		t.Fatal("the rollout completed before the controller manager was killed: the test proves nothing")
	}
	// The new instance waits out its predecessor's Lease, then goes on.
	startManager()
	waitWithin(t, 2*e2etest.StartTimeout, "the rollout complete after the restart", complete)

	rss, err := admin.AppsV1().ReplicaSets("roll").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rss.Items) != 2 {
		t.Errorf("%d ReplicaSets, want the old and the new", len(rss.Items))
	}
	waitFor(t, "the ReplicaSets' watch caught up", func(context.Context) error {
		for _, rs := range rss.Items {
			if !history.has(&rs) {
				return fmt.Errorf("ReplicaSet %s at %s not seen yet", rs.Name, rs.ResourceVersion)
			}
		}
		return nil
	})
	history.stop()
	for _, rs := range rss.Items {
		if most := rec.mostPods(rs.UID); most > replicas {
			t.Errorf("ReplicaSet %s held %d pods at once, more than the Deployment's %d", rs.Name, most, replicas)
		}
		rises := rec.risesOf(rs.UID)
		if len(rises) == 0 {
			t.Errorf("ReplicaSet %s: no pod of it seen", rs.Name)
		}
		// Each pod a ReplicaSet gained is held to the replicas it had
		// been asked for at that pod's revision: the largest so far,
		// since pods scaled down stay active until they are deleted.
		for _, r := range rises {
			if most := history.largestReplicas(rs.UID, r.rev); r.active > int(most) {
				t.Errorf("ReplicaSet %s held %d active pods at revision %d, when it had been asked for at most %d", rs.Name, r.active, r.rev, most)
				break
			}
		}
	}
	if most := rec.mostActivePods(); most > replicas+surge {
		t.Errorf("%d active pods at once, more than replicas and maxSurge, %d", most, replicas+surge)
	}
}
