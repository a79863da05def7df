package controllers

import (
	"sync"
	"time"
)

// expectationsTimeout is how long a controller waits for its informer to
// observe what it wrote before acting on the object again anyway: a watch
// event lost for good (it does not happen, but a relist could merge it
// away) must not stall the object forever. kube's value.
const expectationsTimeout = 5 * time.Minute

// expectations record, per controller key, the pod creations and
// deletions a controller has made and its informer has not yet observed,
// as kube's (UID-tracking) ControllerExpectations do. Until they are
// observed, the controller's view of the pods lags its own writes: acting
// on that view would create (or delete) again what it just did. So a key
// with pending expectations is not managed, only its status is written.
//
// Creations are counted, since a pod's name is known only once created,
// and a creation observed twice cannot happen (an add is an add).
// Deletions are tracked by pod key, because the informer may see one
// deletion twice: as the update that sets deletionTimestamp, then as
// the delete.
//
// The zero value is not usable; use newExpectations. Safe for concurrent
// use.
type expectations struct {
	now func() time.Time

	mu sync.Mutex
	// byKey is guarded by mu.
	byKey map[string]*expected
}

// expected is one key's pending writes.
type expected struct {
	creations int
	deletions map[string]bool
	// since is when they were set, for the timeout.
	since time.Time
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, byKey: map[string]*expected{}}
}

// satisfied reports whether key may be managed: nothing is pending, or
// what is pending has waited longer than expectationsTimeout.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.byKey[key]
	if !ok {
		// Never set, or deleted with its object: nothing to wait for.
		return true
	}
	return x.creations <= 0 && len(x.deletions) == 0 || e.now().Sub(x.since) > expectationsTimeout
}

// expectCreations records that n pods are about to be created for key,
// replacing what was pending (only a satisfied key is managed).
func (e *expectations) expectCreations(key string, n int) {
	e.expect(key, n, nil)
}

// expectDeletions records that the pods podKeys are about to be deleted
// for key, replacing what was pending.
func (e *expectations) expectDeletions(key string, podKeys []string) {
	e.expect(key, 0, podKeys)
}

// expect records that n pods are about to be created and the pods
// podKeys deleted for key, replacing what was pending: for a controller
// that does both in one sync.
func (e *expectations) expect(key string, n int, podKeys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expected{creations: n, deletions: make(map[string]bool, len(podKeys)), since: e.now()}
	for _, k := range podKeys {
		x.deletions[k] = true
	}
	e.byKey[key] = x
}

// creationObserved lowers key's pending creations by one: the informer
// saw one, or one will never come (its create failed, or was skipped).
func (e *expectations) creationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.byKey[key]; ok && x.creations > 0 {
		x.creations--
	}
}

// deletionObserved removes the pod podKey from key's pending deletions;
// a pod not pending (observed already, or deleted by someone else) is
// ignored.
func (e *expectations) deletionObserved(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.byKey[key]; ok {
		delete(x.deletions, podKey)
	}
}

// forget drops key's expectations, once its object is gone.
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, key)
}
