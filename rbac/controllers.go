package rbac

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// The controller manager's identities. Its own certificate
// (ControllerManagerUser) may do one thing: obtain tokens for the
// ServiceAccounts below, in kube-system. Each controller then writes as
// its own ServiceAccount with its own role; the informers the controllers
// share read as SharedInformersServiceAccount, which may read no Secret;
// leader election holds its Lease as LeaderElectionServiceAccount. A
// controller's compromise (or bug) reaches its role, not all of them.
const (
	// ControllersNamespace holds the controllers' ServiceAccounts.
	ControllersNamespace = "kube-system"
	// SharedInformersServiceAccount lists and watches, for every
	// controller, what the controllers read.
	SharedInformersServiceAccount = "shared-informers"
	// GarbageCollectorServiceAccount is the garbage collector's, whose
	// writes admission keeps to ownerReferences and finalizers.
	GarbageCollectorServiceAccount = "generic-garbage-collector"
	// LeaderElectionServiceAccount holds the controller manager's Lease,
	// kube-system/kube-controller-manager.
	LeaderElectionServiceAccount = "kube-controller-manager"
	// ControllerManagerLease is the Lease the controller manager's
	// instances elect their leader by.
	ControllerManagerLease = "kube-controller-manager"
	// NamespaceControllerServiceAccount is the namespace controller's:
	// admission holds its deletes to namespaces being deleted.
	NamespaceControllerServiceAccount = "namespace-controller"
)

// Controller is one controller's identity: its ServiceAccount in
// kube-system, and the rules of its ClusterRole
// system:controller:<ServiceAccount>.
type Controller struct {
	// Name is how the controller is named to --controllers.
	Name           string
	ServiceAccount string
	Rules          []rbacv1.PolicyRule
	// SystemNamespaceRules are granted in kube-system only, by the Role
	// system:controller:<ServiceAccount> there; a controller with no
	// Rules has no ClusterRole.
	SystemNamespaceRules []rbacv1.PolicyRule
}

// The signer the CSR controllers approve and sign for, kube's name for
// the node client certificates.
const KubeletClientSigner = "kubernetes.io/kube-apiserver-client-kubelet"

