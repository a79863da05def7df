package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/trustplane/trustplane/controllers"
	"github.com/trustplane/trustplane/e2e/e2etest"
)

// podRecorder watches the pods of a namespace, from before the test
// writes any, and records every change the watch shows: for each
// controller (by UID), the most active pods it held at once and when its
// count grew, and for each pod, every controller it was seen with.
type podRecorder struct {
	mu sync.Mutex
	// controllerOf maps each active pod to its controller's UID ("" for
	// none); count and most count them by controller.
	controllerOf map[string]types.UID
	count, most  map[types.UID]int
	// rises are, by controller, its counts of active pods as each grew.
	rises map[types.UID][]podRise
	// mostActive is the most active pods of all controllers at once.
	mostActive int
	// seen is, by pod, each controller it had, in order ("" for none).
	seen map[string][]types.UID
}

func recordPods(t testing.TB, cs kubernetes.Interface, namespace string) *podRecorder {
	t.Helper()
	r := &podRecorder{controllerOf: map[string]types.UID{}, count: map[types.UID]int{}, most: map[types.UID]int{}, rises: map[types.UID][]podRise{}, seen: map[string][]types.UID{}}
	watchPods(t, cs, namespace, "", func(pod *corev1.Pod, _, deleted bool) { r.observe(pod, deleted) })
	return r
}

func (r *podRecorder) observe(pod *corev1.Pod, deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	was, wasActive := r.controllerOf[pod.Name]
	if wasActive {
		r.count[was]--
		delete(r.controllerOf, pod.Name)
	}
	if deleted {
		return
	}
	var uid types.UID
	if ref := metav1.GetControllerOf(pod); ref != nil {
		uid = ref.UID
	}
	if s := r.seen[pod.Name]; len(s) == 0 || s[len(s)-1] != uid {
		r.seen[pod.Name] = append(s, uid)
	}
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return
	}
	r.controllerOf[pod.Name] = uid
	r.count[uid]++
	r.most[uid] = max(r.most[uid], r.count[uid])
	if !wasActive || was != uid {
		// The pod's revision is etcd's: it orders this rise after
		// every write of the controller that caused it, whatever the
		// watches' order of delivery.
		rev, _ := strconv.ParseInt(pod.ResourceVersion, 10, 64)
		r.rises[uid] = append(r.rises[uid], podRise{rev: rev, active: r.count[uid]})
	}
	r.mostActive = max(r.mostActive, len(r.controllerOf))
}

// mostActivePods is the most active pods of all controllers held at once.
func (r *podRecorder) mostActivePods() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mostActive
}

// mostPods is the most active pods that the controller uid held at once.
func (r *podRecorder) mostPods(uid types.UID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.most[uid]
}

// podRise is a controller's count of active pods grown to active by a
// pod at revision rev.
type podRise struct {
	rev    int64
	active int
}

// risesOf are the controller uid's counts of active pods as each grew, in
// the order the watch showed them.
func (r *podRecorder) risesOf(uid types.UID) []podRise {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.rises[uid])
}

// controllers is each controller pod was seen with, in order.
func (r *podRecorder) controllers(pod string) []types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen[pod])
}

// newReplicaSet is a ReplicaSet of replicas pods labelled app=name, with
// the template changed by edit.
func newReplicaSet(name string, replicas int32, edit func(*corev1.PodTemplateSpec)) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}},
			},
		},
	}
	if edit != nil {
		edit(&rs.Spec.Template)
	}
	return rs
}

