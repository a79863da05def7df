// Package serviceaccount issues and verifies ServiceAccount tokens in the
// format kube-apiserver uses for bound, projected tokens: ES256-signed JWTs
// whose "kubernetes.io" claim names the namespace, the service account and,
// for a bound token, the Pod, Secret or Node the token is bound to.
//
// An [Issuer] signs with the cluster's service account key (DIR/pki/sa.key);
// a [Verifier] checks tokens against one or more public keys (DIR/pki/sa.pub,
// plus old keys while they rotate out). Both are built once and are safe for
// concurrent use.
//
// Verification is cryptographic and syntactic only. Whether the service
// account and the bound object still exist with the UIDs in the token is for
// the API server to check against its caches; this package does no lookups
// and keeps no cache.
//
// Every error from [Verifier.Verify] says why the token was refused, for the
// log. It is never for the client, which gets a bare 401, and it never
// contains the token. Hold tokens in a [Token] so that they redact themselves
// when formatted or logged.
package serviceaccount