// Controllers are the controllers' identities, each a fresh copy. The
// rules are kube's bootstrap policy for the controller, narrowed to what
// trustplane's controller does: the reads are the shared informers',
// not the controller's.
func Controllers() []Controller {
	return []Controller{
		{
			// Gives each namespace its "default" ServiceAccount.
			Name:           "serviceaccount",
			ServiceAccount: "service-account-controller",
			Rules:          rules(newRule("create").groups(coreGroup).resources("serviceaccounts")),
		},
		{
			// Empties a namespace being deleted, kind by kind, through the
			// API, then lets it go. It must list what it deletes; it reads
			// only metadata (the client asks for PartialObjectMetadata);
			// of Secrets it is given only their metadata
			// (secrets/metadata: the API server answers it with
			// PartialObjectMetadata, whatever it asks). The resources
			// are named, not "*": a kind added to the server must be
			// added here (a test of the server's checks it).
			Name:           "namespace",
			ServiceAccount: NamespaceControllerServiceAccount,
			Rules: rules(
				newRule("list", "delete", "deletecollection").groups(coreGroup).
					resources("configmaps", "secrets/metadata", "pods", "services", "serviceaccounts", "events"),
				newRule("list", "delete", "deletecollection").groups(discoveryGroup).resources("endpointslices"),
				newRule("list", "delete", "deletecollection").groups(eventsGroup).resources("events"),
				newRule("list", "delete", "deletecollection").groups(appsGroup).
					resources("deployments", "replicasets", "statefulsets", "daemonsets", "controllerrevisions"),
				newRule("list", "delete", "deletecollection").groups(coordinationGroup).resources("leases"),
				newRule("list", "delete", "deletecollection").groups(rbacGroup).resources("roles", "rolebindings"),
				newRule("update").groups(coreGroup).resources("namespaces/finalize", "namespaces/status"),
			),
		},
		{
			// Publishes the cluster CA as kube-root-ca.crt in each
			// namespace; it may rewrite no other ConfigMap.
			Name:           "root-ca-cert-publisher",
			ServiceAccount: "root-ca-cert-publisher",
			Rules: rules(
				newRule("create").groups(coreGroup).resources("configmaps"),
				newRule("update").groups(coreGroup).resources("configmaps").names("kube-root-ca.crt"),
			),
		},
		{
			// Keeps each ReplicaSet's pods at its replicas: creates and
			// deletes them, patches their ownerReferences to adopt and
			// release them, and writes the ReplicaSet's status. Its one
			// read of its own: the ReplicaSet, from the API server rather
			// than the cache, before it adopts a pod.
			Name:           "replicaset",
			ServiceAccount: "replicaset-controller",
			Rules: rules(
				newRule("create", "delete", "patch").groups(coreGroup).resources("pods"),
				newRule("get").groups(appsGroup).resources("replicasets"),
				newRule("update").groups(appsGroup).resources("replicasets/status"),
			),
		},
		{
			// Rolls Deployments out through their ReplicaSets. It
			// patches a Deployment only for its revision annotation,
			// which this server, unlike kube's, does not take through
			// the status subresource; it creates no pods.
			Name:           "deployment",
			ServiceAccount: "deployment-controller",
			Rules: rules(
				newRule("create", "update", "patch", "delete").groups(appsGroup).resources("replicasets"),
				newRule("update").groups(appsGroup).resources("deployments/status"),
				newRule("patch").groups(appsGroup).resources("deployments"),
				newRule("create", "patch").groups(coreGroup).resources("events"),
			),
		},
		{
			// Runs each StatefulSet's pods, ordinal by ordinal, and
			// records its templates as ControllerRevisions. It reads
			// through the shared informers, but for a set whose status
			// write conflicted, and a revision whose name is taken; it
			// adopts no orphans, so it patches no pod.
			Name:           "statefulset",
			ServiceAccount: "statefulset-controller",
			Rules: rules(
				newRule("create", "delete").groups(coreGroup).resources("pods"),
				newRule("get").groups(appsGroup).resources("statefulsets"),
				newRule("get", "create", "update", "delete").groups(appsGroup).resources("controllerrevisions"),
				newRule("update").groups(appsGroup).resources("statefulsets/status"),
			),
		},
		{
			// Runs one pod of each DaemonSet on each node it fits, and
			// records its templates as ControllerRevisions. It patches
			// pods' ownerReferences to adopt and release them. It reads
			// through the shared informers, but for a set before it
			// adopts or whose status write conflicted, and a revision
			// whose name is taken; it writes no node.
			Name:           "daemonset",
			ServiceAccount: "daemon-set-controller",
			Rules: rules(
				newRule("create", "delete", "patch").groups(coreGroup).resources("pods"),
				newRule("get").groups(appsGroup).resources("daemonsets"),
				newRule("get", "create", "update", "delete").groups(appsGroup).resources("controllerrevisions"),
				newRule("update").groups(appsGroup).resources("daemonsets/status"),
			),
		},
		{
			// Keeps one set of EndpointSlices per Service with a
			// selector, from its pods. It writes only the slices; it
			// reads Services, pods and slices through the shared
			// informers.
			Name:           "endpointslice",
			ServiceAccount: "endpointslice-controller",
			Rules: rules(
				newRule("create", "update", "delete").groups(discoveryGroup).resources("endpointslices"),
			),
		},
		{
			// Deletes what its owners no longer hold, and removes the
			// finalizers and ownerReferences of foreground and orphaning
			// deletes: it watches every kind that can own or be owned
			// (events aside, as kube's), cluster-scoped ones included,
			// and reads only their metadata (its clients ask for
			// PartialObjectMetadata). Of Secrets it is given only their
			// metadata (secrets/metadata): it lists and watches them
			// to know their owners, and patches and deletes them to
			// collect them, answered with PartialObjectMetadata whatever
			// it asks, and its patches may change nothing but metadata.
			// It has no get on them, nor on anything else (it looks an owner up by
			// a list of its name), and it creates nothing. The resources
			// are named, not "*": a kind added to the server must be
			// added here (a test of the server's checks it).
			Name:           "garbagecollector",
			ServiceAccount: GarbageCollectorServiceAccount,
			Rules: rules(
				newRule("list", "watch", "patch", "delete").groups(coreGroup).
					resources("configmaps", "pods", "serviceaccounts", "services", "namespaces", "nodes"),
				newRule("list", "watch", "patch", "delete").groups(coreGroup).resources("secrets/metadata"),
				newRule("list", "watch", "patch", "delete").groups(appsGroup).
					resources("deployments", "replicasets", "statefulsets", "daemonsets", "controllerrevisions"),
				newRule("list", "watch", "patch", "delete").groups(coordinationGroup).resources("leases"),
				newRule("list", "watch", "patch", "delete").groups(discoveryGroup).resources("endpointslices"),
				newRule("list", "watch", "patch", "delete").groups(rbacGroup).
					resources("roles", "rolebindings", "clusterroles", "clusterrolebindings"),
				newRule("list", "watch", "patch", "delete").groups(certificatesGroup).resources("certificatesigningrequests"),
			),
		},
		{
			// Approves node client CSRs that meet kube's rules, and
			// denies the rest of that signer's: it asks the API server
			// (a SubjectAccessReview) whether the requester may create
			// certificatesigningrequests/nodeclient or
			// selfnodeclient, and approves for that signer only.
			Name:           "csrapproving",
			ServiceAccount: "csr-approving-controller",
			Rules: rules(
				newRule("update").groups(certificatesGroup).resources("certificatesigningrequests/approval"),
				newRule("approve").groups(certificatesGroup).resources("signers").names(KubeletClientSigner),
				newRule("create").groups(authorizationGroup).resources("subjectaccessreviews"),
			),
		},
		{
			// Signs approved node client CSRs with the cluster CA, whose
			// key it reads from its file, as kube's csrsigning
			// controller does; it writes only the certificate.
			Name:           "csrsigning",
			ServiceAccount: "csr-signing-controller",
			Rules: rules(
				newRule("update").groups(certificatesGroup).resources("certificatesigningrequests/status"),
				newRule("sign").groups(certificatesGroup).resources("signers").names(KubeletClientSigner),
			),
		},
		{
			// Deletes expired bootstrap tokens. They are Secrets, which
			// no other controller's reads include, so it lists and
			// watches them itself; they live in kube-system only, so
			// that is where it may list, watch and delete Secrets, and
			// nowhere else. RBAC cannot narrow a list to one type of
			// Secret: it reads every Secret of kube-system, which is
			// why it has no other rights at all.
			Name:           "tokencleaner",
			ServiceAccount: "token-cleaner",
			SystemNamespaceRules: rules(
				newRule("list", "watch", "delete").groups(coreGroup).resources("secrets"),
			),
		},
		{
			// Turns the conditions of a node whose heartbeats stopped
			// Unknown, taints nodes by their conditions, and marks the
			// pods of a node that is not ready not ready. kube's
			// node-controller role, narrowed: it reads through the shared
			// informers (get on nodes only to write a taint again over a
			// conflict); it neither lists, updates nor deletes a node,
			// but patches nodes for their taints (RBAC cannot narrow a
			// patch to one field); and it deletes no pod, which is the
			// taint eviction controller's to do.
			Name:           "nodelifecycle",
			ServiceAccount: "node-controller",
			Rules: rules(
				newRule("get", "patch").groups(coreGroup).resources("nodes"),
				newRule("update").groups(coreGroup).resources("nodes/status"),
				newRule("update").groups(coreGroup).resources("pods/status"),
				newRule("create", "patch").groups(coreGroup).resources("events"),
			),
		},
		{
			// Deletes the pods of nodes with NoExecute taints they do not
			// tolerate, marking them a disruption target first. kube's
			// taint-eviction-controller role, narrowed: it reads pods
			// through the shared informers, so it may neither get nor
			// list them, and it writes no node.
			Name:           "taint-eviction-controller",
			ServiceAccount: "taint-eviction-controller",
			Rules: rules(
				newRule("delete").groups(coreGroup).resources("pods"),
				newRule("patch").groups(coreGroup).resources("pods/status"),
				newRule("create", "patch").groups(coreGroup).resources("events"),
			),
		},
	}
}

