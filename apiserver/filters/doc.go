// Package filters holds the HTTP filters of the API server's request
// pipeline, one per file, each an exported WithX(next, deps...) that either
// refuses the request with a metav1.Status or passes it on with what it
// learned in the context. The root package's chain.go builds them into the
// pipeline, in execution order, in one function.
package filters
