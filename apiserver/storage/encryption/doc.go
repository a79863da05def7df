// Package encryption inspects and rotates encryption at rest from outside
// the API server: it reads the EncryptionConfiguration file, scans the raw
// values in etcd over the API server's etcd identity, and tells which key
// protects each object by the prefix kube-apiserver's providers write
// (k8s:enc:aesgcm:v1:<key>:...), or that it is in plain text.
//
// Nothing here decrypts: the scan reads only the prefix of each value
// and, of a KMS v2 value, the key id kube's EncryptedObject holds in
// clear; no report, error or log carries a key's material or a value.
package encryption
