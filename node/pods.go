package node

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// RunForAnnotation, on a pod whose restartPolicy is not Always, is how
// long it runs (a Go duration, "30s") before it finishes with success;
// without it a pod runs until it is deleted. The node has no containers
// to run, so this stands for the pod's work.
const RunForAnnotation = "node.trustplane.io/run-for"

// podWorkers is how many pods one node syncs at once.
const podWorkers = 4

// podWorker runs the pods bound to its node: it reports them running,
// finishes them, and deletes them when their grace period ends.
type podWorker struct {
	a       *agent
	factory informers.SharedInformerFactory
	lister  corelisters.PodLister
	synced  cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]
	ips     *podIPs
}

func newPodWorker(a *agent) (*podWorker, error) {
	ips, err := newPodIPs(a.c.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", a.c.Name, err)
	}
	factory := a.podInformers()
	inf := factory.Core().V1().Pods()
	w := &podWorker{
		a:       a,
		factory: factory,
		lister:  inf.Lister(),
		synced:  inf.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "node-" + a.c.Name}),
		ips: ips,
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			w.queue.Add(key)
		}
	}
	_, err = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				w.ips.release(pod.UID)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("node %s: pod informer: %w", a.c.Name, err)
	}
	return w, nil
}

func (w *podWorker) run(ctx context.Context) {
	defer w.queue.ShutDown()
	w.factory.Start(ctx.Done())
	defer w.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), w.synced) {
		return
	}
	var wg sync.WaitGroup
	for range podWorkers {
		wg.Go(func() {
			for w.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
}

func (w *podWorker) next(ctx context.Context) bool {
	key, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(key)
	after, err := w.sync(ctx, key)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			w.a.log.Warn("sync pod", "pod", key, "err", err)
		}
		w.queue.AddRateLimited(key)
	default:
		w.queue.Forget(key)
		if after > 0 {
			w.queue.AddAfter(key, after)
		}
	}
	return true
}

// sync brings one pod's state forward, and says when to look at it again,
// if a deadline of its own is pending.
func (w *podWorker) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pod, err := w.lister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if pod.Spec.NodeName != w.a.c.Name {
		return 0, nil
	}
	now := w.a.clock.Now()
	if pod.DeletionTimestamp != nil {
		return w.terminate(ctx, pod, now)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0, nil
	}
	status, after := w.desired(pod, now)
	if apiequality.Semantic.DeepEqual(&pod.Status, status) {
		return after, nil
	}
	updated := pod.DeepCopy()
	updated.Status = *status
	if _, err := w.a.cs.CoreV1().Pods(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, err
	}
	return after, nil
}

// terminate deletes a gracefully deleted pod once its grace period, which
// ends at its deletionTimestamp, has passed, as the kubelet does when its
// containers have stopped.
func (w *podWorker) terminate(ctx context.Context, pod *corev1.Pod, now time.Time) (time.Duration, error) {
	if left := pod.DeletionTimestamp.Sub(now); left > 0 {
		return left, nil
	}
	err := w.a.cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return 0, err
	}
	w.ips.release(pod.UID)
	return 0, nil
}

// desired is pod's status as the node runs it at now, and how long until
// it next changes on its own (0: not by itself).
func (w *podWorker) desired(pod *corev1.Pod, now time.Time) (*corev1.PodStatus, time.Duration) {
	s := pod.Status.DeepCopy()
	started := now
	if s.StartTime != nil {
		started = s.StartTime.Time
	} else {
		s.StartTime = ptr.To(metav1.NewTime(now))
	}
	host := w.a.c.Address.String()
	s.HostIP, s.HostIPs = host, []corev1.HostIP{{IP: host}}
	if s.PodIP == "" {
		if ip := w.ips.assign(pod.UID); ip != nil {
			s.PodIP, s.PodIPs = ip.String(), []corev1.PodIP{{IP: ip.String()}}
		}
	} else {
		w.ips.claim(pod.UID, net.ParseIP(s.PodIP))
	}

	// after is the soonest of its own deadlines: activeDeadlineSeconds,
	// and the end of its run for a pod that finishes.
	var after time.Duration
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil {
		after = started.Add(time.Duration(*d) * time.Second).Sub(now)
		if after <= 0 {
			finish(s, pod, now, corev1.PodFailed, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline", 137)
			return s, 0
		}
	}
	if runFor := pod.Annotations[RunForAnnotation]; runFor != "" && pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		d, err := time.ParseDuration(runFor)
		if err != nil || d < 0 {
			finish(s, pod, now, corev1.PodFailed, "InvalidRunFor", fmt.Sprintf("annotation %s=%q: want a duration such as 30s", RunForAnnotation, runFor), 1)
			return s, 0
		}
		left := started.Add(d).Sub(now)
		if left <= 0 {
			finish(s, pod, now, corev1.PodSucceeded, "", "", 0)
			return s, 0
		}
		if after == 0 || left < after {
			after = left
		}
	}
	s.Phase = corev1.PodRunning
	s.Reason, s.Message = "", ""
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		setCondition(s, t, corev1.ConditionTrue, "", now)
	}
	s.InitContainerStatuses = containerStatuses(s.InitContainerStatuses, pod.Spec.InitContainers, pod.UID, func(c *corev1.ContainerStatus) {
		c.Ready, c.Started = false, ptr.To(false)
		if c.State.Terminated == nil {
			c.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(started)}}
		}
	})
	s.ContainerStatuses = containerStatuses(s.ContainerStatuses, pod.Spec.Containers, pod.UID, func(c *corev1.ContainerStatus) {
		c.Ready, c.Started = true, ptr.To(true)
		if c.State.Running == nil {
			c.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}
		}
	})
	return s, after
}

