package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

const (
	// DefaultSchedulerName is the scheduler of pods that name none.
	DefaultSchedulerName = corev1.DefaultSchedulerName
	// LeaseName is the Lease in kube-system through which instances
	// elect their leader, kube-scheduler's.
	LeaseName = "kube-scheduler"
	// leaseNamespace holds it.
	leaseNamespace = metav1.NamespaceSystem
	// maxEventMessage is as long as kube lets an event's message be.
	maxEventMessage = 1024
)

// Options configure the scheduler.
type Options struct {
	// Config is the scheduler's identity, system:kube-scheduler.
	Config *rest.Config
	// Profile is what it schedules with; DefaultProfile when nil.
	Profile *Profile
	Logger  *slog.Logger
	// Identity names this instance in the Lease; the host name and a
	// random suffix when empty.
	Identity string
	// LeaderElect: elect a leader through the Lease before scheduling
	// (kube-scheduler's --leader-elect, true by default there; false
	// only for a scheduler that is alone by construction).
	LeaderElect bool
	// LeaseDuration, RenewDeadline and RetryPeriod are leader
	// election's, kube-scheduler's defaults when zero.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// InitialBackoff and MaxBackoff bound how long a pod waits between
	// attempts, kube-scheduler's defaults (1s, 10s) when zero.
	InitialBackoff, MaxBackoff time.Duration
}

// NewIdentity is an identity for Options.Identity: the host name and a
// random suffix, as kube-scheduler's.
func NewIdentity() string {
	host, _ := os.Hostname()
	return host + "_" + uuid.NewString()
}

// Run schedules pods until ctx is done, while this instance leads:
// instances that share a cluster elect one leader through the Lease
// kube-system/kube-scheduler, and a standby takes over within the lease's
// duration once the leader stops renewing it. An instance that loses its
// lease stops scheduling, so that two never both bind, and stands again.
func Run(ctx context.Context, o Options) error {
	if o.Config == nil {
		return errors.New("scheduler: no client configuration")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Profile == nil {
		o.Profile = DefaultProfile()
	}
	if o.Identity == "" {
		o.Identity = NewIdentity()
	}
	client, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return err
	}
	if !o.LeaderElect {
		return schedule(ctx, client, o)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: leaseNamespace, Name: LeaseName},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   cmp.Or(o.LeaseDuration, 15*time.Second),
			RenewDeadline:   cmp.Or(o.RenewDeadline, 10*time.Second),
			RetryPeriod:     cmp.Or(o.RetryPeriod, 2*time.Second),
			ReleaseOnCancel: true,
			Name:            LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					o.Logger.Info("scheduler: leading", "identity", o.Identity)
					if err := schedule(ctx, client, o); err != nil && ctx.Err() == nil {
						o.Logger.Error("scheduler: stopped", "err", err)
					}
				},
				OnStoppedLeading: func() { o.Logger.Info("scheduler: not leading", "identity", o.Identity) },
				OnNewLeader: func(leader string) {
					if leader != o.Identity {
						o.Logger.Info("scheduler: another instance leads", "leader", leader)
					}
				},
			},
		})
		if err != nil {
			return err
		}
		le.Run(ctx)
	}
	return nil
}

// scheduler is one term of leadership: its informers, cache and queue
// are new each time.
type scheduler struct {
	client   kubernetes.Interface
	profile  *Profile
	logger   *slog.Logger
	recorder events.EventRecorder
	cache    *cache
	queue    *schedulingQueue
	// nextStart is the node the next cycle starts from, so that the
	// nodes a cycle does not reach are reached by the next; only the
	// scheduling goroutine uses it.
	nextStart int
	rand      *rand.Rand
	// namespaces lists namespaces, for the namespace selectors of pod
	// affinity terms.
	namespaces corelisters.NamespaceLister
	// spreadSelector is spreadSelectors.selector, when the profile
	// scores PodTopologySpread.
	spreadSelector func(*corev1.Pod) labels.Selector
}

// namespaceLabels are the labels of a namespace; none if it is unknown.
func (s *scheduler) namespaceLabels(name string) labels.Set {
	if s.namespaces == nil {
		return nil
	}
	ns, err := s.namespaces.Get(name)
	if err != nil {
		return nil
	}
	return ns.Labels
}