// ownedPods are the active pods of namespace that rs controls, by name.
func ownedPods(ctx context.Context, cs kubernetes.Interface, rs *appsv1.ReplicaSet) ([]corev1.Pod, error) {
	list, err := cs.CoreV1().Pods(rs.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rs.UID && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// waitReplicas waits until rs controls n active pods and its status says
// so for its current generation.
func waitReplicas(t *testing.T, cs kubernetes.Interface, rs *appsv1.ReplicaSet, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitFor(t, fmt.Sprintf("replicaset %s at %d pods", rs.Name, n), func(ctx context.Context) error {
		var err error
		if pods, err = ownedPods(ctx, cs, rs); err != nil {
			return err
		}
		cur, err := cs.AppsV1().ReplicaSets(rs.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(pods) != n || cur.Status.Replicas != int32(n) || cur.Status.ObservedGeneration != cur.Generation {
			return fmt.Errorf("%d pods; status.replicas %d, observedGeneration %d of %d", len(pods), cur.Status.Replicas, cur.Status.ObservedGeneration, cur.Generation)
		}
		return nil
	})
	return pods
}

// scale sets rs's replicas through the scale subresource, as kubectl
// scale and autoscalers do; a patch, so that the controller's status
// writes meanwhile are no conflict.
func scale(t *testing.T, cs kubernetes.Interface, rs *appsv1.ReplicaSet, n int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
	if _, err := cs.AppsV1().ReplicaSets(rs.Namespace).Patch(t.Context(), rs.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatalf("scale %s to %d: %v", rs.Name, n, err)
	}
}

// setReady marks pod Running and Ready, as its kubelet would.
func setReady(t *testing.T, cs kubernetes.Interface, pod *corev1.Pod) {
	t.Helper()
	setPodStatus(t, cs, pod.Namespace, pod.Name, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	})
}

// setPodStatus writes the status change to the pod as its kubelet
// would: on the latest copy, again on a conflict, since the scheduler
// and the controllers write the same pod's status too.
func setPodStatus(t *testing.T, cs kubernetes.Interface, namespace, name string, change func(*corev1.Pod)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := cs.CoreV1().Pods(namespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(p)
		_, err = cs.CoreV1().Pods(namespace).UpdateStatus(t.Context(), p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("status of pod %s/%s: %v", namespace, name, err)
	}
}

// createNamespace creates namespace and waits for its default
// ServiceAccount, without which no pod may be created there.
func createNamespace(t testing.TB, c *e2etest.Cluster, cs kubernetes.Interface, namespace string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.WaitForServiceAccount(t, namespace)
}

// The ReplicaSet controller scales up and down, deleting the pods that
// serve least first, counts readiness, adopts the orphans its selector
// matches and releases the pods it no longer matches, and never touches a
// pod another controller owns. Every pod is watched throughout: it never
// holds more pods than it was asked for.
func TestReplicaSet(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t)
	admin, _ := clientFor(t, c.AdminConf())
	ctx := t.Context()
	const ns = "shop"
	createNamespace(t, c, admin, ns)
	rec := recordPods(t, admin, ns)
	rsClient := admin.AppsV1().ReplicaSets(ns)

	rs, err := rsClient.Create(ctx, newReplicaSet("web", 3, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := waitReplicas(t, admin, rs, 3)
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if !strings.HasPrefix(p.Name, "web-") || ref.APIVersion != "apps/v1" || ref.Kind != "ReplicaSet" || ref.Name != "web" ||
			ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion || p.Spec.ServiceAccountName != "default" {
			t.Errorf("pod %s: controller %+v, serviceAccountName %q; want web-*, the ReplicaSet blocking owner deletion, default", p.Name, ref, p.Spec.ServiceAccountName)
		}
	}

	scale(t, admin, rs, 5)
	pods = waitReplicas(t, admin, rs, 5)
	// Two pods serve: scaled down, they are the ones kept.
	setReady(t, admin, &pods[1])
	setReady(t, admin, &pods[3])
	keep := []string{pods[1].Name, pods[3].Name}
	waitFor(t, "readyReplicas 2", func(ctx context.Context) error {
		cur, err := rsClient.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.Status.ReadyReplicas != 2 || cur.Status.AvailableReplicas != 2 || cur.Status.FullyLabeledReplicas != 5 {
			return fmt.Errorf("status %+v", cur.Status)
		}
		return nil
	})
	scale(t, admin, rs, 2)
	pods = waitReplicas(t, admin, rs, 2)
	if got := []string{pods[0].Name, pods[1].Name}; !slices.Equal(got, keep) {
		t.Errorf("scaled down to 2, kept %q; want the ready ones %q", got, keep)
	}
	if most := rec.mostPods(rs.UID); most != 5 {
		t.Errorf("the ReplicaSet held at most %d pods, want 5", most)
	}

	// Released: a pod relabelled out of the selector loses its controller
	// and is replaced. Adopted: relabelled back, it is taken again, and the
	// ReplicaSet, one over, deletes the replacement, which is not ready.
	released := pods[0].Name
	relabel := func(name, app string) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"labels":{"app":%q}}}`, app)
		if _, err := admin.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	relabel(released, "debug")
	waitFor(t, "the relabelled pod released", func(ctx context.Context) error {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, released, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(p.OwnerReferences) != 0 {
			return fmt.Errorf("ownerReferences %+v", p.OwnerReferences)
		}
		return nil
	})
	pods = waitReplicas(t, admin, rs, 2)
	var replacement string
	for _, p := range pods {
		if p.Name != keep[1] {
			replacement = p.Name
		}
	}
	if replacement == "" || replacement == released {
		t.Fatalf("after the release, pods %q; want %s and a replacement", names(pods), keep[1])
	}
	relabel(released, "web")
	waitFor(t, "the pod adopted again and the replacement deleted", func(ctx context.Context) error {
		pods, err := ownedPods(ctx, admin, rs)
		if err != nil {
			return err
		}
		if got := names(pods); !slices.Equal(got, keep) {
			return fmt.Errorf("pods %q, want %q", got, keep)
		}
		return nil
	})
	if got := rec.controllers(released); !slices.Equal(got, []types.UID{rs.UID, "", rs.UID}) {
		t.Errorf("pod %s was controlled by %q; want the ReplicaSet, none, the ReplicaSet", released, got)
	}

	// A pod the selector matches that another controller owns is not
	// adopted, and does not count: the ReplicaSet scaled up still creates
	// its own. An orphan the selector does not match is left alone.
	// The other controller is an object that exists, so that the
	// garbage collector leaves its pod alone.
	owner, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other-controller"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptrTo(true)}
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "foreign", Labels: map[string]string{"app": "web"}, OwnerReferences: []metav1.OwnerReference{other}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "stray", Labels: map[string]string{"app": "api"}}},
	} {
		p.Spec.Containers = []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	scale(t, admin, rs, 3)
	waitReplicas(t, admin, rs, 3)
	for _, name := range []string{"foreign", "stray"} {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if name == "foreign" && (len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != other.UID) || name == "stray" && len(p.OwnerReferences) != 0 {
			t.Errorf("pod %s: ownerReferences %+v", name, p.OwnerReferences)
		}
		if got := rec.controllers(name); slices.Contains(got, rs.UID) {
			t.Errorf("pod %s was once controlled by the ReplicaSet: %q", name, got)
		}
	}
	if most := rec.mostPods(rs.UID); most != 5 {
		t.Errorf("the ReplicaSet held at most %d pods, want 5", most)
	}
}

func names(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// slowPodsPolicy makes every create of a pod labelled slow=yes take a
// while (it counts a range of numbers) and admits it: the API server then
// answers the controller's creates slowly, and their watch events trail
// behind, while the ReplicaSet is changed again and again.
const slowPodsPolicy = `package kubernetes.admission

deny contains msg if {
	input.request.kind.kind == "Pod"
	input.request.operation == "CREATE"
	input.request.object.metadata.labels.slow == "yes"
	count([x | some x in numbers.range(1, 20000); x < 0]) > 0
	msg := "never"
}
`

// While its creates are slow and the ReplicaSet is changed under it many
// times (each change a sync), the controller never holds more pods than
// it was asked for, as a watch of every pod records throughout. This
// checks the outcome, not the expectations themselves: on a quiet
// loopback the informer sees each pod within milliseconds, and a
// controller without them did not overshoot here either (see
// TestExpectations for those).
func TestReplicaSetSlowCreates(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t)
	admin, _ := clientFor(t, c.AdminConf())
	ctx := t.Context()
	if err := os.WriteFile(filepath.Join(c.Dir, "policies", "slow-pods.rego"), []byte(slowPodsPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	const ns = "slow"
	createNamespace(t, c, admin, ns)
	// The policy directory is read every two seconds; the policy admits
	// every pod, so its reload is the one sign that it is in force.
	waitFor(t, "the slow policy loaded", func(context.Context) error {
		for _, line := range strings.Split(c.Output(), "\n") {
			if strings.Contains(line, "admission policies reloaded") && strings.Contains(line, "slow-pods") {
				return nil
			}
		}
		return errors.New("not reloaded")
	})
	rec := recordPods(t, admin, ns)
	rsClient := admin.AppsV1().ReplicaSets(ns)
	slow := func(tmpl *corev1.PodTemplateSpec) { tmpl.Labels["slow"] = "yes" }

	for round, replicas := range []int32{20, 7, 30} {
		name := fmt.Sprintf("slow-%d", round)
		rs, err := rsClient.Create(ctx, newReplicaSet(name, replicas, slow), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Every change to the ReplicaSet is a sync of it while its
		// creates are under way.
		for i := range 20 {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"touch":"%d"}}}`, i)
			if _, err := rsClient.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitReplicas(t, admin, rs, int(replicas))
		scale(t, admin, rs, 0)
		scale(t, admin, rs, replicas)
		waitReplicas(t, admin, rs, int(replicas))
		if most := rec.mostPods(rs.UID); most != int(replicas) {
			t.Errorf("replicaset %s of %d replicas held at most %d pods at once", name, replicas, most)
		}
	}
}

