// Package node is the node agent: the control-plane side of a kubelet,
// without a container runtime.
//
// A node earns its identity as kube's do. It checks the cluster CA against
// the pin that `trustplane token create` printed (kubeadm join's
// --discovery-token-ca-cert-hash), generates its key, and submits a
// CertificateSigningRequest for CN=system:node:<name>, O=system:nodes with
// the bootstrap token, the one thing that token is used for. Once the
// controller manager's approver and signer have issued the certificate,
// the node talks only with it and writes the token nowhere. client-go's
// certificate manager, the kubelet's, keeps the certificate in the node's
// directory and renews it through a new CSR, under the node's own
// identity, at 70–90% of its lifetime.
//
// With its certificate the node registers its Node (capacity, allocatable,
// labels, addresses, conditions, pod CIDR), renews its Lease in
// kube-node-lease as the kubelet does (component-helpers' lease
// controller: 40 s, renewed every 10 s), and reports its status when it
// changes and at least every five minutes. It reports the pods bound to it
// as running, and as Succeeded or Failed when they finish; it deletes a
// gracefully deleted pod once its grace period ends. The Node authorizer
// and NodeRestriction limit it to its own Node, Lease and pods.
//
// There are no containers: a pod "runs" as soon as it is bound. A pod
// whose restartPolicy is not Always finishes when the duration in its
// RunForAnnotation has passed since it started; activeDeadlineSeconds
// fails it, as the kubelet does. Pod addresses come from the node's pod
// CIDR; they are reported, not routed.
//
// Like the scheduler and the controllers, the agent is only a client: it
// imports neither the API server nor etcd (DESIGN.md, rule 1;
// cmd/trustplane's TestClientsReachNoServer).
package node
