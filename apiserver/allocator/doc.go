// Package allocator hands out the cluster IPs and node ports of Services,
// as kube-apiserver's bitmap allocators do: each range is one
// RangeAllocation record in etcd (/registry/ranges/serviceips and
// /registry/ranges/servicenodeports), a bitmap of what is taken, written
// in the same etcd transaction as the Service that takes or frees a share
// of it, held to the revision the bitmap was read at. A Service and the
// records therefore never disagree, and two API servers never hand out the
// same address: the one whose transaction loses reads the records again
// and picks again. Within one server a lock keeps its own writers from
// racing each other.
package allocator
