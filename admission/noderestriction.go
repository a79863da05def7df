package admission

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	nodeauthz "github.com/trustplane/trustplane/rbac/node"
)

// PodGetter reads a pod; a missing one is an API NotFound error.
type PodGetter interface {
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// NodeRestriction limits what node identities may write, as kube's
// NodeRestriction admission plugin. The Node authorizer (package
// rbac/node) lets a node write Nodes, pods, pod status and Leases at all;
// this plugin narrows those writes to the node's own objects:
//
//   - nodes: only the Node named like the node, which may not set
//     spec.configSource, change its taints after creation, or add, change
//     or remove labels under node-restriction.kubernetes.io, nor labels
//     under kubernetes.io or k8s.io other than the ones a kubelet sets
//     (kubernetes.io/hostname, topology, instance type, os, arch, and
//     [*.]kubelet.kubernetes.io and [*.]node.kubernetes.io), so that it
//     cannot steer workloads to itself;
//   - pods: create only mirror pods bound to itself that refer to no
//     Secret, ConfigMap, ServiceAccount, volume claim or resource claim;
//     delete only pods bound to itself; update only the status of pods
//     bound to itself, leaving spec, labels and owners alone;
//   - leases: only kube-node-lease/<node>;
//   - serviceaccounts/token: only tokens bound to a pod on the node that
//     runs as that service account.
//
// Other users, and other resources (events among them), are untouched. A
// node identity whose name is empty is refused everything.
type NodeRestriction struct {
	*admission.Handler
	pods PodGetter
}

var _ admission.ValidationInterface = (*NodeRestriction)(nil)

// NewNodeRestriction returns the plugin; pods must not be nil.
func NewNodeRestriction(pods PodGetter) (*NodeRestriction, error) {
	if pods == nil {
		return nil, errors.New("node restriction admission: pod getter is nil")
	}
	return &NodeRestriction{
		Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete),
		pods:    pods,
	}, nil
}

var (
	nodesResource           = schema.GroupResource{Resource: "nodes"}
	podsResource            = schema.GroupResource{Resource: "pods"}
	serviceAccountsResource = schema.GroupResource{Resource: "serviceaccounts"}
	leasesResource          = schema.GroupResource{Group: coordinationv1.GroupName, Resource: "leases"}
)

// Validate implements admission.ValidationInterface.
func (p *NodeRestriction) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	nodeName, isNode := nodeauthz.NodeName(a.GetUserInfo())
	if !isNode {
		return nil
	}
	if nodeName == "" {
		return admission.NewForbidden(a, fmt.Errorf("could not determine node from user %q", a.GetUserInfo().GetName()))
	}
	switch a.GetResource().GroupResource() {
	case nodesResource:
		return admitNode(nodeName, a)
	case podsResource:
		switch a.GetSubresource() {
		case "":
			return p.admitPod(ctx, nodeName, a)
		case "status":
			return p.admitPodStatus(ctx, nodeName, a)
		}
		return admission.NewForbidden(a, fmt.Errorf("unexpected pod subresource %q, only 'status' is allowed", a.GetSubresource()))
	case leasesResource:
		return admitLease(nodeName, a)
	case serviceAccountsResource:
		if a.GetSubresource() == "token" {
			return p.admitToken(ctx, nodeName, a)
		}
	}
	return nil
}