// ControllerRole is the name of a controller's ClusterRole.
func ControllerRole(serviceAccount string) string { return "system:controller:" + serviceAccount }

// sharedInformersRules are what the controllers' informers read: no
// Secrets.
func sharedInformersRules() []rbacv1.PolicyRule {
	return rules(
		newRule("list", "watch").groups(coreGroup).resources("namespaces", "serviceaccounts", "configmaps", "pods", "services", "nodes"),
		newRule("list", "watch").groups(appsGroup).resources("deployments", "replicasets", "statefulsets", "daemonsets", "controllerrevisions"),
		newRule("list", "watch").groups(discoveryGroup).resources("endpointslices"),
		newRule("list", "watch").groups(certificatesGroup).resources("certificatesigningrequests"),
		// The node lifecycle controller's heartbeats, in kube-node-lease.
		newRule("list", "watch").groups(coordinationGroup).resources("leases"),
	)
}

// controllerPolicy is the ClusterRoles and ClusterRoleBindings of the
// controllers and of the shared informers.
func controllerPolicy() ([]*rbacv1.ClusterRole, []*rbacv1.ClusterRoleBinding) {
	var roles []*rbacv1.ClusterRole
	var bindings []*rbacv1.ClusterRoleBinding
	add := func(sa string, r []rbacv1.PolicyRule) {
		role := clusterRole(ControllerRole(sa))
		role.Rules = r
		roles = append(roles, role)
		bindings = append(bindings, clusterRoleBinding(ControllerRole(sa), ControllerRole(sa), serviceAccountSubject(ControllersNamespace, sa)))
	}
	for _, c := range Controllers() {
		if len(c.Rules) > 0 {
			add(c.ServiceAccount, c.Rules)
		}
	}
	add(SharedInformersServiceAccount, sharedInformersRules())
	return roles, bindings
}