// schedule runs the informers, the queue and the scheduling loop until
// ctx is done, then waits for the bindings in flight.
func schedule(ctx context.Context, client kubernetes.Interface, o Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return err
	}
	defer broadcaster.Shutdown()
	s := &scheduler{
		client:   client,
		profile:  o.Profile,
		logger:   o.Logger,
		recorder: broadcaster.NewRecorder(scheme.Scheme, o.Profile.SchedulerName),
		cache:    newCache(),
		queue:    newSchedulingQueue(),
		rand:     rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
	}
	s.queue.initialBackoff = cmp.Or(o.InitialBackoff, s.queue.initialBackoff)
	s.queue.maxBackoff = cmp.Or(o.MaxBackoff, s.queue.maxBackoff)
	factory := informers.NewSharedInformerFactory(client, 0)
	// Pods that have finished hold nothing on their node.
	podFactory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.FieldSelector = "status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed)
	}))
	pods := podFactory.Core().V1().Pods().Informer()
	nodes := factory.Core().V1().Nodes().Informer()
	namespaces := factory.Core().V1().Namespaces()
	nsInformer := namespaces.Informer() // before Start, which starts only those asked for
	s.namespaces = namespaces.Lister()
	synced := []toolscache.InformerSynced{pods.HasSynced, nodes.HasSynced, nsInformer.HasSynced}
	if s.profile.scores("PodTopologySpread") || s.profile.hasFilter("PodTopologySpread") && s.profile.spreadDefaults.list {
		// Pods without spread constraints are spread among those that
		// share a Service or a controller with them, as kube's are.
		core, apps := factory.Core().V1(), factory.Apps().V1()
		synced = append(synced, core.Services().Informer().HasSynced, apps.ReplicaSets().Informer().HasSynced, apps.StatefulSets().Informer().HasSynced)
		s.spreadSelector = spreadSelectors{
			services: core.Services().Lister(), replicaSets: apps.ReplicaSets().Lister(), statefulSets: apps.StatefulSets().Lister(),
		}.selector
	}
	if _, err := pods.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    s.podAdded,
		UpdateFunc: s.podUpdated,
		DeleteFunc: s.podDeleted,
	}); err != nil {
		return err
	}
	if _, err := nodes.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    s.nodeAdded,
		UpdateFunc: s.nodeUpdated,
		DeleteFunc: s.nodeDeleted,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	defer factory.Shutdown()
	defer podFactory.Shutdown()
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { s.queue.run(ctx) })
	for {
		qp, cycle, ok := s.queue.pop()
		if !ok {
			return nil
		}
		s.scheduleOne(ctx, &wg, qp, cycle)
	}
}

// responsible: the pod is this scheduler's to place, now: not being
// deleted, and not held back by a scheduling gate (kube's SchedulingGates
// plugin); it joins the queue when its last gate is removed.
func (s *scheduler) responsible(pod *corev1.Pod) bool {
	return pod.Spec.SchedulerName == s.profile.SchedulerName && pod.DeletionTimestamp == nil && len(pod.Spec.SchedulingGates) == 0
}

func (s *scheduler) podAdded(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	switch {
	case pod.Spec.NodeName != "":
		s.cache.addPod(pod)
		s.queue.moveWhere(waitsForPods)
	case s.responsible(pod):
		s.queue.add(pod)
	}
}

// countsPodLabels: a pod whose fit depends on the labels of the pods
// placed: required pod affinity or anti-affinity, DoNotSchedule
// spreading.
func countsPodLabels(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	return waitsForPods(pod) || a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

// waitsForPods: a pod that a pod assigned to a node may let fit, through
// its required pod affinity or its topology spread constraints (which a
// pod in the least crowded domain relaxes); nothing else a pod's arrival
// changes makes room.
func waitsForPods(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		return true
	}
	return slices.ContainsFunc(pod.Spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
		return c.WhenUnsatisfiable == corev1.DoNotSchedule
	})
}

