package opa

// evalStack is the stack an evaluation of a policy set may need. OPA's
// evaluator is recursive: each expression and each rule reference of the
// decision query runs inside the continuation of the one before. An
// evaluation of the shipped library for a Secret create reached between
// 128 and 256 KiB of stack with all its policies in one query; with the
// merged rule of its kind and operation (see mergeRules) it reaches 32 to
// 64 KiB, and up to 128 KiB where secrets_kube_system's message is made.
// A request's goroutine starts with a few KiB, and the runtime grows a
// stack by copying it to one twice as large, adjusting every frame: five
// times per request, the last ones with hundreds of OPA's frames on the
// stack. That cost as much as the evaluation itself (a Secret create
// through the API server: ~300 µs of stack copying and ~100 µs of
// evaluation per request).
const evalStack = 128 << 10

// GrowStack grows the calling goroutine's stack to hold an evaluation. A
// caller that evaluates policies deep in its stack calls it first, near
// the top, where the runtime's copy moves a few frames: grown on entry to
// the evaluation, below the API server's whole pipeline and handler, the
// copy adjusted every frame above, ~15 µs of a Secret create's CPU. The
// API server grows a write's stack so before its pipeline; Eval's own
// growStack is then free.
func GrowStack() { growStack(false) }

// growStack grows the calling goroutine's stack to hold an evaluation:
// one copy instead of several, each of more frames. Its frame is evalStack
// bytes, which the runtime makes room for at once, on entry. The frame is
// never written: the array in it is declared, and so cleared, only when
// touch is true, which no caller passes, so that a call costs the growth
// and not the clearing of 128 KiB too (a profile of Secret creates put
// growStack, clearing included, at a third of the stage's own time;
// without the clearing the difference was within the benchmarks' noise).
// Not inlined, the compiler cannot know touch, and keeps the frame.
//
//go:noinline
func growStack(touch bool) {
	if touch {
		var frame [evalStack]byte
		lastByte(frame[:])
	}
}

// lastByte reads frame, so that growStack's frame is not optimised away.
//
//go:noinline
func lastByte(frame []byte) byte { return frame[len(frame)-1] }
