// Package e2e tests trustplane end to end: the real binary, built once from
// this module, runs `trustplane up` on loopback ports in a temporary data
// directory, and stock kubectl binaries of the Kubernetes versions we claim
// to support talk to it. Nothing here imports the server's packages; the
// tests see only what an operator sees: the command line, the kubeconfigs,
// the API and the files in the data directory. Building the binary and
// running it are e2etest's, which cmd/trustplane's end-to-end tests share.
//
// The kubectl binaries are looked up as kubectl.1.32 and kubectl.1.33 next
// to the file that `kubectl` on PATH resolves to, then on PATH. A missing
// one skips its tests, or fails them when CI=true.
//
// TestKwokNode runs kwok, a node simulator, against the cluster. It builds
// kwok with `go install` on first use, with kwok's own go.mod, into
// trustplane-test/kwok-<version> in the user's cache directory, where later
// runs find it. A kwok that cannot be built skips the test, or fails it
// when CI=true.
//
// The tests are skipped with -short.
package e2e
