// Package storage keeps API objects in etcd the way kube-apiserver does:
// one key per object at /registry/<resource>/[<namespace>/]<name>, encoded
// as Kubernetes protobuf, passed through the resource's encryption-at-rest
// transformer, with the etcd revision as resourceVersion and every write a
// compare-and-swap on the key's revision.
package storage
