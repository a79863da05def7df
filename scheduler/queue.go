package scheduler

import (
	"container/heap"
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// The queue's timings, kube-scheduler's defaults: the first retry after
// 1s, doubling to 10s; a pod nothing has moved for five minutes is tried
// again anyway, in case an event that would have moved it was missed.
const (
	defaultInitialBackoff   = time.Second
	defaultMaxBackoff       = 10 * time.Second
	maxUnschedulableWait    = 5 * time.Minute
	queueFlushPeriod        = time.Second
	unschedulableFlushEvery = 30 * time.Second
)

// queuedPod is a pod waiting for a node.
type queuedPod struct {
	pod *corev1.Pod
	// attempts counts the attempts to schedule it; the backoff doubles
	// with each.
	attempts    int
	added       time.Time // joined the active queue: its order within its priority
	lastAttempt time.Time
	// unschedulableSince: when it was put aside as fitting nowhere.
	unschedulableSince time.Time
	// updated: changed while it was being scheduled, so the attempt
	// judged an old pod.
	updated bool
	deleted bool
	index   int // in activeHeap; -1 when not in it
}

// schedulingQueue holds the pods that need a node, in three parts, as
// kube-scheduler's: active, ready to be tried, highest priority first;
// backoff, tried recently and waiting out their backoff; unschedulable,
// fitting nowhere at their last attempt and waiting for a change in the
// cluster (moveAll) to be tried again. A pod being scheduled is in
// flight, in none of them. It is safe for concurrent use.
type schedulingQueue struct {
	mu   sync.Mutex
	cond *sync.Cond // signalled when active gains a pod or the queue closes
	// Guarded by mu, as everything below.
	active        activeHeap
	backoff       map[types.UID]*queuedPod
	unschedulable map[types.UID]*queuedPod
	inFlight      map[types.UID]*queuedPod
	// all holds every pod above, active ones included, by UID.
	all map[types.UID]*queuedPod
	// cycle counts pops; moveCycle is the cycle at the last moveAll. A
	// pod whose attempt began before a move (cycle <= moveCycle) may fit
	// now, so it is not put aside as unschedulable.
	cycle, moveCycle int64
	closed           bool

	initialBackoff, maxBackoff time.Duration
	now                        func() time.Time
}

func newSchedulingQueue() *schedulingQueue {
	q := &schedulingQueue{
		backoff:        map[types.UID]*queuedPod{},
		unschedulable:  map[types.UID]*queuedPod{},
		inFlight:       map[types.UID]*queuedPod{},
		all:            map[types.UID]*queuedPod{},
		initialBackoff: defaultInitialBackoff,
		maxBackoff:     defaultMaxBackoff,
		now:            time.Now,
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// add queues a pod that needs a node, or updates it if queued.
func (q *schedulingQueue) add(pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp := q.all[pod.UID]; qp != nil {
		q.updateLocked(qp, pod)
		return
	}
	qp := &queuedPod{pod: pod, index: -1}
	q.all[pod.UID] = qp
	q.pushActive(qp)
}

// update replaces a queued pod with its new version. A pod put aside as
// unschedulable is tried again if its spec or metadata changed: the
// change may make it fit.
func (q *schedulingQueue) update(pod *corev1.Pod) { q.add(pod) }

func (q *schedulingQueue) updateLocked(qp *queuedPod, pod *corev1.Pod) {
	changed := specChanged(qp.pod, pod)
	qp.pod = pod
	uid := pod.UID
	switch {
	case q.inFlight[uid] != nil:
		qp.updated = qp.updated || changed
	case q.unschedulable[uid] != nil && changed:
		delete(q.unschedulable, uid)
		q.backoffOrActive(qp)
	case qp.index >= 0:
		heap.Fix(&q.active, qp.index)
	}
}

// specChanged: what the scheduler judges changed, not only the status or
// the bookkeeping of metadata.
func specChanged(old, pod *corev1.Pod) bool {
	strip := func(p *corev1.Pod) *corev1.Pod {
		c := *p
		c.ObjectMeta.ResourceVersion, c.ObjectMeta.Generation, c.ObjectMeta.ManagedFields = "", 0, nil
		c.Status = corev1.PodStatus{}
		return &c
	}
	return !equality.Semantic.DeepEqual(strip(old), strip(pod))
}

// remove drops a pod that was deleted or no longer needs a node.
func (q *schedulingQueue) remove(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	qp := q.all[uid]
	if qp == nil {
		return
	}
	if q.inFlight[uid] != nil {
		qp.deleted = true
		return
	}
	delete(q.all, uid)
	delete(q.backoff, uid)
	delete(q.unschedulable, uid)
	if qp.index >= 0 {
		heap.Remove(&q.active, qp.index)
	}
}

// pop waits for an active pod and returns it, in flight, with the cycle
// of its attempt; ok is false once the queue is closed.
func (q *schedulingQueue) pop() (qp *queuedPod, cycle int64, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.active) == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return nil, 0, false
	}
	qp = heap.Pop(&q.active).(*queuedPod)
	q.cycle++
	qp.attempts++
	qp.lastAttempt = q.now()
	qp.updated = false
	q.inFlight[qp.pod.UID] = qp
	return qp, q.cycle, true
}

// done ends the attempt of a pod that was assumed on a node, or needs
// none any more.
func (q *schedulingQueue) done(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.inFlight, uid)
	delete(q.all, uid)
}