// ControllerServiceAccounts are the ServiceAccounts in kube-system the
// controller manager obtains tokens for.
func ControllerServiceAccounts() []*corev1.ServiceAccount {
	names := []string{SharedInformersServiceAccount, LeaderElectionServiceAccount}
	for _, c := range Controllers() {
		names = append(names, c.ServiceAccount)
	}
	out := make([]*corev1.ServiceAccount, 0, len(names))
	for _, n := range names {
		meta := bootstrapMeta(n)
		meta.Namespace = ControllersNamespace
		meta.Annotations = nil
		out = append(out, &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: meta,
			// Its tokens are the controller manager's to request, not a
			// pod's to mount.
			AutomountServiceAccountToken: new(bool),
		})
	}
	return out
}

// BootstrapNamespacedPolicy returns the Roles and RoleBindings in
// kube-system trustplane creates on first start: the controller
// manager's certificate may create tokens for the controllers'
// ServiceAccounts there and nothing else; leader election may hold the
// controller manager's Lease.
func BootstrapNamespacedPolicy() ([]*rbacv1.Role, []*rbacv1.RoleBinding) {
	var names []string
	for _, sa := range ControllerServiceAccounts() {
		names = append(names, sa.Name)
	}
	tokens := role("system:kube-controller-manager:tokens",
		newRule("create").groups(coreGroup).resources("serviceaccounts/token").names(names...))
	// kube's own name for the Role of the controller manager's Lease.
	leases := role("system::leader-locking-kube-controller-manager",
		// A Lease is created without a name in the request, so create
		// cannot be limited by resourceNames; everything after it can.
		newRule("create").groups(coordinationGroup).resources("leases"),
		newRule("get", "update").groups(coordinationGroup).resources("leases").names(ControllerManagerLease))
	roles := []*rbacv1.Role{tokens, leases}
	bindings := []*rbacv1.RoleBinding{
		roleBinding(tokens.Name, tokens.Name, userSubject(ControllerManagerUser)),
		roleBinding(leases.Name, leases.Name, serviceAccountSubject(ControllersNamespace, LeaderElectionServiceAccount)),
	}
	for _, c := range Controllers() {
		if len(c.SystemNamespaceRules) == 0 {
			continue
		}
		r := role(ControllerRole(c.ServiceAccount))
		r.Rules = c.SystemNamespaceRules
		roles = append(roles, r)
		bindings = append(bindings, roleBinding(r.Name, r.Name, serviceAccountSubject(ControllersNamespace, c.ServiceAccount)))
	}
	return roles, bindings
}

func rules(b ...ruleBuilder) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(b))
	for i := range b {
		out[i] = b[i].r
	}
	return out
}

func role(name string, r ...ruleBuilder) *rbacv1.Role {
	meta := bootstrapMeta(name)
	meta.Namespace = ControllersNamespace
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: meta,
		Rules:      rules(r...),
	}
}

func roleBinding(name, roleName string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	meta := bootstrapMeta(name)
	meta.Namespace = ControllersNamespace
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName},
		Subjects:   subjects,
	}
}

func serviceAccountSubject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

// ControllerUser is the user name a controller's token authenticates as.
func ControllerUser(serviceAccount string) string {
	return serviceaccount.MakeUsername(ControllersNamespace, serviceAccount)
}
