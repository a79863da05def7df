package opa

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// evalCancel stops an evaluation when its context is done or its time is
// up: OPA's evaluator asks Cancelled before each expression. It replaces
// a context.WithTimeout and a context.AfterFunc per evaluation (a timer,
// two contexts, their channel and the parent's map of children: ten
// allocations, a kilobyte of a Secret create's thirteen). The context
// builtins see has no deadline: none of those policies may call waits on
// I/O (see Capabilities). It is pooled with its timer.
type evalCancel struct {
	cancelled atomic.Bool
	timedOut  atomic.Bool
	// done is the evaluation's context's Done: nil for a context that is
	// never done.
	done  <-chan struct{}
	timer *time.Timer
	armed bool
}

var evalCancels = sync.Pool{New: func() any {
	c := &evalCancel{}
	c.timer = time.AfterFunc(time.Hour, c.expire)
	c.timer.Stop()
	return c
}}

// startCancel is the cancel of an evaluation under ctx, within timeout
// if it is positive; release gives it back.
func startCancel(ctx context.Context, timeout time.Duration) *evalCancel {
	c := evalCancels.Get().(*evalCancel)
	c.done = ctx.Done()
	if timeout > 0 {
		c.timer.Reset(timeout)
		c.armed = true
	}
	return c
}

// release stops c's timer and pools c, unless the timer has fired: its
// function may then still be about to run, and would cancel the next
// evaluation that took c.
func (c *evalCancel) release() {
	if c.armed && !c.timer.Stop() {
		return
	}
	c.armed, c.done = false, nil
	c.cancelled.Store(false)
	evalCancels.Put(c)
}

func (c *evalCancel) expire() {
	c.timedOut.Store(true)
	c.cancelled.Store(true)
}

// Cancel stops the evaluation (topdown.Cancel).
func (c *evalCancel) Cancel() { c.cancelled.Store(true) }

// Cancelled reports whether the evaluation is to stop (topdown.Cancel).
func (c *evalCancel) Cancelled() bool {
	if c.cancelled.Load() {
		return true
	}
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// errTimedOut is an evaluation stopped by its timeout.
var errTimedOut = errors.New("the policies' evaluation timed out")
