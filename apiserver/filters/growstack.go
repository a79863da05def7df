package filters

// growStack grows the calling goroutine's stack in one step to what a
// request needs. A request runs on a fresh goroutine whose small stack
// would otherwise double several times on the way down the pipeline, and
// every doubling copies the whole stack: in a Secret create that copying
// was 6% of the server's CPU. CockroachDB's growstack does the same.
//
// deep is for a request whose admission evaluates Rego policies: OPA's
// evaluator recurses deeply (see evalStack in admission/opa), and grows
// the stack to 256 KiB if nothing did before. Grown there, below the whole
// pipeline and handler, the copy adjusts every frame above it: ~15 µs of
// a Secret create's CPU. Grown here, it copies a few.
//
//go:noinline
func growStack(deep bool) {
	if deep {
		growDeep(false)
		return
	}
	var buf [stackBytes]byte
	use(buf[:])
}

const (
	stackBytes = 32 << 10
	// deepStackBytes is admission/opa's evalStack.
	deepStackBytes = 128 << 10
)

// growDeep grows the stack by deepStackBytes without clearing them, as
// admission/opa's growStack does: its frame is declared only when touch,
// which no caller passes.
//
//go:noinline
func growDeep(touch bool) {
	if touch {
		var frame [deepStackBytes]byte
		use(frame[:])
	}
}

//go:noinline
func use([]byte) {}
