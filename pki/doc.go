// Package pki issues and stores the certificates of trustplane's trust
// domains with cfssl.
//
// There are two certificate authorities, each its own trust domain: the
// cluster CA, which signs the API server's serving certificate and the client
// certificates of users and components, and the etcd CA, which signs etcd's
// serving and peer certificates and the API server's etcd client certificate.
// A certificate from one domain is never accepted by the other.
//
// Every leaf is issued for exactly one use (Server, Client or Peer); there is
// no profile that allows more than its link needs. Keys are ECDSA P-256,
// written 0600 in directories of 0700, and an existing file is never
// overwritten.
package pki
