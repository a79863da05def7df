// Package kms is a KMS v2 plugin, as kube-apiserver's envelope encryption
// talks to one (the k8s.io/kms gRPC API over a Unix socket), whose
// key-encryption key is 32 random bytes in a 0600 file: AES-256-GCM with
// a random nonce seals each data-encryption key the API server sends.
//
// It lets a cluster use the KMS v2 provider from its first day, with a
// data key per generation, and later swap in a cloud or Vault plugin by
// changing the endpoint and rotating, without re-encrypting by hand.
//
// The key never leaves the plugin: not in its errors, its status (the key
// id is a one-way fingerprint), or its logs.
package kms
