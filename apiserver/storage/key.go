package storage

import "k8s.io/apimachinery/pkg/runtime/schema"

// Prefix is the root of every key.
const Prefix = "/registry/"

// Key is the etcd key of an object; namespace is empty for cluster-scoped
// resources.
func Key(gr schema.GroupResource, namespace, name string) string {
	if namespace == "" {
		return Prefix + gr.Resource + "/" + name
	}
	return Prefix + gr.Resource + "/" + namespace + "/" + name
}

// ListPrefix is the key prefix of a resource's objects, in one namespace
// or, with namespace empty, in all of them.
func ListPrefix(gr schema.GroupResource, namespace string) string {
	if namespace == "" {
		return Prefix + gr.Resource + "/"
	}
	return Prefix + gr.Resource + "/" + namespace + "/"
}