// A create that admission refuses is the ReplicaSet's ReplicaFailure
// condition, gone once the creates are admitted.
func TestReplicaSetFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t)
	admin, _ := clientFor(t, c.AdminConf())
	ctx := t.Context()
	// The ServiceAccount admission plugin refuses a pod whose
	// ServiceAccount does not exist.
	rs, err := admin.AppsV1().ReplicaSets("default").Create(ctx, newReplicaSet("ghost", 2, func(tmpl *corev1.PodTemplateSpec) {
		tmpl.Spec.ServiceAccountName = "ghost"
	}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	failure := func(ctx context.Context) (*appsv1.ReplicaSetCondition, error) {
		cur, err := admin.AppsV1().ReplicaSets("default").Get(ctx, "ghost", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				return &c, nil
			}
		}
		return nil, nil
	}
	waitFor(t, "the ReplicaFailure condition", func(ctx context.Context) error {
		c, err := failure(ctx)
		if err != nil {
			return err
		}
		if c == nil || c.Status != corev1.ConditionTrue || c.Reason != "FailedCreate" || !strings.Contains(c.Message, `serviceaccount "ghost" not found`) {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	if pods, err := ownedPods(ctx, admin, rs); err != nil || len(pods) != 0 {
		t.Errorf("pods of a refused template: %d, %v", len(pods), err)
	}
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ghost"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, admin, rs, 2)
	waitFor(t, "the ReplicaFailure condition gone", func(ctx context.Context) error {
		c, err := failure(ctx)
		if err != nil {
			return err
		}
		if c != nil {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
}

// The ReplicaSet controller's identity may do its job and nothing near
// it: no Secrets, no nodes, no change to a ReplicaSet's spec.
func TestReplicaSetControllerIdentity(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t)
	admin, adminCfg := clientFor(t, c.AdminConf())
	ctx := t.Context()
	secs := int64(600)
	tr, err := admin.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "replicaset-controller", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(adminCfg)
	cfg.BearerToken = tr.Status.Token
	rsc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := admin.AppsV1().ReplicaSets("default").Create(ctx, newReplicaSet("web", 1, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, admin, rs, 1)
	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
		}
	}
	_, err = rsc.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	forbidden("list Secrets", err)
	_, err = rsc.CoreV1().Secrets("kube-system").Get(ctx, "any", metav1.GetOptions{})
	forbidden("get a Secret", err)
	err = rsc.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{})
	forbidden("delete a node", err)
	_, err = rsc.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	forbidden("list pods (the shared informers read them)", err)
	cur, err := rsc.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the ReplicaSet, as before adopting: %v", err)
	}
	cur.Spec.Replicas = ptrTo(int32(10))
	_, err = rsc.AppsV1().ReplicaSets("default").Update(ctx, cur, metav1.UpdateOptions{})
	forbidden("update a ReplicaSet's spec", err)
	_, err = rsc.CoreV1().Pods("default").UpdateStatus(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.UpdateOptions{})
	forbidden("update a pod's status", err)
}

// Stock kubectl scales a ReplicaSet, and a Deployment, to nothing and
// back, and the controllers make the pods follow.
func TestReplicaSetKubectlScale(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	k := newKubectl(t, kubectlVersions[0])
	c := e2etest.StartCluster(t)
	admin, _ := clientFor(t, c.AdminConf())
	run := func(want string, args ...string) result {
		t.Helper()
		res := k.run(t, c.AdminConf(), args...)
		if res.exit != 0 || !strings.Contains(res.stdout, want) {
			t.Fatalf("kubectl %s: exit %d, stdout %q, stderr %q; want %q", strings.Join(args, " "), res.exit, res.stdout, res.stderr, want)
		}
		return res
	}
	rs, err := admin.AppsV1().ReplicaSets("default").Create(t.Context(), newReplicaSet("web", 3, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, admin, rs, 3)
	for _, n := range []int{0, 4} {
		run("replicaset.apps/web scaled", "scale", "rs", "web", fmt.Sprintf("--replicas=%d", n))
		waitReplicas(t, admin, rs, n)
	}
	res := run("web", "get", "rs", "web", "--no-headers")
	if f := strings.Fields(res.stdout); len(f) < 3 || f[1] != "4" || f[2] != "4" {
		t.Errorf("kubectl get rs web: stdout %q; want DESIRED 4 CURRENT 4", res.stdout)
	}

	// A Deployment scaled keeps its one ReplicaSet, whose replicas and
	// pods follow, with the deployment controller and the ReplicaSet
	// controller both at work.
	run("deployment.apps/api created", "create", "deployment", "api", "--image=registry.example/api:1", "--replicas=3")
	var apiRS appsv1.ReplicaSet
	waitFor(t, "the Deployment's ReplicaSet", func(ctx context.Context) error {
		d, err := admin.AppsV1().Deployments("default").Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return err
		}
		rss := replicaSetsOf(t, admin, d)
		if len(rss) != 1 {
			return fmt.Errorf("%d ReplicaSets", len(rss))
		}
		apiRS = rss["1"]
		return nil
	})
	// follows waits until the ReplicaSet, the same one, asks for n pods
	// and controls them.
	follows := func(n int) {
		t.Helper()
		waitFor(t, fmt.Sprintf("the Deployment's ReplicaSet asked for %d", n), func(ctx context.Context) error {
			cur, err := admin.AppsV1().ReplicaSets("default").Get(ctx, apiRS.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cur.UID != apiRS.UID || *cur.Spec.Replicas != int32(n) {
				return fmt.Errorf("ReplicaSet %s (uid %s) asks for %d", cur.Name, cur.UID, *cur.Spec.Replicas)
			}
			return nil
		})
		waitReplicas(t, admin, &apiRS, n)
	}
	follows(3)
	for _, n := range []int{0, 3} {
		run("deployment.apps/api scaled", "scale", "deployment/api", fmt.Sprintf("--replicas=%d", n))
		follows(n)
	}
	d, err := admin.AppsV1().Deployments("default").Get(t.Context(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rss := replicaSetsOf(t, admin, d); len(rss) != 1 || rss["1"].UID != apiRS.UID {
		t.Errorf("after scaling, the Deployment's ReplicaSets by revision: %v; want only the first", slices.Sorted(maps.Keys(rss)))
	}
	// Pending pods (no node runs them): 3 up to date, none ready.
	res = run("api", "get", "deployment", "api", "--no-headers")
	if f := strings.Fields(res.stdout); len(f) < 3 || f[1] != "0/3" || f[2] != "3" {
		t.Errorf("kubectl get deployment api: stdout %q; want READY 0/3 UP-TO-DATE 3", res.stdout)
	}
}

// BenchmarkReplicaSet1000 measures how long the controller manager, run
// as its own process, takes to create the 1,000 pods of one ReplicaSet
// (no nodes: they stay Pending), against a baseline in the same run: the
// admin creating 1,000 pods with the same client rate limit (the
// controller manager's default, controllers.DefaultQPS and DefaultBurst)
// at a concurrency of 32. It reports both times, their
// ratio, and the controller manager's CPU per pod created.
//
//	go test ./e2e -run '^$' -bench ReplicaSet1000 -benchtime 1x
func BenchmarkReplicaSet1000(b *testing.B) {
	const pods = 1000
	c := e2etest.StartCluster(b, "--controllers=false")
	manager := e2etest.Start(b, exec.Command(e2etest.Binary(b), "controller-manager", "--dir", c.Dir))
	manager.WaitLine(b, "controller manager running: ")
	c.WaitForServiceAccount(b, metav1.NamespaceDefault)
	admin, adminCfg := clientFor(b, c.AdminConf())
	ctx := b.Context()

	limited := rest.CopyConfig(adminCfg)
	limited.QPS, limited.Burst = controllers.DefaultQPS, controllers.DefaultBurst
	baselineClient, err := kubernetes.NewForConfig(limited)
	if err != nil {
		b.Fatal(err)
	}
	var controllerTime, baselineTime time.Duration
	var cpu time.Duration
	for i := range b.N {
		ns := fmt.Sprintf("bench-%d", i)
		createNamespace(b, c, admin, ns)
		rec := recordPods(b, admin, ns)
		before := processCPU(b, manager.PID())
		start := time.Now()
		rs := newReplicaSet("web", pods, nil)
		rs, err := admin.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		deadline := start.Add(5 * time.Minute)
		for rec.mostPods(rs.UID) < pods {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d pods within 5 minutes", rec.mostPods(rs.UID), pods)
			}
			time.Sleep(20 * time.Millisecond)
		}
		controllerTime += time.Since(start)
		cpu += processCPU(b, manager.PID()) - before
		if most := rec.mostPods(rs.UID); most != pods {
			b.Errorf("the ReplicaSet held %d pods, want %d", most, pods)
		}

		baseNS := fmt.Sprintf("baseline-%d", i)
		createNamespace(b, c, admin, baseNS)
		start = time.Now()
		work := make(chan int)
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for range 32 {
			wg.Go(func() {
				for n := range work {
					pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", n), Labels: map[string]string{"app": "web"}}, Spec: rs.Spec.Template.Spec}
					if _, err := baselineClient.CoreV1().Pods(baseNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				}
			})
		}
		for n := range pods {
			work <- n
		}
		close(work)
		wg.Wait()
		baselineTime += time.Since(start)
		select {
		case err := <-errs:
			b.Fatalf("baseline create: %v", err)
		default:
		}
	}
	n := float64(b.N)
	b.ReportMetric(controllerTime.Seconds()/n, "s/rs-1000-pods")
	b.ReportMetric(baselineTime.Seconds()/n, "s/baseline-1000-pods")
	b.ReportMetric(controllerTime.Seconds()/baselineTime.Seconds(), "controller/baseline")
	b.ReportMetric(float64(cpu.Microseconds())/n/pods, "cpu-µs/pod")
}

// processCPU is the user and system CPU time a process has used, from
// /proc/<pid>/stat, in clock ticks of 1/100 s (Linux's USER_HZ).
func processCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces: utime and stime are the 12th and 13th of them.
	_, rest, ok := strings.Cut(string(raw), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		t.Fatalf("/proc/%d/stat: %q", pid, raw)
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