// finish makes s a finished pod's status: phase, reason, and every
// container terminated with exitCode.
func finish(s *corev1.PodStatus, pod *corev1.Pod, now time.Time, phase corev1.PodPhase, reason, message string, exitCode int32) {
	s.Phase, s.Reason, s.Message = phase, reason, message
	condReason := "PodCompleted"
	if phase == corev1.PodFailed {
		condReason = "PodFailed"
	}
	for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		setCondition(s, t, corev1.ConditionFalse, condReason, now)
	}
	setCondition(s, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", now)
	containerReason := "Completed"
	if exitCode != 0 {
		containerReason = "Error"
	}
	started := s.StartTime.Time
	s.ContainerStatuses = containerStatuses(s.ContainerStatuses, pod.Spec.Containers, pod.UID, func(c *corev1.ContainerStatus) {
		c.Ready, c.Started = false, ptr.To(false)
		c.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exitCode, Reason: containerReason, StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(now),
		}}
	})
}

// setCondition sets the condition of type t in s, keeping its transition
// time when its status does not change.
func setCondition(s *corev1.PodStatus, t corev1.PodConditionType, status corev1.ConditionStatus, reason string, now time.Time) {
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.Status, c.LastTransitionTime = status, metav1.NewTime(now)
		}
		c.Reason = reason
		return
	}
	s.Conditions = append(s.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(now)})
}

// containerStatuses are the statuses of containers, in their order, each
// from have where it is there, changed by set.
func containerStatuses(have []corev1.ContainerStatus, containers []corev1.Container, uid types.UID, set func(*corev1.ContainerStatus)) []corev1.ContainerStatus {
	if len(containers) == 0 {
		return have
	}
	out := make([]corev1.ContainerStatus, len(containers))
	for i, c := range containers {
		out[i] = corev1.ContainerStatus{Name: c.Name}
		for _, h := range have {
			if h.Name == c.Name {
				out[i] = *h.DeepCopy()
			}
		}
		out[i].Image = c.Image
		out[i].ContainerID = fmt.Sprintf("none://%s/%s", uid, c.Name)
		set(&out[i])
	}
	return out
}

// podIPs hands out the addresses of a node's pod CIDR, one per pod.
type podIPs struct {
	mu    sync.Mutex
	base  uint32
	size  uint32
	byUID map[types.UID]uint32
	used  map[uint32]bool
	next  uint32
}

func newPodIPs(cidr *net.IPNet) (*podIPs, error) {
	ip4 := cidr.IP.To4()
	ones, bits := cidr.Mask.Size()
	if ip4 == nil || bits != 32 || ones > 30 {
		return nil, fmt.Errorf("pod CIDR %s: want an IPv4 range of at least 4 addresses", cidr)
	}
	return &podIPs{
		base:  binary.BigEndian.Uint32(ip4),
		size:  1 << (32 - ones),
		byUID: map[types.UID]uint32{},
		used:  map[uint32]bool{},
	}, nil
}

// assign gives uid an address (the range's first and last are not
// given), or nil when the range is full.
func (p *podIPs) assign(uid types.UID) net.IP {
	p.mu.Lock()
	defer p.mu.Unlock()
	if off, ok := p.byUID[uid]; ok {
		return p.ip(off)
	}
	for range p.size {
		p.next = p.next%(p.size-2) + 1
		if !p.used[p.next] {
			p.used[p.next], p.byUID[uid] = true, p.next
			return p.ip(p.next)
		}
	}
	return nil
}

// claim marks ip as uid's, as the node finds it reported.
func (p *podIPs) claim(uid types.UID, ip net.IP) {
	ip4 := ip.To4()
	if ip4 == nil {
		return
	}
	off := binary.BigEndian.Uint32(ip4) - p.base
	if off == 0 || off >= p.size-1 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.byUID[uid]; !ok {
		p.used[off], p.byUID[uid] = true, off
	}
}

func (p *podIPs) release(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if off, ok := p.byUID[uid]; ok {
		delete(p.used, off)
		delete(p.byUID, uid)
	}
}

func (p *podIPs) ip(off uint32) net.IP {
	out := make(net.IP, 4)
	binary.BigEndian.PutUint32(out, p.base+off)
	return out
}