// admitNode lets a node write only its own Node, in every subresource.
func admitNode(nodeName string, a admission.Attributes) error {
	if err := requireName(a, nodeName, func(name string) error {
		return fmt.Errorf("node %q is not allowed to modify node %q", nodeName, name)
	}); err != nil {
		return err
	}
	switch a.GetOperation() {
	case admission.Delete:
		// The Node authorizer grants no delete of nodes; were it
		// granted, a node could shed, by registering again, the taints,
		// cordon and labels an admin set on it.
		return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to delete nodes", nodeName))
	case admission.Create:
		n, ok := a.GetObject().(*corev1.Node)
		if !ok {
			return unexpectedObject(a, a.GetObject())
		}
		// Access to objects is scoped by what the Node lists; a config
		// source chosen by the node would widen what it may read.
		if n.Spec.ConfigSource != nil {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to create a node with a non-nil configSource", nodeName))
		}
		if bad := forbiddenLabels(n.Labels, nil); len(bad) > 0 {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to set the following labels: %s", nodeName, strings.Join(bad, ", ")))
		}
	case admission.Update:
		n, ok := a.GetObject().(*corev1.Node)
		if !ok {
			return unexpectedObject(a, a.GetObject())
		}
		old, ok := a.GetOldObject().(*corev1.Node)
		if !ok {
			return unexpectedObject(a, a.GetOldObject())
		}
		if n.Spec.ConfigSource != nil && !apiequality.Semantic.DeepEqual(n.Spec.ConfigSource, old.Spec.ConfigSource) {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", nodeName))
		}
		// A node that could drop its taints would draw workloads that
		// are kept away from it. It sets them when it registers.
		if !apiequality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to modify taints", nodeName))
		}
		if bad := forbiddenLabels(n.Labels, old.Labels); len(bad) > 0 {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to modify labels: %s", nodeName, strings.Join(bad, ", ")))
		}
	}
	return nil
}

// Label domains a node may set on itself under kubernetes.io and k8s.io,
// as kubelet's well-known labels.
var (
	kubeletLabels = []string{
		corev1.LabelHostname,
		corev1.LabelTopologyZone,
		corev1.LabelTopologyRegion,
		corev1.LabelFailureDomainBetaZone,
		corev1.LabelFailureDomainBetaRegion,
		corev1.LabelInstanceType,
		corev1.LabelInstanceTypeStable,
		corev1.LabelOSStable,
		corev1.LabelArchStable,
		"beta.kubernetes.io/os",
		"beta.kubernetes.io/arch",
		corev1.LabelWindowsBuild,
	}
	kubeletLabelDomains = []string{corev1.LabelNamespaceSuffixKubelet, corev1.LabelNamespaceSuffixNode}
)

// forbiddenLabels returns, sorted, the label keys that differ between
// labels and old (added, changed or removed) and that a node may not set:
// those under node-restriction.kubernetes.io, which administrators use to
// steer workloads to trusted nodes, and those under kubernetes.io or k8s.io
// that kubelet does not set itself (node-role.kubernetes.io/control-plane
// among them).
func forbiddenLabels(labels, old map[string]string) []string {
	var bad []string
	for key := range changedKeys(labels, old) {
		if forbiddenLabel(key) {
			bad = append(bad, key)
		}
	}
	slices.Sort(bad)
	return bad
}

func changedKeys(labels, old map[string]string) map[string]bool {
	changed := map[string]bool{}
	for k, v := range labels {
		if ov, ok := old[k]; !ok || ov != v {
			changed[k] = true
		}
	}
	for k := range old {
		if _, ok := labels[k]; !ok {
			changed[k] = true
		}
	}
	return changed
}

func forbiddenLabel(key string) bool {
	prefix, _, hasPrefix := strings.Cut(key, "/")
	// Domains are compared case-insensitively so that a key validation has
	// not yet refused cannot slip past.
	prefix = strings.ToLower(prefix)
	if inDomain(prefix, corev1.LabelNamespaceNodeRestriction) {
		return true
	}
	if !hasPrefix {
		return false
	}
	if !inDomain(prefix, "kubernetes.io") && !inDomain(prefix, "k8s.io") {
		return false
	}
	if slices.Contains(kubeletLabels, key) {
		return false
	}
	for _, d := range kubeletLabelDomains {
		if inDomain(prefix, d) {
			return false
		}
	}
	return true
}

// inDomain reports whether name is domain or a subdomain of it.
func inDomain(name, domain string) bool {
	return name == domain || strings.HasSuffix(name, "."+domain)
}

