package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Group names and user names used by the bootstrap policy.
const (
	// ClusterAdminsGroup is bound to cluster-admin. It is an ordinary group:
	// its members are allowed everything because of that binding, and lose it
	// if the binding is removed.
	ClusterAdminsGroup = "trustplane:cluster-admins"
	// SchedulerUser is the scheduler's identity (its client certificate's CN).
	SchedulerUser = "system:kube-scheduler"
	// ControllerManagerUser is the controller-manager's identity.
	ControllerManagerUser = "system:kube-controller-manager"
)

// Markers kube-apiserver puts on its own bootstrap policy, kept so that tools
// which recognise them (and reconciliation, which honours autoupdate) treat
// trustplane's the same way.
const (
	bootstrappingLabel = "kubernetes.io/bootstrapping"
	bootstrappingValue = "rbac-defaults"
)

// API groups named by the bootstrap rules.
const (
	coreGroup           = ""
	appsGroup           = "apps"
	eventsGroup         = "events.k8s.io"
	coordinationGroup   = "coordination.k8s.io"
	discoveryGroup      = "discovery.k8s.io"
	rbacGroup           = rbacv1.GroupName
	authorizationGroup  = "authorization.k8s.io"
	authenticationGroup = "authentication.k8s.io"
	certificatesGroup   = "certificates.k8s.io"
)

// Groups of the nodes' identities, kube's.
const (
	// BootstrappersGroup holds every bootstrap token's user.
	BootstrappersGroup = "system:bootstrappers"
	// NodesGroup holds every node's user, system:node:<name>.
	NodesGroup = "system:nodes"
)

// The ClusterRoles that let a node obtain its client certificate, kube's
// names: the CSR approver asks whether a CSR's requester may create the
// subresource nodeclient (a bootstrap token's user, for a new node) or
// selfnodeclient (the node itself, to renew) of certificatesigningrequests.
const (
	NodeBootstrapperRole = "system:node-bootstrapper"
	// CSRCreatorRole is what RBAC grants a bootstrap token: create CSRs.
	// It reads those it created through the bootstrapper authorizer
	// (rbac/bootstrapper), and no one else's.
	CSRCreatorRole     = "trustplane:csr-creator"
	NodeClientRole     = "system:certificates.k8s.io:certificatesigningrequests:nodeclient"
	SelfNodeClientRole = "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"
)

