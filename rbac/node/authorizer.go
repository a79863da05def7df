package node

import (
	"context"
	"errors"
	"fmt"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// PodLister reads the pods bound to a node, live (the API server passes its
// watch cache). It returns the pods whose spec.nodeName is nodeName, in
// every namespace; the Authorizer checks spec.nodeName again and does not
// modify them. Implementations must be safe for concurrent use.
type PodLister interface {
	PodsOnNode(ctx context.Context, nodeName string) ([]*corev1.Pod, error)
}

// Authorizer decides the requests of node identities (see [NodeName]). It
// never denies: what it does not allow gets authorizer.DecisionNoOpinion, so
// that the union of authorizers goes on to RBAC. It is safe for concurrent
// use when its PodLister is.
type Authorizer struct {
	pods PodLister
	// rules is what a node may do to objects it need not be related to;
	// built by New, never written after.
	rules map[resource][]string
}

var _ authorizer.Authorizer = (*Authorizer)(nil)

// resource is a group, resource and subresource as a request names them.
type resource struct {
	group, resource, subresource string
}

var (
	secrets         = resource{group: corev1.GroupName, resource: "secrets"}
	configMaps      = resource{group: corev1.GroupName, resource: "configmaps"}
	serviceAccounts = resource{group: corev1.GroupName, resource: "serviceaccounts"}
	leases          = resource{group: coordinationv1.GroupName, resource: "leases"}
)

// New returns an authorizer that reads pods through pods; a nil pods is an
// error.
func New(pods PodLister) (*Authorizer, error) {
	if pods == nil {
		return nil, errors.New("node authorizer: nil pod lister")
	}
	return &Authorizer{pods: pods, rules: nodeRules()}, nil
}

// nodeRules are kube's bootstrap NodeRules, less the resources that
// trustplane does not serve and less Secrets, ConfigMaps, ServiceAccount
// tokens and Leases, which Authorize decides by relationship instead. The
// writes they allow are narrowed to the node's own objects by
// NodeRestriction.
func nodeRules() map[resource][]string {
	core, events := corev1.GroupName, "events.k8s.io"
	return map[resource][]string{
		// Registering and reporting: NodeRestriction limits writes to the
		// node's own Node. No delete, as kube's: a node that deleted its
		// Node could register it again without the taints, cordon and
		// labels an admin set on it.
		{group: core, resource: "nodes"}:                                       {"get", "list", "watch", "create", "update", "patch"},
		{group: core, resource: "nodes", subresource: "status"}:                {"update", "patch"},
		{group: core, resource: "pods"}:                                        {"get", "list", "watch", "create", "delete"}, // mirror pods only, by NodeRestriction
		{group: core, resource: "pods", subresource: "status"}:                 {"update", "patch"},                          // pods bound to the node, by NodeRestriction
		{group: core, resource: "events"}:                                      {"create", "update", "patch"},
		{group: events, resource: "events"}:                                    {"create", "update", "patch"},
		{group: "authentication.k8s.io", resource: "tokenreviews"}:             {"create"},
		{group: "authorization.k8s.io", resource: "subjectaccessreviews"}:      {"create"},
		{group: "authorization.k8s.io", resource: "localsubjectaccessreviews"}: {"create"},
	}
}

// Authorize implements authorizer.Authorizer.
//
// For a node identity it returns authorizer.DecisionAllow with a reason, or
// authorizer.DecisionNoOpinion with a reason saying what is missing when the
// request was of a kind the node authorizer decides. The error, only with
// NoOpinion, is a failure to read pods, for the log, not for the client. For
// any other user the answer is NoOpinion, "", nil.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs == nil {
		return authorizer.DecisionNoOpinion, "", errors.New("node authorizer: nil request attributes")
	}
	node, isNode := NodeName(attrs.GetUser())
	if !isNode {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if node == "" {
		return authorizer.DecisionNoOpinion, fmt.Sprintf("unknown node for user %q", attrs.GetUser().GetName()), nil
	}
	if !attrs.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	switch (resource{group: attrs.GetAPIGroup(), resource: attrs.GetResource()}) {
	case secrets:
		return a.authorizeRead(ctx, node, attrs, func(r Refs) []string { return r.Secrets })
	case configMaps:
		return a.authorizeRead(ctx, node, attrs, func(r Refs) []string { return r.ConfigMaps })
	case serviceAccounts:
		return a.authorizeToken(ctx, node, attrs)
	case leases:
		return authorizeLease(node, attrs)
	}
	r := resource{group: attrs.GetAPIGroup(), resource: attrs.GetResource(), subresource: attrs.GetSubresource()}
	if slices.Contains(a.rules[r], attrs.GetVerb()) {
		return authorizer.DecisionAllow, "allowed by the node rules", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// authorizeRead allows getting one Secret or ConfigMap that a pod on node
// refers to, by refs. Lists and watches are refused even of a single object
// by field selector (kube allows that; trustplane's node agent gets).
func (a *Authorizer) authorizeRead(ctx context.Context, node string, attrs authorizer.Attributes, refs func(Refs) []string) (authorizer.Decision, string, error) {
	switch {
	case attrs.GetVerb() != "get":
		return authorizer.DecisionNoOpinion, "can only get individual resources of this type", nil
	case attrs.GetSubresource() != "":
		return authorizer.DecisionNoOpinion, "cannot read subresource", nil
	case attrs.GetNamespace() == "":
		return authorizer.DecisionNoOpinion, "can only read namespaced object of this type", nil
	case attrs.GetName() == "":
		return authorizer.DecisionNoOpinion, "no object name found", nil
	}
	return a.related(ctx, node, attrs, func(p *corev1.Pod) bool {
		return slices.Contains(refs(References(p)), attrs.GetName())
	})
}

// authorizeToken allows creating a token for a ServiceAccount that a pod on
// node runs as. NodeRestriction then requires the token to be bound to such
// a pod.
func (a *Authorizer) authorizeToken(ctx context.Context, node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch {
	case attrs.GetVerb() != "create" || attrs.GetName() == "":
		return authorizer.DecisionNoOpinion, "can only create tokens for individual service accounts", nil
	case attrs.GetSubresource() != "token":
		return authorizer.DecisionNoOpinion, "can only create token subresource of serviceaccount", nil
	case attrs.GetNamespace() == "":
		return authorizer.DecisionNoOpinion, "can only create tokens for namespaced service accounts", nil
	}
	return a.related(ctx, node, attrs, func(p *corev1.Pod) bool {
		return References(p).ServiceAccount == attrs.GetName()
	})
}

// related allows the request if one pod bound to node, in the request's
// namespace and not a mirror pod, satisfies refers.
func (a *Authorizer) related(ctx context.Context, node string, attrs authorizer.Attributes, refers func(*corev1.Pod) bool) (authorizer.Decision, string, error) {
	noRelationship := fmt.Sprintf("no relationship found between node '%s' and this object", node)
	pods, err := a.pods.PodsOnNode(ctx, node)
	if err != nil {
		return authorizer.DecisionNoOpinion, noRelationship, fmt.Errorf("node authorizer: list pods on node %q: %w", node, err)
	}
	for _, p := range pods {
		if p == nil || p.Spec.NodeName != node || p.Namespace != attrs.GetNamespace() || isMirrorPod(p) {
			continue
		}
		if refers(p) {
			return authorizer.DecisionAllow, fmt.Sprintf("node '%s' runs pod %s/%s, which refers to this object", node, p.Namespace, p.Name), nil
		}
	}
	return authorizer.DecisionNoOpinion, noRelationship, nil
}

// isMirrorPod reports whether p is a mirror pod. A node creates those
// itself, so they prove no relationship.
func isMirrorPod(p *corev1.Pod) bool {
	_, ok := p.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}

// authorizeLease allows a node its own Lease in kube-node-lease. A create
// carries no name in the request: NodeRestriction checks the object's.
func authorizeLease(node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	verb := attrs.GetVerb()
	switch {
	case !slices.Contains([]string{"get", "create", "update", "patch", "delete"}, verb):
		return authorizer.DecisionNoOpinion, "can only get, create, update, patch, or delete a node lease", nil
	case attrs.GetNamespace() != corev1.NamespaceNodeLease:
		return authorizer.DecisionNoOpinion, fmt.Sprintf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease), nil
	case attrs.GetName() != node && !(verb == "create" && attrs.GetName() == ""):
		return authorizer.DecisionNoOpinion, "can only access node lease with the same name as the requesting node", nil
	case attrs.GetSubresource() != "":
		return authorizer.DecisionNoOpinion, "cannot access subresource", nil
	}
	return authorizer.DecisionAllow, fmt.Sprintf("node lease of node '%s'", node), nil
}

// ConditionsAwareAuthorize implements authorizer.Authorizer. The node
// authorizer has no conditions: the decision is exactly Authorize's.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions implements authorizer.Authorizer. The node authorizer
// never returns a conditional decision, so it has none to evaluate and
// denies.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
