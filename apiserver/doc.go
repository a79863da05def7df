// Package apiserver is trustplane's Kubernetes-compatible API server. Its
// request pipeline reads from two functions:
//
//   - Server.pipeline (chain.go): the filters every request passes, in
//     execution order: panic recovery, request info, authentication,
//     audit, impersonation, authorization, limits (package filters);
//   - Handler.write (handlers/write.go): the one path every write takes,
//     whatever its verb or subresource: decode → defaults → mutating
//     admission → validation → validating admission → storage.
//
// The served resources and their strategies are package registry's; the
// answers are written by package responses. This package holds the server
// itself: its options and configuration, the pipeline, discovery, the
// OpenAPI documents, the admission chains, the bootstrap objects and the
// readers that give the authorizers and admission plugins the watch
// caches.
package apiserver