func (s *scheduler) podUpdated(oldObj, obj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	pod, ok2 := obj.(*corev1.Pod)
	if !ok1 || !ok2 {
		return
	}
	switch {
	case pod.Spec.NodeName != "":
		s.cache.addPod(pod)
		switch {
		case old.Spec.NodeName == "":
			s.queue.remove(pod.UID) // bound
			s.queue.moveWhere(waitsForPods)
		case !equality.Semantic.DeepEqual(old.Labels, pod.Labels):
			// A waiting pod's terms or constraints may have counted the
			// labels it had, or may count those it has.
			s.queue.moveWhere(countsPodLabels)
		}
	case s.responsible(pod):
		s.queue.update(pod)
	default:
		// Being deleted, or handed to another scheduler.
		s.queue.remove(pod.UID)
	}
}

func (s *scheduler) podDeleted(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	s.queue.remove(pod.UID)
	// Assumed or assigned, it leaves room that a waiting pod may take.
	if s.cache.has(pod.UID) {
		s.cache.removePod(pod.UID)
		s.queue.moveAll()
	}
}

func (s *scheduler) nodeAdded(obj any) {
	if node, ok := obj.(*corev1.Node); ok {
		s.cache.setNode(node)
		s.queue.moveAll()
	}
}

func (s *scheduler) nodeUpdated(oldObj, obj any) {
	old, ok1 := oldObj.(*corev1.Node)
	node, ok2 := obj.(*corev1.Node)
	if !ok1 || !ok2 {
		return
	}
	s.cache.setNode(node)
	// Heartbeats change only conditions and times; what the filters read
	// changing may make a waiting pod fit.
	if !equality.Semantic.DeepEqual(old.Status.Allocatable, node.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(old.Labels, node.Labels) ||
		!equality.Semantic.DeepEqual(old.Spec.Taints, node.Spec.Taints) ||
		old.Spec.Unschedulable != node.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(old.Status.Images, node.Status.Images) {
		s.queue.moveAll()
	}
}

func (s *scheduler) nodeDeleted(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if node, ok := obj.(*corev1.Node); ok {
		s.cache.removeNode(node.Name)
	}
}

// scheduleOne decides the node of one pod, assumes the pod there, and
// binds it in the background: the next pod is decided meanwhile, with
// this one counted.
func (s *scheduler) scheduleOne(ctx context.Context, wg *sync.WaitGroup, qp *queuedPod, cycle int64) {
	pod := qp.pod
	if pod.DeletionTimestamp != nil || s.cache.has(pod.UID) {
		s.queue.done(pod.UID)
		return
	}
	host, err := s.schedulePod(pod, s.cache.snapshot())
	if err != nil {
		s.failed(ctx, qp, cycle, err)
		return
	}
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = host
	if err := s.cache.assume(assumed); err != nil {
		s.failed(ctx, qp, cycle, err)
		return
	}
	wg.Go(func() { s.bind(ctx, qp, cycle, assumed) })
}

// schedulePod chooses the node for pod among nodes: the filters keep the
// nodes it fits on, going round from where the last cycle stopped until
// enough are found, and the scores rank them.
func (s *scheduler) schedulePod(pod *corev1.Pod, nodes []*nodeInfo) (string, error) {
	if len(nodes) == 0 {
		return "", &fitError{}
	}
	c := newPodCycle(newPodInfo(pod), nodes, s.namespaceLabels)
	c.spreadSelector, c.spreadDefaults = s.spreadSelector, s.profile.spreadDefaults
	s.profile.prepareFilters(c)
	d := &diagnosis{numNodes: len(nodes)}
	// A pod that names its nodes is filtered against those only, as
	// kube's NodeAffinity PreFilter has it.
	candidates, start := nodes, s.nextStart
	if c.nodeNames != nil && s.profile.hasFilter("NodeAffinity") {
		if c.nodeNames.Len() == 0 {
			d.preFilterMsg = reasonNodeNamesConflict
			return "", s.profile.fitError(c, d)
		}
		candidates, start = nil, 0
		for _, n := range nodes {
			if c.nodeNames.Has(n.name) {
				candidates = append(candidates, n)
			}
		}
		d.preFiltered = len(nodes) - len(candidates)
	}
	want := s.profile.feasibleNodesToFind(len(candidates))
	feasible := make([]*nodeInfo, 0, want)
	processed := 0
	for ; processed < len(candidates) && len(feasible) < want; processed++ {
		n := candidates[(start+processed)%len(candidates)]
		if why, unresolvable := s.profile.runFilters(c, n); len(why) > 0 {
			d.failed = append(d.failed, nodeFailure{n: n, why: why, unresolvable: unresolvable})
			continue
		}
		feasible = append(feasible, n)
	}
	if len(candidates) == len(nodes) {
		s.nextStart = (s.nextStart + processed) % len(nodes)
	}
	switch len(feasible) {
	case 0:
		return "", s.profile.fitError(c, d)
	case 1:
		return feasible[0].name, nil
	}
	scores := s.profile.score(c, feasible)
	// The best, and among equals one at random, so that equal nodes
	// share the load (reservoir sampling, as kube's selectHost).
	best, ties := 0, 1
	for i := 1; i < len(scores); i++ {
		switch {
		case scores[i] > scores[best]:
			best, ties = i, 1
		case scores[i] == scores[best]:
			ties++
			if s.rand.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return feasible[best].name, nil
}

// bind binds the assumed pod to its node through pods/binding. If it
// fails, the pod is forgotten from its node and tried again after its
// backoff.
func (s *scheduler) bind(ctx context.Context, qp *queuedPod, cycle int64, assumed *corev1.Pod) {
	err := ctx.Err()
	if err == nil {
		err = s.client.CoreV1().Pods(assumed.Namespace).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: assumed.Namespace, Name: assumed.Name, UID: assumed.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: assumed.Spec.NodeName},
		}, metav1.CreateOptions{})
	}
	if err != nil {
		s.cache.forget(assumed.UID)
		if ctx.Err() != nil {
			// No longer leading: the next leader schedules it.
			s.queue.done(assumed.UID)
			return
		}
		s.failed(ctx, qp, cycle, fmt.Errorf("binding rejected: %w", err))
		return
	}
	s.queue.done(assumed.UID)
	s.recorder.Eventf(assumed, nil, corev1.EventTypeNormal, "Scheduled", "Binding", "Successfully assigned %s/%s to %s", assumed.Namespace, assumed.Name, assumed.Spec.NodeName)
}

