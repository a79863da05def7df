// Package admission holds trustplane's admission plugins. They implement
// k8s.io/apiserver's admission interfaces and run in the API server's verb
// handlers, after decoding: mutating plugins, then validation of the
// object, then validating plugins, then storage.
package admission