// requeue ends a failed attempt begun in cycle. A pod that fit nowhere
// (unschedulable) waits for a change in the cluster, unless one came
// while it was being judged; one that failed otherwise, or changed
// meanwhile, is tried again after its backoff.
func (q *schedulingQueue) requeue(qp *queuedPod, cycle int64, unschedulable bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.inFlight, qp.pod.UID)
	if qp.deleted {
		delete(q.all, qp.pod.UID)
		return
	}
	if unschedulable && !qp.updated && q.moveCycle < cycle {
		qp.unschedulableSince = q.now()
		q.unschedulable[qp.pod.UID] = qp
		return
	}
	q.backoffOrActive(qp)
}

// moveAll tries again every pod put aside as unschedulable: something
// changed that may make them fit (a node added or changed, a pod gone).
func (q *schedulingQueue) moveAll() { q.moveWhere(nil) }

// moveWhere tries again the pods put aside as unschedulable that may
// fit after a change (all of them if may is nil).
func (q *schedulingQueue) moveWhere(may func(*corev1.Pod) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.moveCycle = q.cycle
	for uid, qp := range q.unschedulable {
		if may != nil && !may(qp.pod) {
			continue
		}
		delete(q.unschedulable, uid)
		q.backoffOrActive(qp)
	}
}

func (q *schedulingQueue) backoffOrActive(qp *queuedPod) {
	if q.now().Before(q.backoffExpiry(qp)) {
		q.backoff[qp.pod.UID] = qp
		return
	}
	q.pushActive(qp)
}

func (q *schedulingQueue) backoffExpiry(qp *queuedPod) time.Time {
	d := q.initialBackoff
	for i := 1; i < qp.attempts && d < q.maxBackoff; i++ {
		d *= 2
	}
	return qp.lastAttempt.Add(min(d, q.maxBackoff))
}

func (q *schedulingQueue) pushActive(qp *queuedPod) {
	qp.added = q.now()
	heap.Push(&q.active, qp)
	q.cond.Signal()
}

// flush moves the pods whose backoff is over to active, and those put
// aside as unschedulable for too long to backoff or active.
func (q *schedulingQueue) flush(unschedulableToo bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	for uid, qp := range q.backoff {
		if !now.Before(q.backoffExpiry(qp)) {
			delete(q.backoff, uid)
			q.pushActive(qp)
		}
	}
	if !unschedulableToo {
		return
	}
	for uid, qp := range q.unschedulable {
		if now.Sub(qp.unschedulableSince) > maxUnschedulableWait {
			delete(q.unschedulable, uid)
			q.backoffOrActive(qp)
		}
	}
}

// run flushes the queue periodically until ctx is done, then closes it.
func (q *schedulingQueue) run(ctx context.Context) {
	tick := time.NewTicker(queueFlushPeriod)
	defer tick.Stop()
	lastUnschedulableFlush := time.Now()
	for {
		select {
		case <-ctx.Done():
			q.close()
			return
		case now := <-tick.C:
			all := now.Sub(lastUnschedulableFlush) >= unschedulableFlushEvery
			if all {
				lastUnschedulableFlush = now
			}
			q.flush(all)
		}
	}
}

func (q *schedulingQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// activeHeap orders pods by priority, highest first, then by the time
// they joined.
type activeHeap []*queuedPod

func (h activeHeap) Len() int { return len(h) }
func (h activeHeap) Less(i, j int) bool {
	pi, pj := corev1helpers.PodPriority(h[i].pod), corev1helpers.PodPriority(h[j].pod)
	if pi != pj {
		return pi > pj
	}
	return h[i].added.Before(h[j].added)
}
func (h activeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *activeHeap) Push(x any) {
	qp := x.(*queuedPod)
	qp.index = len(*h)
	*h = append(*h, qp)
}
func (h *activeHeap) Pop() any {
	old := *h
	qp := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	qp.index = -1
	return qp
}