// The labels kube's user-facing roles aggregate by: a ClusterRole carrying
// one with value "true" adds its rules to admin, edit or view.
const (
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// Verb sets of the user-facing roles, kube's. Functions, not variables:
// newRule keeps the slice it is given, and callers may modify the result.
func readVerbs() []string { return []string{"get", "list", "watch"} }
func writeVerbs() []string {
	return []string{"create", "update", "patch", "delete", "deletecollection"}
}
func readWriteVerbs() []string { return append(readVerbs(), writeVerbs()...) }

// BootstrapPolicy returns the ClusterRoles and ClusterRoleBindings trustplane
// creates on first start (fresh objects each call, so callers may modify them).
//
// Besides the roles of trustplane's own identities it holds kube's
// user-facing roles, bound to no one: admin, edit and view, aggregated (see
// [AggregateClusterRoles]) from system:aggregate-to-admin, -edit and -view,
// each of which also aggregates into the next (view into edit, edit into
// admin). They are returned already aggregated, so they work before the API
// server first aggregates, and aggregating them again changes nothing. And
// system:basic-user, bound to system:authenticated, lets a user ask what it
// may do and who it is.
//
// The controllers' roles are in it too (see [Controllers]); the controller
// manager's own certificate is granted only in kube-system
// ([BootstrapNamespacedPolicy]).
//
// Nothing in it grants a Secret, or a wildcard, to system:authenticated or
// system:unauthenticated; view grants no Secrets; the scheduler and the
// controllers get no Secrets either.
func BootstrapPolicy() ([]*rbacv1.ClusterRole, []*rbacv1.ClusterRoleBinding) {
	roles := []*rbacv1.ClusterRole{
		clusterRole("cluster-admin",
			newRule("*").groups("*").resources("*"),
			newRule("*").urls("*"),
		),
		// What every authenticated client needs to find out what the server
		// serves (kubectl's discovery and OpenAPI reads) and whether it is up.
		clusterRole("system:discovery",
			newRule("get").urls(
				"/api", "/api/*", "/apis", "/apis/*",
				"/version", "/version/",
				"/openapi", "/openapi/*",
				"/livez", "/readyz", "/healthz",
			),
		),
		// What may be read without credentials: health and version only.
		clusterRole("system:public-info-viewer",
			newRule("get").urls("/healthz", "/livez", "/readyz", "/version", "/version/"),
		),
		schedulerRole(),
		aggregatedClusterRole("admin", aggregateToAdmin, nil),
		aggregatedClusterRole("edit", aggregateToEdit, map[string]string{aggregateToAdmin: "true"}),
		aggregatedClusterRole("view", aggregateToView, map[string]string{aggregateToEdit: "true"}),
		aggregateToAdminRole(),
		aggregateToEditRole(),
		aggregateToViewRole(),
		// What a user needs to find out what it may do and who it is
		// (kubectl auth can-i, kubectl auth whoami).
		clusterRole("system:basic-user",
			newRule("create").groups(authorizationGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			newRule("create").groups(authenticationGroup).resources("selfsubjectreviews"),
		),
		// What a node needs to renew its certificate and wait for it.
		// As kube's, it reads every CSR: they hold public keys,
		// certificates and their requesters' names, no secret.
		clusterRole(NodeBootstrapperRole,
			newRule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests"),
		),
		// A bootstrap token only creates CSRs; it reads its own through
		// the bootstrapper authorizer.
		clusterRole(CSRCreatorRole,
			newRule("create").groups(certificatesGroup).resources("certificatesigningrequests"),
		),
		// Not a resource anyone writes: the approver asks these of a
		// CSR's requester, so that who may have a node certificate
		// approved is RBAC's to say.
		clusterRole(NodeClientRole,
			newRule("create").groups(certificatesGroup).resources("certificatesigningrequests/nodeclient"),
		),
		clusterRole(SelfNodeClientRole,
			newRule("create").groups(certificatesGroup).resources("certificatesigningrequests/selfnodeclient"),
		),
	}
	for _, aggregated := range AggregateClusterRoles(roles) {
		for i := range roles {
			if roles[i].Name == aggregated.Name {
				roles[i] = aggregated
			}
		}
	}
	bindings := []*rbacv1.ClusterRoleBinding{
		clusterRoleBinding("trustplane:cluster-admins", "cluster-admin", groupSubject(ClusterAdminsGroup)),
		clusterRoleBinding("system:discovery", "system:discovery", groupSubject(user.AllAuthenticated)),
		clusterRoleBinding("system:public-info-viewer", "system:public-info-viewer",
			groupSubject(user.AllAuthenticated), groupSubject(user.AllUnauthenticated)),
		clusterRoleBinding(SchedulerUser, SchedulerUser, userSubject(SchedulerUser)),
		// kube once bound this to system:unauthenticated too, and stopped.
		clusterRoleBinding("system:basic-user", "system:basic-user", groupSubject(user.AllAuthenticated)),
		// kubeadm's bindings, under the roles' names: a bootstrap token
		// may ask for a new node's certificate, and a node for its own
		// renewal. kubeadm binds system:node-bootstrapper to the
		// bootstrap tokens too, which would let them read every CSR.
		clusterRoleBinding(NodeBootstrapperRole, NodeBootstrapperRole, groupSubject(NodesGroup)),
		clusterRoleBinding(CSRCreatorRole, CSRCreatorRole, groupSubject(BootstrappersGroup)),
		clusterRoleBinding(NodeClientRole, NodeClientRole, groupSubject(BootstrappersGroup)),
		clusterRoleBinding(SelfNodeClientRole, SelfNodeClientRole, groupSubject(NodesGroup)),
	}
	controllerRoles, controllerBindings := controllerPolicy()
	return append(roles, controllerRoles...), append(bindings, controllerBindings...)
}

// The rules of kube's user-facing roles, limited to the resources trustplane
// serves. Each is the part its level adds: view reads what holds no
// credentials, edit also reads Secrets and writes workloads and their
// configuration, admin also manages a namespace's roles and bindings. None
// writes a status subresource (that is the controllers' domain) or the
// namespace itself.

// aggregateToViewRole is read-only, and holds no Secrets: a Secret read
// is a credential read, so it starts at edit.
func aggregateToViewRole() *rbacv1.ClusterRole {
	return labelledClusterRole("system:aggregate-to-view", map[string]string{aggregateToView: "true"},
		newRule(readVerbs()...).groups(coreGroup).resources("pods", "pods/status", "services", "services/status", "serviceaccounts", "configmaps", "events"),
		newRule(readVerbs()...).groups(discoveryGroup).resources("endpointslices"),
		// Reading namespaces in a namespace means reading that namespace:
		// how a user bound there finds out it is.
		newRule(readVerbs()...).groups(coreGroup).resources("namespaces", "namespaces/status"),
		newRule(readVerbs()...).groups(appsGroup).resources(
			"deployments", "deployments/status", "deployments/scale",
			"replicasets", "replicasets/status", "replicasets/scale",
			"statefulsets", "statefulsets/status", "statefulsets/scale",
			"daemonsets", "daemonsets/status", "controllerrevisions"),
	)
}

// aggregateToEditRole is everything a namespace's user works with, but not
// its roles and bindings. Unlike kube's edit it may not impersonate the
// namespace's ServiceAccounts, whose grants can reach beyond the namespace.
func aggregateToEditRole() *rbacv1.ClusterRole {
	return labelledClusterRole("system:aggregate-to-edit", map[string]string{aggregateToEdit: "true"},
		newRule(readVerbs()...).groups(coreGroup).resources("secrets"),
		// Not EndpointSlices, as in kube since CVE-2021-25740: a
		// slice written by hand can send a Service's traffic anywhere.
		newRule(writeVerbs()...).groups(coreGroup).resources("pods", "services", "serviceaccounts", "configmaps", "secrets", "events"),
		newRule(writeVerbs()...).groups(appsGroup).resources(
			"deployments", "deployments/scale",
			"replicasets", "replicasets/scale",
			"statefulsets", "statefulsets/scale", "daemonsets"),
		// Leader election for the namespace's own workloads.
		newRule(readWriteVerbs()...).groups(coordinationGroup).resources("leases"),
	)
}

// aggregateToAdminRole lets a namespace's admin grant within it. Escalation
// checks keep that to what the admin holds there (or may "bind").
func aggregateToAdminRole() *rbacv1.ClusterRole {
	return labelledClusterRole("system:aggregate-to-admin", map[string]string{aggregateToAdmin: "true"},
		newRule("create").groups(authorizationGroup).resources("localsubjectaccessreviews"),
		newRule(readWriteVerbs()...).groups(rbacGroup).resources("roles", "rolebindings"),
	)
}

// schedulerRole is what filtering, scoring, binding and leader election need,
// and nothing more: no Secrets, no ConfigMaps, no writes beyond binding pods,
// reporting their status and its own events and lease. It reads Services,
// ReplicaSets and StatefulSets, as kube's does, for their selectors: pods
// are spread by default among those they share.
func schedulerRole() *rbacv1.ClusterRole {
	return clusterRole(SchedulerUser,
		newRule("get", "list", "watch", "delete").groups(coreGroup).resources("pods"),
		newRule("create").groups(coreGroup).resources("pods/binding", "bindings"),
		newRule("patch", "update").groups(coreGroup).resources("pods/status"),
		newRule("get", "list", "watch").groups(coreGroup).resources("nodes", "namespaces"),
		newRule("get", "list", "watch").groups(coreGroup).resources("services"),
		newRule("get", "list", "watch").groups(appsGroup).resources("replicasets", "statefulsets"),
		newRule("create", "patch", "update").groups(coreGroup, eventsGroup).resources("events"),
		// A lease can only be created without a name in the request, so create
		// cannot be limited by resourceNames; everything after it can.
		newRule("create").groups(coordinationGroup).resources("leases"),
		newRule("get", "update").groups(coordinationGroup).resources("leases").names("kube-scheduler"),
	)
}

// ruleBuilder writes a PolicyRule as one line. Each method stores the slice it
// is given; variadic calls allocate a fresh one, so built rules share nothing.
type ruleBuilder struct{ r rbacv1.PolicyRule }

func newRule(verbs ...string) ruleBuilder { return ruleBuilder{rbacv1.PolicyRule{Verbs: verbs}} }

func (b ruleBuilder) groups(g ...string) ruleBuilder    { b.r.APIGroups = g; return b }
func (b ruleBuilder) resources(r ...string) ruleBuilder { b.r.Resources = r; return b }
func (b ruleBuilder) names(n ...string) ruleBuilder     { b.r.ResourceNames = n; return b }
func (b ruleBuilder) urls(u ...string) ruleBuilder      { b.r.NonResourceURLs = u; return b }

// bootstrapMeta is the ObjectMeta of every bootstrap object.
func bootstrapMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{bootstrappingLabel: bootstrappingValue},
		Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"},
	}
}

func clusterRole(name string, rules ...ruleBuilder) *rbacv1.ClusterRole {
	cr := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: bootstrapMeta(name),
		Rules:      make([]rbacv1.PolicyRule, 0, len(rules)),
	}
	for _, b := range rules {
		cr.Rules = append(cr.Rules, b.r)
	}
	return cr
}

// labelledClusterRole is a clusterRole with extra labels.
func labelledClusterRole(name string, extra map[string]string, rules ...ruleBuilder) *rbacv1.ClusterRole {
	cr := clusterRole(name, rules...)
	for k, v := range extra {
		cr.Labels[k] = v
	}
	return cr
}

// aggregatedClusterRole is a ClusterRole whose rules are those of every
// ClusterRole labelled selectLabel=true, and which carries extra labels.
func aggregatedClusterRole(name, selectLabel string, extra map[string]string) *rbacv1.ClusterRole {
	cr := labelledClusterRole(name, extra)
	cr.AggregationRule = &rbacv1.AggregationRule{
		ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{selectLabel: "true"}}},
	}
	return cr
}

func clusterRoleBinding(name, role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: bootstrapMeta(name),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}