// admitPod lets a node create mirror pods of its own and delete pods bound
// to it; it may not update a pod's spec.
func (p *NodeRestriction) admitPod(ctx context.Context, nodeName string, a admission.Attributes) error {
	switch a.GetOperation() {
	case admission.Create:
		pod, ok := a.GetObject().(*corev1.Pod)
		if !ok {
			return unexpectedObject(a, a.GetObject())
		}
		if err := mirrorPodErr(nodeName, pod); err != nil {
			return admission.NewForbidden(a, err)
		}
		return nil
	case admission.Delete:
		pod, err := p.existingPod(ctx, a)
		if err != nil {
			return err
		}
		if pod.Spec.NodeName != nodeName {
			return admission.NewForbidden(a, fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", nodeName))
		}
		return nil
	}
	return admission.NewForbidden(a, fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.GetOperation(), nodeName))
}

// mirrorPodErr says why a node may not create pod, or is nil. A mirror
// pod is made up by the node, so it may carry nothing that the Node
// authorizer would take for a relationship, nor claim anything.
func mirrorPodErr(nodeName string, pod *corev1.Pod) error {
	if _, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]; !ok {
		return fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, nodeName)
	}
	if pod.Spec.NodeName != nodeName {
		return fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", nodeName)
	}
	switch len(pod.OwnerReferences) {
	case 0:
	case 1:
		// kube also checks the Node's UID here; at worst a wrong UID
		// lets the garbage collector delete the node's own mirror pod.
		o := pod.OwnerReferences[0]
		if o.APIVersion != "v1" || o.Kind != "Node" || o.Name != nodeName {
			return fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName)
		}
		if o.Controller == nil || !*o.Controller {
			return fmt.Errorf("node %q can only create pods with a controller owner reference set to itself", nodeName)
		}
		if o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion {
			return fmt.Errorf("node %q must not set blockOwnerDeletion on an owner reference", nodeName)
		}
	default:
		return fmt.Errorf("node %q can only create pods with a single owner reference set to itself", nodeName)
	}
	if pod.Spec.ServiceAccountName != "" || pod.Spec.DeprecatedServiceAccount != "" {
		return fmt.Errorf("node %q can not create pods that reference a service account", nodeName)
	}
	refs := nodeauthz.References(pod)
	if len(refs.Secrets) > 0 {
		return fmt.Errorf("node %q can not create pods that reference secrets", nodeName)
	}
	if len(refs.ConfigMaps) > 0 {
		return fmt.Errorf("node %q can not create pods that reference configmaps", nodeName)
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return fmt.Errorf("node %q can not create pods that reference persistentvolumeclaims", nodeName)
		}
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			switch {
			case s.ServiceAccountToken != nil:
				return fmt.Errorf("node %q can not create pods that use service account tokens", nodeName)
			case s.ClusterTrustBundle != nil:
				return fmt.Errorf("node %q can not create pods that use clustertrustbundles", nodeName)
			case s.PodCertificate != nil:
				return fmt.Errorf("node %q can not create pods that use pod certificates", nodeName)
			}
		}
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return fmt.Errorf("node %q can not create pods that reference resourceclaims", nodeName)
	}
	return nil
}

// admitPodStatus lets a node update the status of pods bound to it. A
// status write must leave the rest alone: the spec (which the Node
// authorizer reads for Secrets), labels (which select pods into Services)
// and owners. The API server's status strategy may already reset them;
// this does not depend on it.
func (p *NodeRestriction) admitPodStatus(ctx context.Context, nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Update {
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %q on pod status", a.GetOperation()))
	}
	old, err := p.existingPod(ctx, a)
	if err != nil {
		return err
	}
	if old.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", nodeName))
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return unexpectedObject(a, a.GetObject())
	}
	switch {
	case !maps.Equal(pod.Labels, old.Labels):
		return admission.NewForbidden(a, fmt.Errorf("node %q cannot update labels through pod status", nodeName))
	case !apiequality.Semantic.DeepEqual(pod.Spec, old.Spec):
		return admission.NewForbidden(a, fmt.Errorf("node %q cannot update the pod spec through pod status", nodeName))
	case !apiequality.Semantic.DeepEqual(pod.OwnerReferences, old.OwnerReferences):
		return admission.NewForbidden(a, fmt.Errorf("node %q cannot update owner references through pod status", nodeName))
	}
	return nil
}

