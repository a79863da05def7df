package controllers

import (
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/util/flowcontrol"
)

// taintQueue is the nodes of one zone waiting for a NoExecute taint,
// first in first out, each once, taken no faster than its token bucket
// allows: kube's RateLimitedTimedQueue, which is what keeps a partition
// from emptying the cluster at once. Safe for concurrent use.
type taintQueue struct {
	mu sync.Mutex
	// limiter and pending are guarded by mu.
	limiter flowcontrol.RateLimiter
	pending []pendingNode
}

// pendingNode is a node waiting, not to be taken before at.
type pendingNode struct {
	name string
	at   time.Time
}

// taintBurst is the bucket's size: one node at a time, as kube's
// EvictionRateLimiterBurst.
const taintBurst = 1

func newTaintQueue(qps float32) *taintQueue {
	return &taintQueue{limiter: newTaintLimiter(qps)}
}

// newTaintLimiter is a token bucket of qps, or, at 0, one that never
// gives a token.
func newTaintLimiter(qps float32) flowcontrol.RateLimiter {
	if qps <= 0 {
		return flowcontrol.NewFakeNeverRateLimiter()
	}
	return flowcontrol.NewTokenBucketRateLimiter(qps, taintBurst)
}

// add queues a node, unless it is queued already; it reports whether it
// was not.
func (q *taintQueue) add(name string, at time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if slices.ContainsFunc(q.pending, func(p pendingNode) bool { return p.name == name }) {
		return false
	}
	q.pending = append(q.pending, pendingNode{name: name, at: at})
	return true
}

// remove takes a node out of the queue; it reports whether it was in.
func (q *taintQueue) remove(name string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.pending)
	q.pending = slices.DeleteFunc(q.pending, func(p pendingNode) bool { return p.name == name })
	return len(q.pending) != n
}

// next takes the first node whose time has come, if the bucket gives a
// token for it.
func (q *taintQueue) next(now time.Time) (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 || q.pending[0].at.After(now) || !q.limiter.TryAccept() {
		return "", false
	}
	name := q.pending[0].name
	q.pending = slices.Delete(q.pending, 0, 1)
	return name, true
}

// setRate changes the bucket's rate, 0 stopping the queue. A bucket that
// has no token now gives the new one none either, as kube's SwapLimiter:
// a change of rate does not let a node through early.
func (q *taintQueue) setRate(qps float32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.limiter.QPS() == qps {
		return
	}
	l := newTaintLimiter(qps)
	if qps > 0 && !q.limiter.TryAccept() {
		l.TryAccept()
	}
	q.limiter.Stop()
	q.limiter = l
}
