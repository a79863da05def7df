package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// fakeKubelets play the kubelets of a namespace, which trustplane does
// not run: each pod they see is marked Running and Ready through
// pods/status, as the admin, unless its name is held.
type fakeKubelets struct {
	t         *testing.T
	client    kubernetes.Interface
	namespace string
	pods      cache.SharedIndexInformer
	mu        sync.Mutex
	// held is guarded by mu.
	held map[string]bool
}

func startKubelets(t *testing.T, client kubernetes.Interface, namespace string) *fakeKubelets {
	t.Helper()
	k := &fakeKubelets{t: t, client: client, namespace: namespace, held: map[string]bool{}}
	ready := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodRunning {
			return
		}
		k.mu.Lock()
		held := k.held[pod.Name]
		k.mu.Unlock()
		if held {
			return
		}
		p := pod.DeepCopy()
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		// A conflict or a pod gone: the next event brings it again.
		_, _ = client.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	}
	k.pods = watchPods(t, client, namespace, "", func(pod *corev1.Pod, _, deleted bool) {
		if !deleted {
			ready(pod)
		}
	})
	return k
}

// hold keeps the pods named from becoming ready; release lets them,
// and readies those already waiting.
func (k *fakeKubelets) hold(names ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, n := range names {
		k.held[n] = true
	}
}

func (k *fakeKubelets) release(names ...string) {
	k.mu.Lock()
	for _, n := range names {
		delete(k.held, n)
	}
	k.mu.Unlock()
	for _, n := range names {
		if obj, ok, _ := k.pods.GetStore().GetByKey(k.namespace + "/" + n); ok {
			pod := obj.(*corev1.Pod)
			if pod.Status.Phase != corev1.PodRunning {
				setReady(k.t, k.client, pod)
			}
		}
	}
}

// orderWatch watches a namespace's pods from before the test writes any
// and checks, at every event, kube's OrderedReady guarantees for the
// sets it is told of: a pod of ordinal n is created only while every
// lower ordinal's pod is Running and Ready; while scaling down it is
// deleted only once every higher ordinal's pod is gone, and while
// updating only once every higher ordinal's pod is Running and Ready
// (replaced). It also records the order of the deletions, per set.
type orderWatch struct {
	mu sync.Mutex
	// updating: deletions are a rolling update's, not a scale-down's.
	updating   bool
	ordered    map[string]bool // the OrderedReady sets, by name
	pods       map[string]*corev1.Pod
	violations []string
	deleted    map[string][]string // by set, pod names in order of deletion
}

func watchOrder(t *testing.T, client kubernetes.Interface, namespace string, orderedSets ...string) *orderWatch {
	t.Helper()
	w := &orderWatch{ordered: map[string]bool{}, pods: map[string]*corev1.Pod{}, deleted: map[string][]string{}}
	for _, s := range orderedSets {
		w.ordered[s] = true
	}
	watchPods(t, client, namespace, "", func(pod *corev1.Pod, _, deleted bool) { w.observe(pod, deleted) })
	return w
}

// setAndOrdinal splits <set>-<n>.
func setAndOrdinal(name string) (string, int, bool) {
	i := strings.LastIndex(name, "-")
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(name[i+1:])
	return name[:i], n, err == nil
}

func (w *orderWatch) observe(pod *corev1.Pod, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	set, ord, ok := setAndOrdinal(pod.Name)
	prev, existed := w.pods[pod.Name]
	if deleted {
		delete(w.pods, pod.Name)
	} else {
		w.pods[pod.Name] = pod
	}
	if !ok || !w.ordered[set] {
		if ok && (deleted || pod.DeletionTimestamp != nil && (prev == nil || prev.DeletionTimestamp == nil)) {
			w.deleted[set] = append(w.deleted[set], pod.Name)
		}
		return
	}
	for name, other := range w.pods {
		s, n, ok := setAndOrdinal(name)
		if !ok || s != set {
			continue
		}
		if !existed && !deleted && n < ord && !(other.Status.Phase == corev1.PodRunning && podIsReady(other) && other.DeletionTimestamp == nil) {
			w.violations = append(w.violations, fmt.Sprintf("%s created while %s was not Running and Ready", pod.Name, name))
		}
		startsDeletion := deleted && (prev == nil || prev.DeletionTimestamp == nil) || pod.DeletionTimestamp != nil && (prev == nil || prev.DeletionTimestamp == nil)
		if startsDeletion && n > ord {
			switch {
			case !w.updating:
				w.violations = append(w.violations, fmt.Sprintf("%s deleted while %s still existed", pod.Name, name))
			case !(other.Status.Phase == corev1.PodRunning && podIsReady(other) && other.DeletionTimestamp == nil):
				w.violations = append(w.violations, fmt.Sprintf("%s replaced while %s was not Running and Ready", pod.Name, name))
			}
		}
	}
	if deleted && (prev == nil || prev.DeletionTimestamp == nil) || !deleted && pod.DeletionTimestamp != nil && (prev == nil || prev.DeletionTimestamp == nil) {
		w.deleted[set] = append(w.deleted[set], pod.Name)
	}
}