// existingPod is the pod a delete or update is about: the old object the
// API server passed, or else the stored one.
func (p *NodeRestriction) existingPod(ctx context.Context, a admission.Attributes) (*corev1.Pod, error) {
	if old, ok := a.GetOldObject().(*corev1.Pod); ok && old != nil {
		return old, nil
	}
	return p.getPod(ctx, a.GetNamespace(), a.GetName())
}

func (p *NodeRestriction) getPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	pod, err := p.pods.Pod(ctx, namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return nil, err
	case err != nil:
		// Not an API error: the server logs the cause and answers a
		// generic 500.
		return nil, fmt.Errorf("node restriction admission: %w", err)
	case pod == nil:
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	return pod, nil
}

// admitLease lets a node use only its own Lease in kube-node-lease.
func admitLease(nodeName string, a admission.Attributes) error {
	if a.GetNamespace() != corev1.NamespaceNodeLease {
		return admission.NewForbidden(a, fmt.Errorf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease))
	}
	return requireName(a, nodeName, func(string) error {
		return errors.New("can only access node lease with the same name as the requesting node")
	})
}

// admitToken lets a node create a token only when it is bound to a pod on
// the node that runs as the service account: a token the node could carry
// past the pod's life, or mint for a pod elsewhere, would outlast or exceed
// what the node needs.
func (p *NodeRestriction) admitToken(ctx context.Context, nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create {
		return nil
	}
	tr, ok := a.GetObject().(*authenticationv1.TokenRequest)
	if !ok {
		return unexpectedObject(a, a.GetObject())
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return admission.NewForbidden(a, errors.New("node requested token not bound to a pod"))
	}
	if ref.UID == "" {
		return admission.NewForbidden(a, errors.New("node requested token with a pod binding without a uid"))
	}
	pod, err := p.getPod(ctx, a.GetNamespace(), ref.Name)
	if err != nil {
		return err
	}
	if ref.UID != pod.UID {
		return admission.NewForbidden(a, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record; the object might have been deleted and then recreated", ref.UID))
	}
	if pod.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, errors.New("node requested token bound to a pod scheduled on a different node"))
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror || nodeauthz.References(pod).ServiceAccount != a.GetName() {
		return admission.NewForbidden(a, fmt.Errorf("node requested token for service account %q bound to a pod that does not run as it", a.GetName()))
	}
	return nil
}

// requireName refuses the request unless it names want, by the request's
// name and by the object's when there is one: a create may carry its name
// only in the object, and an update must not rename.
func requireName(a admission.Attributes, want string, refuse func(name string) error) error {
	name := a.GetName()
	if obj := a.GetObject(); obj != nil {
		objName, err := objectName(obj)
		if err != nil {
			return unexpectedObject(a, obj)
		}
		if objName != want {
			return admission.NewForbidden(a, refuse(objName))
		}
		if name == "" && a.GetOperation() == admission.Create {
			name = objName
		}
	}
	if name != want {
		return admission.NewForbidden(a, refuse(name))
	}
	return nil
}

func objectName(obj any) (string, error) {
	switch o := obj.(type) {
	case *corev1.Node:
		return o.Name, nil
	case *coordinationv1.Lease:
		return o.Name, nil
	}
	return "", fmt.Errorf("unexpected object type %T", obj)
}

func unexpectedObject(a admission.Attributes, obj any) error {
	return admission.NewForbidden(a, fmt.Errorf("unexpected object type %T", obj))
}
