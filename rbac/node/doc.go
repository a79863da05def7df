// Package node is trustplane's Node authorizer: what a node agent, the
// identity "system:node:<name>" in group "system:nodes", may do through the
// API. It follows kube-apiserver's Node authorizer
// (plugin/pkg/auth/authorizer/node) and the NodeRules of its bootstrap
// policy, re-implemented here and cut to the resources trustplane serves.
//
// A node may read a Secret or ConfigMap, or ask for a ServiceAccount token,
// only when a pod bound to it (spec.nodeName) refers to that object; it may
// use only its own Lease in kube-node-lease. Everything else it may do is a
// fixed list of rules (its Node, pods, pod status, events, token and access
// reviews), and the NodeRestriction admission plugin (package admission)
// narrows the writes among them to the node's own objects. The two are one
// policy: the authorizer alone lets a node write any Node and any pod
// status.
//
// The [Authorizer] keeps no graph, unlike kube's: it asks a [PodLister] for
// the pods on the node at every decision, so a pod bound or deleted takes
// effect on the next request. It decides only for node identities and never
// denies: for any other user, and for a node request outside its rules, it
// has no opinion, so that the API server's union goes on to RBAC, where an
// administrator may grant a node more. A PodLister error is returned with no
// opinion, never turned into an allow.
//
// Mirror pods (annotation kubernetes.io/config.mirror) are created by the
// node itself, so they relate it to nothing: a node may not read a Secret
// or get a token through a pod it made up. NodeRestriction refuses mirror
// pods that refer to Secrets, ConfigMaps or ServiceAccounts as well.
//
// Typical use, with pods reading the API server's watch cache:
//
//	nodes, err := node.New(pods)
//	if err != nil {
//		return err
//	}
//	// union: nodes first, then RBAC
//	decision, reason, err := nodes.Authorize(ctx, attrs)
package node