// failed records why a pod could not be placed, as kube-scheduler does:
// a FailedScheduling event, and its PodScheduled condition False with the
// same message; then the pod waits in the queue.
func (s *scheduler) failed(ctx context.Context, qp *queuedPod, cycle int64, err error) {
	var fit *fitError
	unschedulable := errors.As(err, &fit)
	s.queue.requeue(qp, cycle, unschedulable)
	reason := corev1.PodReasonSchedulerError
	if unschedulable {
		reason = corev1.PodReasonUnschedulable
	}
	msg := err.Error()
	if len(msg) > maxEventMessage {
		msg = msg[:maxEventMessage-3] + "..."
	}
	s.logger.Info("scheduler: pod not scheduled", "pod", qp.pod.Namespace+"/"+qp.pod.Name, "reason", msg)
	s.recorder.Eventf(qp.pod, nil, corev1.EventTypeWarning, "FailedScheduling", "Scheduling", msg)
	if err := s.setUnscheduled(ctx, qp.pod, reason, msg); err != nil && ctx.Err() == nil {
		s.logger.Warn("scheduler: set PodScheduled", "pod", qp.pod.Namespace+"/"+qp.pod.Name, "err", err)
	}
}

// setUnscheduled sets the pod's PodScheduled condition False with reason
// and msg, unless it says so already.
func (s *scheduler) setUnscheduled(ctx context.Context, pod *corev1.Pod, reason, msg string) error {
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodScheduled {
			continue
		}
		if c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message {
			return nil
		}
		if c.Status == cond.Status {
			cond.LastTransitionTime = c.LastTransitionTime
		}
	}
	// A strategic merge patch merges conditions by type: the others stay.
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{cond}}})
	if err != nil {
		return err
	}
	_, err = s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}
