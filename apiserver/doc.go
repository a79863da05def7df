// Package apiserver is trustplane's Kubernetes-compatible API server: an
// HTTPS server whose every request passes the same visible chain of
// filters (panic recovery, request info, authentication, audit,
// impersonation, authorization, limits); every write then takes one path,
// Server.write: decode → defaults → mutating admission → validation →
// validating admission → storage in etcd.
//
// The chain is built in one function, buildChain, in execution order; each
// filter is in its own file of package filters.
package apiserver
