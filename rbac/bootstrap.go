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
	coreGroup         = ""
	appsGroup         = "apps"
	eventsGroup       = "events.k8s.io"
	coordinationGroup = "coordination.k8s.io"
)

// BootstrapPolicy returns the ClusterRoles and ClusterRoleBindings trustplane
// creates on first start (fresh objects each call, so callers may modify them).
//
// Nothing in it grants a Secret, or a wildcard resource, to
// system:authenticated or system:unauthenticated; the scheduler and the
// controller-manager get no Secrets either.
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
		controllerManagerRole(),
	}
	bindings := []*rbacv1.ClusterRoleBinding{
		clusterRoleBinding("trustplane:cluster-admins", "cluster-admin", groupSubject(ClusterAdminsGroup)),
		clusterRoleBinding("system:discovery", "system:discovery", groupSubject(user.AllAuthenticated)),
		clusterRoleBinding("system:public-info-viewer", "system:public-info-viewer",
			groupSubject(user.AllAuthenticated), groupSubject(user.AllUnauthenticated)),
		clusterRoleBinding(SchedulerUser, SchedulerUser, userSubject(SchedulerUser)),
		clusterRoleBinding(ControllerManagerUser, ControllerManagerUser, userSubject(ControllerManagerUser)),
	}
	return roles, bindings
}

// schedulerRole is what filtering, scoring, binding and leader election need,
// and nothing more: no Secrets, no ConfigMaps, no writes beyond binding pods,
// reporting their status and its own events and lease.
func schedulerRole() *rbacv1.ClusterRole {
	return clusterRole(SchedulerUser,
		newRule("get", "list", "watch", "delete").groups(coreGroup).resources("pods"),
		newRule("create").groups(coreGroup).resources("pods/binding", "bindings"),
		newRule("patch", "update").groups(coreGroup).resources("pods/status"),
		newRule("get", "list", "watch").groups(coreGroup).resources("nodes", "namespaces"),
		newRule("create", "patch", "update").groups(coreGroup, eventsGroup).resources("events"),
		// A lease can only be created without a name in the request, so create
		// cannot be limited by resourceNames; everything after it can.
		newRule("create").groups(coordinationGroup).resources("leases"),
		newRule("get", "update").groups(coordinationGroup).resources("leases").names("kube-scheduler"),
	)
}

// controllerManagerRole covers the ReplicaSet, Deployment, Node, Namespace and
// ServiceAccount controllers and the kube-root-ca.crt publisher. No Secrets.
func controllerManagerRole() *rbacv1.ClusterRole {
	return clusterRole(ControllerManagerUser,
		// ReplicaSet controller (and Node controller evictions).
		newRule("get", "list", "watch", "create", "delete", "update", "patch").groups(coreGroup).resources("pods"),
		newRule("update", "patch").groups(coreGroup).resources("pods/status"),
		// Deployment and ReplicaSet controllers.
		newRule("get", "list", "watch", "create", "update", "patch", "delete").groups(appsGroup).
			resources("replicasets", "deployments"),
		newRule("get", "update", "patch").groups(appsGroup).
			resources("replicasets/status", "replicasets/scale", "deployments/status", "deployments/scale"),
		// Node controller.
		newRule("get", "list", "watch", "update", "patch", "delete").groups(coreGroup).resources("nodes"),
		newRule("update", "patch").groups(coreGroup).resources("nodes/status"),
		// Namespace controller.
		newRule("get", "list", "watch", "update", "delete").groups(coreGroup).resources("namespaces"),
		newRule("update").groups(coreGroup).resources("namespaces/finalize", "namespaces/status"),
		// ServiceAccount controller: the "default" ServiceAccount of each namespace.
		newRule("get", "list", "watch", "create").groups(coreGroup).resources("serviceaccounts"),
		// Root CA publisher: creates kube-root-ca.crt in each namespace and
		// keeps it current; it may rewrite no other ConfigMap.
		newRule("get", "list", "watch", "create").groups(coreGroup).resources("configmaps"),
		newRule("update").groups(coreGroup).resources("configmaps").names("kube-root-ca.crt"),
		newRule("create", "patch", "update").groups(coreGroup, eventsGroup).resources("events"),
		newRule("create").groups(coordinationGroup).resources("leases"),
		newRule("get", "update").groups(coordinationGroup).resources("leases").names("kube-controller-manager"),
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