func (w *orderWatch) setUpdating(updating bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.updating = updating
}

func (w *orderWatch) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.violations {
		t.Errorf("OrderedReady violated: %s", v)
	}
}

func (w *orderWatch) deletions(set string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.deleted[set]...)
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func newStatefulSet(name string, replicas int32, policy appsv1.PodManagementPolicyType, image string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			ServiceName:         name,
			PodManagementPolicy: policy,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
			},
		},
	}
}

// setPods are the set's pods by name, with the revision each is of.
func setPods(ctx context.Context, client kubernetes.Interface, namespace, set string) (map[string]string, error) {
	list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + set})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p.Labels[appsv1.ControllerRevisionHashLabelKey]
		}
	}
	return out, nil
}

// waitSet waits until the set's status reports ready pods of the given
// revisions and cond holds of it.
func waitSet(t *testing.T, client kubernetes.Interface, namespace, name, what string, cond func(s *appsv1.StatefulSet, pods map[string]string) error) *appsv1.StatefulSet {
	t.Helper()
	var last *appsv1.StatefulSet
	waitFor(t, what, func(ctx context.Context) error {
		s, err := client.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pods, err := setPods(ctx, client, namespace, name)
		if err != nil {
			return err
		}
		last = s
		if s.Status.ObservedGeneration != s.Generation {
			return fmt.Errorf("generation %d not observed (%d)", s.Generation, s.Status.ObservedGeneration)
		}
		if err := cond(s, pods); err != nil {
			return fmt.Errorf("%w; status %+v, pods %v", err, s.Status, pods)
		}
		return nil
	})
	return last
}

