// Package kms is a KMS v2 plugin, as kube-apiserver's envelope encryption
// talks to one (the k8s.io/kms gRPC API over a Unix socket), whose
// key-encryption keys are a 0600 file of 32-byte keys, one a line, the
// write key first: AES-256-GCM with a random nonce seals each
// data-encryption key the API server sends under the write key, and
// every key of the file opens what it sealed, told by its key id.
//
// Rotating the key-encryption key is what KMS v2 plugins do: a new key
// first in the file (RotateKeyFile), which the running plugin reloads, so
// that Status reports a new key id; the API server then makes a new data
// key under it, and what the old key sealed stays readable until the old
// key leaves the file (RemoveKey).
//
// It lets a cluster use the KMS v2 provider from its first day, with a
// data key per generation, and later swap in a cloud or Vault plugin by
// changing the endpoint and rotating, without re-encrypting by hand.
//
// The keys never leave the plugin: not in its errors, its status (a key
// id is a one-way fingerprint), or its logs.
package kms