func setImageOf(t *testing.T, client kubernetes.Interface, namespace, name, image string, partition int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":%q}]}},"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":%d}}}}`, image, partition)
	if _, err := client.AppsV1().StatefulSets(namespace).Patch(t.Context(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("set image of %s to %s, partition %d: %v", name, image, partition, err)
	}
}

// The StatefulSet controller, against the real binary, with the pods'
// kubelets played by the test: OrderedReady creates each ordinal only
// once the ones below it are Running and Ready and deletes from the
// highest down, never otherwise (every pod event is checked, from the
// start); a rolling update goes from the highest ordinal down and stops
// at the partition; the revisions are recorded and reported; stock
// kubectl reads it all and waits for the rollout; Parallel creates
// without waiting; OnDelete leaves pods alone until deleted.
func TestStatefulSet(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping end-to-end test in -short mode")
	}
	c := e2etest.StartCluster(t)
	admin, adminCfg := clientFor(t, c.AdminConf())
	const ns = "sts"
	createNamespace(t, c, admin, ns)
	order := watchOrder(t, admin, ns, "web")
	kubelets := startKubelets(t, admin, ns)
	ctx := t.Context()
	sets := admin.AppsV1().StatefulSets(ns)

	// web-1 held not ready: web-2 must wait for it.
	kubelets.hold("web-1")
	if _, err := sets.Create(ctx, newStatefulSet("web", 3, appsv1.OrderedReadyPodManagement, "nginx:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSet(t, admin, ns, "web", "web-0 ready, web-1 waiting", func(s *appsv1.StatefulSet, pods map[string]string) error {
		if s.Status.Replicas != 2 || s.Status.ReadyReplicas != 1 || len(pods) != 2 {
			return fmt.Errorf("want web-0 ready and web-1 created")
		}
		return nil
	})
	if _, err := admin.CoreV1().Pods(ns).Get(ctx, "web-2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("web-2 while web-1 is not ready: %v, want NotFound", err)
	}
	kubelets.release("web-1")
	s := waitSet(t, admin, ns, "web", "web ready", func(s *appsv1.StatefulSet, pods map[string]string) error {
		if s.Status.ReadyReplicas != 3 || s.Status.UpdatedReplicas != 3 || s.Status.CurrentRevision == "" || s.Status.CurrentRevision != s.Status.UpdateRevision {
			return fmt.Errorf("want 3 ready of one revision")
		}
		return nil
	})
	rev1 := s.Status.UpdateRevision
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		p, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Labels[appsv1.StatefulSetPodNameLabel] != name || p.Labels[appsv1.ControllerRevisionHashLabelKey] != rev1 ||
			p.Spec.Hostname != name || p.Spec.Subdomain != "web" || metav1.GetControllerOf(p) == nil || metav1.GetControllerOf(p).UID != s.UID {
			t.Errorf("pod %s: labels %v, hostname %q, subdomain %q, controller %v", name, p.Labels, p.Spec.Hostname, p.Spec.Subdomain, metav1.GetControllerOf(p))
		}
	}

	// A rolling update stopped at partition 1: web-2 then web-1, web-0
	// untouched.
	order.setUpdating(true)
	setImageOf(t, admin, ns, "web", "nginx:2", 1)
	s = waitSet(t, admin, ns, "web", "web updated down to the partition", func(s *appsv1.StatefulSet, pods map[string]string) error {
		u := s.Status.UpdateRevision
		if u == rev1 || pods["web-2"] != u || pods["web-1"] != u || pods["web-0"] != rev1 || s.Status.ReadyReplicas != 3 || s.Status.UpdatedReplicas != 2 {
			return fmt.Errorf("want web-2 and web-1 updated, web-0 not")
		}
		return nil
	})
	if s.Status.CurrentRevision != rev1 || s.Status.CurrentReplicas != 1 {
		t.Errorf("partitioned: currentRevision %q (%d), want %q (1)", s.Status.CurrentRevision, s.Status.CurrentReplicas, rev1)
	}
	if got := order.deletions("web"); strings.Join(got, ",") != "web-2,web-1" {
		t.Errorf("rolling update deleted %v, want web-2 then web-1", got)
	}
	rev2 := s.Status.UpdateRevision
	setImageOf(t, admin, ns, "web", "nginx:2", 0)
	waitSet(t, admin, ns, "web", "web updated", func(s *appsv1.StatefulSet, pods map[string]string) error {
		if pods["web-0"] != rev2 || s.Status.CurrentRevision != rev2 || s.Status.UpdatedReplicas != 3 || s.Status.ReadyReplicas != 3 {
			return fmt.Errorf("want every pod of %s", rev2)
		}
		return nil
	})
	revs, err := admin.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int64{}
	for _, r := range revs.Items {
		byName[r.Name] = r.Revision
	}
	if len(byName) != 2 || byName[rev1] != 1 || byName[rev2] != 2 {
		t.Errorf("revisions %v, want %s as 1 and %s as 2", byName, rev1, rev2)
	}

	// Stock kubectl: rollout status (which says "partitioned" of any set
	// with a partition, 0 included, as on kube), and the tables.
	k := newKubectl(t, kubectlVersions[0])
	if res := k.run(t, c.AdminConf(), "-n", ns, "rollout", "status", "statefulset/web", "--timeout=20s"); res.exit != 0 || !strings.Contains(res.stdout, "partitioned roll out complete: 3 new pods have been updated") {
		t.Errorf("kubectl rollout status: exit %d, stdout %q, stderr %q", res.exit, res.stdout, res.stderr)
	}
	res := k.run(t, c.AdminConf(), "-n", ns, "get", "sts,controllerrevisions", "--no-headers")
	rows := map[string][]string{}
	for _, line := range strings.Split(res.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = f[1:]
		}
	}
	if sts, cr := rows["statefulset.apps/web"], rows["controllerrevision.apps/"+rev2]; res.exit != 0 ||
		len(sts) < 1 || sts[0] != "3/3" || len(cr) < 2 || cr[0] != "statefulset.apps/web" || cr[1] != "2" {
		t.Errorf("kubectl get sts,controllerrevisions: exit %d, stdout %q, stderr %q", res.exit, res.stdout, res.stderr)
	}

	// Scaled down through the scale subresource: web-2 first, then web-1.
	order.setUpdating(false)
	if res := k.run(t, c.AdminConf(), "-n", ns, "scale", "sts", "web", "--replicas=1"); res.exit != 0 {
		t.Fatalf("kubectl scale: exit %d, stderr %q", res.exit, res.stderr)
	}
	waitSet(t, admin, ns, "web", "web scaled to 1", func(s *appsv1.StatefulSet, pods map[string]string) error {
		if len(pods) != 1 || pods["web-0"] == "" || s.Status.Replicas != 1 {
			return fmt.Errorf("want web-0 alone")
		}
		return nil
	})
	if got := order.deletions("web"); strings.Join(got[len(got)-2:], ",") != "web-2,web-1" {
		t.Errorf("scale-down deleted %v last, want web-2 then web-1", got)
	}

	// Parallel: every pod at once, none ready.
	kubelets.hold("par-0", "par-1", "par-2")
	if _, err := sets.Create(ctx, newStatefulSet("par", 3, appsv1.ParallelPodManagement, "nginx:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSet(t, admin, ns, "par", "par's pods created at once", func(s *appsv1.StatefulSet, pods map[string]string) error {
		if len(pods) != 3 || s.Status.ReadyReplicas != 0 {
			return fmt.Errorf("want 3 pods, none ready")
		}
		return nil
	})
	kubelets.release("par-0", "par-1", "par-2")

	// OnDelete: a new template reaches a pod only when it is deleted.
	od := newStatefulSet("od", 2, appsv1.ParallelPodManagement, "nginx:1")
	od.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
	if _, err := sets.Create(ctx, od, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s = waitSet(t, admin, ns, "od", "od ready", func(s *appsv1.StatefulSet, pods map[string]string) error {
		if s.Status.ReadyReplicas != 2 {
			return fmt.Errorf("want 2 ready")
		}
		return nil
	})
	odRev1 := s.Status.UpdateRevision
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}}}`
	if _, err := sets.Patch(ctx, "od", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	s = waitSet(t, admin, ns, "od", "od's new revision recorded", func(s *appsv1.StatefulSet, pods map[string]string) error {
		if s.Status.UpdateRevision == odRev1 || pods["od-0"] != odRev1 || pods["od-1"] != odRev1 {
			return fmt.Errorf("want a new update revision, pods untouched")
		}
		return nil
	})
	odRev2 := s.Status.UpdateRevision
	if err := admin.CoreV1().Pods(ns).Delete(ctx, "od-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSet(t, admin, ns, "od", "od-1 re-created at the new revision", func(s *appsv1.StatefulSet, pods map[string]string) error {
		if pods["od-1"] != odRev2 || pods["od-0"] != odRev1 || s.Status.ReadyReplicas != 2 {
			return fmt.Errorf("want od-1 new, od-0 old")
		}
		return nil
	})
	order.check(t)

	// The controller's own identity: its writes, no more.
	ssc := tokenClient(t, admin, adminCfg, "statefulset-controller")
	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("statefulset-controller: %s: %v, want Forbidden", what, err)
		}
	}
	_, err = ssc.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	forbidden("list Secrets", err)
	_, err = ssc.CoreV1().Secrets("kube-system").Get(ctx, "any", metav1.GetOptions{})
	forbidden("get a Secret", err)
	_, err = ssc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	forbidden("list pods (the shared informers read them)", err)
	_, err = ssc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	forbidden("create a ConfigMap", err)
	_, err = ssc.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	forbidden("create a Deployment", err)
	_, err = ssc.AppsV1().StatefulSets(ns).Create(ctx, newStatefulSet("x", 1, appsv1.ParallelPodManagement, "nginx"), metav1.CreateOptions{})
	forbidden("create a StatefulSet", err)
	cur, err := ssc.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("statefulset-controller: get a StatefulSet, as after a conflict: %v", err)
	}
	cur.Spec.Replicas = ptrTo(int32(9))
	_, err = ssc.AppsV1().StatefulSets(ns).Update(ctx, cur, metav1.UpdateOptions{})
	forbidden("update a StatefulSet's spec", err)
	_, err = ssc.CoreV1().Pods(ns).Patch(ctx, "web-0", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	forbidden("patch a pod", err)
}
