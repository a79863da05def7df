package rbac

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestBootstrapPolicyObjects(t *testing.T) {
	roles, bindings := BootstrapPolicy()

	var roleNames, bindingNames []string
	byName := map[string]*rbacv1.ClusterRole{}
	for _, r := range roles {
		roleNames = append(roleNames, r.Name)
		byName[r.Name] = r
		checkBootstrapMeta(t, "ClusterRole "+r.Name, r.Labels, r.Annotations)
		for i, rule := range r.Rules {
			resource := len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0
			nonResource := len(rule.NonResourceURLs) > 0
			if len(rule.Verbs) == 0 || resource == nonResource || (resource && (len(rule.APIGroups) == 0 || len(rule.Resources) == 0)) {
				t.Errorf("ClusterRole %s rule %d: got %+v, want verbs and either groups+resources or nonResourceURLs", r.Name, i, rule)
			}
		}
	}
	for _, b := range bindings {
		bindingNames = append(bindingNames, b.Name)
		checkBootstrapMeta(t, "ClusterRoleBinding "+b.Name, b.Labels, b.Annotations)
		if b.RoleRef.APIGroup != rbacv1.GroupName || b.RoleRef.Kind != "ClusterRole" || byName[b.RoleRef.Name] == nil {
			t.Errorf("ClusterRoleBinding %s: roleRef %+v, want a ClusterRole of the bootstrap policy", b.Name, b.RoleRef)
		}
		if len(b.Subjects) == 0 {
			t.Errorf("ClusterRoleBinding %s: no subjects", b.Name)
		}
		for _, s := range b.Subjects {
			want := rbacv1.GroupName
			if s.Kind == rbacv1.ServiceAccountKind {
				want = ""
			}
			if s.APIGroup != want {
				t.Errorf("ClusterRoleBinding %s subject %s: apiGroup %q, want %q", b.Name, s.Name, s.APIGroup, want)
			}
		}
	}

	controllers := []string{"system:controller:service-account-controller", "system:controller:namespace-controller", "system:controller:root-ca-cert-publisher", "system:controller:replicaset-controller", "system:controller:deployment-controller", "system:controller:statefulset-controller", "system:controller:daemon-set-controller", "system:controller:endpointslice-controller", "system:controller:generic-garbage-collector", "system:controller:csr-approving-controller", "system:controller:csr-signing-controller", "system:controller:node-controller", "system:controller:taint-eviction-controller", "system:controller:shared-informers"}
	nodes := []string{"system:node-bootstrapper", "trustplane:csr-creator", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"}
	wantRoles := slices.Concat([]string{"cluster-admin", "system:discovery", "system:public-info-viewer", SchedulerUser,
		"admin", "edit", "view", "system:aggregate-to-admin", "system:aggregate-to-edit", "system:aggregate-to-view", "system:basic-user"}, nodes, controllers)
	wantBindings := slices.Concat([]string{"trustplane:cluster-admins", "system:discovery", "system:public-info-viewer", SchedulerUser,
		"system:basic-user"}, nodes, controllers)
	if !slices.Equal(roleNames, wantRoles) {
		t.Errorf("ClusterRoles: got %q, want %q", roleNames, wantRoles)
	}
	if !slices.Equal(bindingNames, wantBindings) {
		t.Errorf("ClusterRoleBindings: got %q, want %q", bindingNames, wantBindings)
	}
}

func checkBootstrapMeta(t *testing.T, what string, labels, annotations map[string]string) {
	t.Helper()
	if got := labels["kubernetes.io/bootstrapping"]; got != "rbac-defaults" {
		t.Errorf("%s: label kubernetes.io/bootstrapping: got %q, want %q", what, got, "rbac-defaults")
	}
	if got := annotations["rbac.authorization.kubernetes.io/autoupdate"]; got != "true" {
		t.Errorf("%s: annotation rbac.authorization.kubernetes.io/autoupdate: got %q, want %q", what, got, "true")
	}
}

// Callers may change what BootstrapPolicy returns (set resourceVersion, add
// a subject) without changing the next call's result.
func TestBootstrapPolicyFresh(t *testing.T) {
	roles, bindings := BootstrapPolicy()
	for _, r := range roles {
		r.Labels["x"] = "y"
		r.Rules[0].Verbs[0] = "mutated"
		r.Rules = append(r.Rules, rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}})
	}
	for _, b := range bindings {
		b.Subjects[0].Name = "mallory"
	}
	roles, bindings = BootstrapPolicy()
	for _, r := range roles {
		if _, ok := r.Labels["x"]; ok || slices.Contains(r.Rules[0].Verbs, "mutated") {
			t.Errorf("ClusterRole %s: changed by a caller's edit of an earlier result", r.Name)
		}
	}
	for _, b := range bindings {
		if b.Subjects[0].Name == "mallory" {
			t.Errorf("ClusterRoleBinding %s: changed by a caller's edit of an earlier result", b.Name)
		}
	}
}

// aggregatedBootstrapPolicy is BootstrapPolicy with AggregateClusterRoles
// applied, as the API server would, so that checks of the policy see the
// rules aggregated roles really hold even if BootstrapPolicy stopped
// aggregating them itself.
func aggregatedBootstrapPolicy() (map[string]*rbacv1.ClusterRole, []*rbacv1.ClusterRoleBinding) {
	roles, bindings := BootstrapPolicy()
	byName := map[string]*rbacv1.ClusterRole{}
	for _, r := range roles {
		byName[r.Name] = r
	}
	for _, r := range AggregateClusterRoles(roles) {
		byName[r.Name] = r
	}
	return byName, bindings
}

// publicResourceGrants are the only resource permissions a public group may
// hold: asking what it may do and who it is.
var publicResourceGrants = []string{
	"create authorization.k8s.io selfsubjectaccessreviews",
	"create authorization.k8s.io selfsubjectrulesreviews",
	"create authentication.k8s.io selfsubjectreviews",
}

// Read the policy itself, not just sampled requests, for grants that must
// never be there.
func TestBootstrapPolicyNoBroadGrants(t *testing.T) {
	byName, bindings := aggregatedBootstrapPolicy()
	public := []string{user.AllAuthenticated, user.AllUnauthenticated, user.Anonymous}
	for _, b := range bindings {
		role := byName[b.RoleRef.Name]
		if role == nil {
			continue // reported by TestBootstrapPolicyObjects
		}
		for _, s := range b.Subjects {
			if !slices.Contains(public, s.Name) {
				continue
			}
			for _, rule := range role.Rules {
				if slices.Contains(rule.Verbs, "*") || slices.Contains(rule.NonResourceURLs, "*") {
					t.Errorf("ClusterRoleBinding %s gives %s %s rule %+v; want no wildcards", b.Name, s.Kind, s.Name, rule)
				}
				// Every single permission, so that no list hides a
				// wildcard group, a secret or a write among allowed ones.
				forEachPermission(&rule, func(p request) {
					if !p.isResource {
						return
					}
					got := p.verb + " " + p.apiGroup + " " + p.resource
					if p.subresource != "" || p.name != "" || !slices.Contains(publicResourceGrants, got) {
						t.Errorf("ClusterRoleBinding %s gives %s %s %q (rule %+v); want only %q",
							b.Name, s.Kind, s.Name, compactString(ptr(p.rule())), rule, publicResourceGrants)
					}
				})
			}
		}
	}
	system := []string{SchedulerUser, ControllerRole(SharedInformersServiceAccount)}
	for _, c := range Controllers() {
		if len(c.Rules) > 0 {
			system = append(system, ControllerRole(c.ServiceAccount))
		}
	}
	for _, name := range system {
		for _, rule := range byName[name].Rules {
			if slices.Contains(rule.Resources, "secrets") {
				t.Errorf("ClusterRole %s: rule %+v grants whole Secrets; want at most their metadata", name, rule)
			}
			if name == ControllerRole("namespace-controller") && slices.Contains(rule.Resources, "secrets/metadata") {
				// It empties namespaces of Secrets too, by metadata: it
				// may list and delete them, and nothing more.
				if !slices.Equal(rule.Verbs, []string{"list", "delete", "deletecollection"}) {
					t.Errorf("ClusterRole %s: rule %+v; want secrets only listed and deleted", name, rule)
				}
				continue
			}
			if name == ControllerRole("generic-garbage-collector") && slices.Contains(rule.Resources, "secrets/metadata") {
				// It collects Secrets too, by metadata: it may list,
				// watch, patch (finalizers, ownerReferences) and delete
				// them, but get none, and only Secrets in this rule.
				if !slices.Equal(rule.Verbs, []string{"list", "watch", "patch", "delete"}) || !slices.Equal(rule.Resources, []string{"secrets/metadata"}) {
					t.Errorf("ClusterRole %s: rule %+v; want secrets only listed, watched, patched and deleted", name, rule)
				}
				continue
			}
			for _, field := range [][]string{rule.Verbs, rule.APIGroups, rule.Resources, rule.NonResourceURLs} {
				for _, v := range field {
					if strings.Contains(v, "*") || strings.HasPrefix(v, "secrets") {
						t.Errorf("ClusterRole %s: rule %+v holds %q; want no wildcards or secrets", name, rule, v)
					}
				}
			}
			if name == SchedulerUser && slices.ContainsFunc(rule.Resources, func(r string) bool { return strings.HasPrefix(r, "configmaps") }) {
				t.Errorf("ClusterRole %s: rule %+v grants configmaps", name, rule)
			}
		}
	}
}

func TestBootstrapPolicyAuthorize(t *testing.T) {
	admin := testUser("ops", ClusterAdminsGroup, user.AllAuthenticated)
	scheduler := testUser(SchedulerUser, user.AllAuthenticated)
	cm := testUser(ControllerManagerUser, user.AllAuthenticated)
	serviceAccount := func(name string) *user.DefaultInfo {
		return testUser(ControllerUser(name), "system:serviceaccounts", "system:serviceaccounts:kube-system", user.AllAuthenticated)
	}
	leader, informers := serviceAccount(LeaderElectionServiceAccount), serviceAccount(SharedInformersServiceAccount)
	saController, publisher := serviceAccount("service-account-controller"), serviceAccount("root-ca-cert-publisher")
	rsController := serviceAccount("replicaset-controller")
	approver, signer, cleaner := serviceAccount("csr-approving-controller"), serviceAccount("csr-signing-controller"), serviceAccount("token-cleaner")
	bootstrapper := testUser("system:bootstrap:abcdef", BootstrappersGroup, user.AllAuthenticated)
	node := testUser("system:node:n1", NodesGroup, user.AllAuthenticated)
	alice := testUser("alice", user.AllAuthenticated)
	anonymous := testUser(user.Anonymous, user.AllUnauthenticated)
	root := testUser("root", "system:masters", user.AllAuthenticated)
	// view, bound cluster-wide: the broadest way to hold it.
	viewer := testUser("vic", "viewers", user.AllAuthenticated)
	viewers := testClusterRoleBinding("viewers", "view", groupSubject("viewers"))

	cases := []authzCase{
		{name: "admin gets a secret", attrs: resourceRequest(admin, "get", "", "secrets", "kube-system", "tls"), allow: true,
			reason: `RBAC: allowed by ClusterRoleBinding "trustplane:cluster-admins" of ClusterRole "cluster-admin" to Group "trustplane:cluster-admins"`},
		{name: "admin deletes a node", attrs: resourceRequest(admin, "delete", "", "nodes", "", "n1"), allow: true},
		{name: "admin binds cluster roles", attrs: resourceRequest(admin, "create", "rbac.authorization.k8s.io", "clusterrolebindings", "", ""), allow: true},
		{name: "admin execs into a pod", attrs: resourceRequest(admin, "create", "", "pods/exec", "default", "web"), allow: true},
		{name: "admin uses a custom resource", attrs: resourceRequest(admin, "patch", "example.com", "widgets", "default", "w"), allow: true},
		{name: "admin reads /metrics", attrs: pathRequest(admin, "get", "/metrics"), allow: true},
		{name: "admin posts anywhere", attrs: pathRequest(admin, "post", "/debug/flags/v"), allow: true},

		{name: "scheduler binds a pod", attrs: resourceRequest(scheduler, "create", "", "pods/binding", "default", "web"), allow: true,
			reason: `RBAC: allowed by ClusterRoleBinding "system:kube-scheduler" of ClusterRole "system:kube-scheduler" to User "system:kube-scheduler"`},
		{name: "scheduler creates a binding", attrs: resourceRequest(scheduler, "create", "", "bindings", "default", ""), allow: true},
		{name: "scheduler gets a node", attrs: resourceRequest(scheduler, "get", "", "nodes", "", "n1"), allow: true},
		{name: "scheduler watches pods", attrs: resourceRequest(scheduler, "watch", "", "pods", "", ""), allow: true},
		{name: "scheduler patches pod status", attrs: resourceRequest(scheduler, "patch", "", "pods/status", "default", "web"), allow: true},
		{name: "scheduler records an event", attrs: resourceRequest(scheduler, "create", "events.k8s.io", "events", "default", ""), allow: true},
		{name: "scheduler creates a lease", attrs: resourceRequest(scheduler, "create", "coordination.k8s.io", "leases", "kube-system", ""), allow: true},
		{name: "scheduler renews its lease", attrs: resourceRequest(scheduler, "update", "coordination.k8s.io", "leases", "kube-system", "kube-scheduler"), allow: true},
		{name: "scheduler takes another lease", attrs: resourceRequest(scheduler, "update", "coordination.k8s.io", "leases", "kube-system", "kube-controller-manager")},
		{name: "scheduler lists leases", attrs: resourceRequest(scheduler, "list", "coordination.k8s.io", "leases", "kube-system", "")},
		{name: "scheduler creates a pod", attrs: resourceRequest(scheduler, "create", "", "pods", "default", "")},
		{name: "scheduler updates a node", attrs: resourceRequest(scheduler, "update", "", "nodes", "", "n1")},
		{name: "scheduler execs into a pod", attrs: resourceRequest(scheduler, "create", "", "pods/exec", "default", "web")},
		{name: "scheduler binds roles", attrs: resourceRequest(scheduler, "create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "")},

		// The controller manager's certificate obtains the controllers'
		// tokens, and may do nothing else.
		{name: "controller-manager gets a controller's token", attrs: resourceRequest(cm, "create", "", "serviceaccounts/token", "kube-system", "service-account-controller"), allow: true,
			reason: `RBAC: allowed by RoleBinding "system:kube-controller-manager:tokens/kube-system" of Role "system:kube-controller-manager:tokens" to User "system:kube-controller-manager"`},
		{name: "controller-manager gets the shared informers' token", attrs: resourceRequest(cm, "create", "", "serviceaccounts/token", "kube-system", "shared-informers"), allow: true},
		{name: "controller-manager gets another account's token", attrs: resourceRequest(cm, "create", "", "serviceaccounts/token", "kube-system", "default")},
		{name: "controller-manager gets a namesake's token elsewhere", attrs: resourceRequest(cm, "create", "", "serviceaccounts/token", "team", "service-account-controller")},
		{name: "controller-manager creates a pod", attrs: resourceRequest(cm, "create", "", "pods", "default", "")},
		{name: "controller-manager lists namespaces", attrs: resourceRequest(cm, "list", "", "namespaces", "", "")},
		{name: "controller-manager renews its lease", attrs: resourceRequest(cm, "update", "coordination.k8s.io", "leases", "kube-system", "kube-controller-manager")},
		{name: "controller-manager creates a service account", attrs: resourceRequest(cm, "create", "", "serviceaccounts", "kube-system", "")},

		{name: "leader election renews its lease", attrs: resourceRequest(leader, "update", "coordination.k8s.io", "leases", "kube-system", "kube-controller-manager"), allow: true},
		{name: "leader election creates a lease", attrs: resourceRequest(leader, "create", "coordination.k8s.io", "leases", "kube-system", ""), allow: true},
		{name: "leader election takes the scheduler's lease", attrs: resourceRequest(leader, "update", "coordination.k8s.io", "leases", "kube-system", "kube-scheduler")},
		{name: "leader election elsewhere", attrs: resourceRequest(leader, "update", "coordination.k8s.io", "leases", "team", "kube-controller-manager")},
		{name: "shared informers watch namespaces", attrs: resourceRequest(informers, "watch", "", "namespaces", "", ""), allow: true},
		{name: "shared informers write", attrs: resourceRequest(informers, "create", "", "serviceaccounts", "default", "")},
		{name: "the service account controller creates one", attrs: resourceRequest(saController, "create", "", "serviceaccounts", "team", ""), allow: true},
		{name: "the service account controller deletes one", attrs: resourceRequest(saController, "delete", "", "serviceaccounts", "team", "default")},
		{name: "the service account controller creates a pod", attrs: resourceRequest(saController, "create", "", "pods", "team", "")},
		{name: "the publisher updates kube-root-ca.crt", attrs: resourceRequest(publisher, "update", "", "configmaps", "team", "kube-root-ca.crt"), allow: true},
		{name: "the publisher rewrites another configmap", attrs: resourceRequest(publisher, "update", "", "configmaps", "team", "app-config")},
		{name: "shared informers watch pods", attrs: resourceRequest(informers, "watch", "", "pods", "", ""), allow: true},
		{name: "shared informers list replicasets", attrs: resourceRequest(informers, "list", "apps", "replicasets", "", ""), allow: true},
		{name: "shared informers get a pod", attrs: resourceRequest(informers, "get", "", "pods", "team", "web")},
		{name: "the replicaset controller creates a pod", attrs: resourceRequest(rsController, "create", "", "pods", "team", ""), allow: true},
		{name: "the replicaset controller deletes a pod", attrs: resourceRequest(rsController, "delete", "", "pods", "team", "web-x"), allow: true},
		{name: "the replicaset controller adopts a pod", attrs: resourceRequest(rsController, "patch", "", "pods", "team", "web-x"), allow: true},
		{name: "the replicaset controller writes status", attrs: resourceRequest(rsController, "update", "apps", "replicasets/status", "team", "web"), allow: true},
		{name: "the replicaset controller rechecks a replicaset", attrs: resourceRequest(rsController, "get", "apps", "replicasets", "team", "web"), allow: true},
		{name: "the replicaset controller scales a replicaset", attrs: resourceRequest(rsController, "update", "apps", "replicasets", "team", "web")},
		{name: "the replicaset controller updates a pod", attrs: resourceRequest(rsController, "update", "", "pods", "team", "web-x")},
		{name: "the replicaset controller writes pod status", attrs: resourceRequest(rsController, "patch", "", "pods/status", "team", "web-x")},
		{name: "the replicaset controller execs into a pod", attrs: resourceRequest(rsController, "create", "", "pods/exec", "team", "web-x")},
		{name: "the replicaset controller gets a secret", attrs: resourceRequest(rsController, "get", "", "secrets", "team", "tls")},
		{name: "the replicaset controller deletes a node", attrs: resourceRequest(rsController, "delete", "", "nodes", "", "n1")},

		// A bootstrap token may ask for a node's certificate and read
		// CSRs, and nothing else; a node may ask for its renewal.
		{name: "bootstrapper creates a CSR", attrs: resourceRequest(bootstrapper, "create", "certificates.k8s.io", "certificatesigningrequests", "", ""), allow: true,
			reason: `RBAC: allowed by ClusterRoleBinding "trustplane:csr-creator" of ClusterRole "trustplane:csr-creator" to Group "system:bootstrappers"`},
		// Its own it reads through the bootstrapper authorizer.
		{name: "bootstrapper watches CSRs", attrs: resourceRequest(bootstrapper, "watch", "certificates.k8s.io", "certificatesigningrequests", "", "")},
		{name: "bootstrapper gets a CSR", attrs: resourceRequest(bootstrapper, "get", "certificates.k8s.io", "certificatesigningrequests", "", "n1")},
		{name: "node watches CSRs", attrs: resourceRequest(node, "watch", "certificates.k8s.io", "certificatesigningrequests", "", ""), allow: true},
		{name: "bootstrapper may have a node client approved", attrs: resourceRequest(bootstrapper, "create", "certificates.k8s.io", "certificatesigningrequests/nodeclient", "", ""), allow: true},
		{name: "bootstrapper may not have a renewal approved", attrs: resourceRequest(bootstrapper, "create", "certificates.k8s.io", "certificatesigningrequests/selfnodeclient", "", "")},
		{name: "bootstrapper approves a CSR", attrs: resourceRequest(bootstrapper, "update", "certificates.k8s.io", "certificatesigningrequests/approval", "", "n1")},
		{name: "bootstrapper writes a CSR's status", attrs: resourceRequest(bootstrapper, "update", "certificates.k8s.io", "certificatesigningrequests/status", "", "n1")},
		{name: "bootstrapper deletes a CSR", attrs: resourceRequest(bootstrapper, "delete", "certificates.k8s.io", "certificatesigningrequests", "", "n1")},
		{name: "bootstrapper creates a node", attrs: resourceRequest(bootstrapper, "create", "", "nodes", "", "")},
		{name: "bootstrapper gets a secret", attrs: resourceRequest(bootstrapper, "get", "", "secrets", "kube-system", "bootstrap-token-abcdef")},
		{name: "node may have its renewal approved", attrs: resourceRequest(node, "create", "certificates.k8s.io", "certificatesigningrequests/selfnodeclient", "", ""), allow: true},
		{name: "node may not have a new node approved", attrs: resourceRequest(node, "create", "certificates.k8s.io", "certificatesigningrequests/nodeclient", "", "")},
		{name: "the approver approves for the kubelet client signer", attrs: resourceRequest(approver, "approve", "certificates.k8s.io", "signers", "", "kubernetes.io/kube-apiserver-client-kubelet"), allow: true},
		{name: "the approver approves for another signer", attrs: resourceRequest(approver, "approve", "certificates.k8s.io", "signers", "", "kubernetes.io/kube-apiserver-client")},
		{name: "the approver signs", attrs: resourceRequest(approver, "sign", "certificates.k8s.io", "signers", "", "kubernetes.io/kube-apiserver-client-kubelet")},
		{name: "the signer signs for the kubelet client signer", attrs: resourceRequest(signer, "sign", "certificates.k8s.io", "signers", "", "kubernetes.io/kube-apiserver-client-kubelet"), allow: true},
		{name: "the signer signs for another signer", attrs: resourceRequest(signer, "sign", "certificates.k8s.io", "signers", "", "kubernetes.io/kube-apiserver-client")},
		{name: "the signer approves", attrs: resourceRequest(signer, "update", "certificates.k8s.io", "certificatesigningrequests/approval", "", "n1")},
		{name: "the token cleaner deletes a token", attrs: resourceRequest(cleaner, "delete", "", "secrets", "kube-system", "bootstrap-token-abcdef"), allow: true,
			reason: `RBAC: allowed by RoleBinding "system:controller:token-cleaner/kube-system" of Role "system:controller:token-cleaner" to ServiceAccount "token-cleaner/kube-system"`},
		{name: "the token cleaner lists secrets elsewhere", attrs: resourceRequest(cleaner, "list", "", "secrets", "default", "")},
		{name: "the token cleaner lists secrets cluster-wide", attrs: resourceRequest(cleaner, "list", "", "secrets", "", "")},
		{name: "the token cleaner gets a secret", attrs: resourceRequest(cleaner, "get", "", "secrets", "kube-system", "bootstrap-token-abcdef")},

		{name: "user reads /api", attrs: pathRequest(alice, "get", "/api"), allow: true,
			reason: `RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"`},
		{name: "user reads /api/v1", attrs: pathRequest(alice, "get", "/api/v1"), allow: true},
		{name: "user reads /apis/apps/v1", attrs: pathRequest(alice, "get", "/apis/apps/v1"), allow: true},
		{name: "user reads /version", attrs: pathRequest(alice, "get", "/version"), allow: true},
		{name: "user reads /openapi/v3", attrs: pathRequest(alice, "get", "/openapi/v3"), allow: true},
		{name: "user reads /healthz", attrs: pathRequest(alice, "get", "/healthz"), allow: true},
		{name: "user posts /api", attrs: pathRequest(alice, "post", "/api")},
		{name: "user reads /metrics", attrs: pathRequest(alice, "get", "/metrics")},
		{name: "user lists namespaces", attrs: resourceRequest(alice, "list", "", "namespaces", "", "")},
		{name: "user gets a secret", attrs: resourceRequest(alice, "get", "", "secrets", "default", "tls")},
		{name: "user lists pods", attrs: resourceRequest(alice, "list", "", "pods", "default", "")},

		{name: "anonymous reads /livez", attrs: pathRequest(anonymous, "get", "/livez"), allow: true,
			reason: `RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of ClusterRole "system:public-info-viewer" to Group "system:unauthenticated"`},
		{name: "anonymous reads /readyz", attrs: pathRequest(anonymous, "get", "/readyz"), allow: true},
		{name: "anonymous reads /healthz", attrs: pathRequest(anonymous, "get", "/healthz"), allow: true},
		{name: "anonymous reads /version", attrs: pathRequest(anonymous, "get", "/version"), allow: true},
		{name: "anonymous reads /api", attrs: pathRequest(anonymous, "get", "/api")},
		{name: "anonymous reads /apis", attrs: pathRequest(anonymous, "get", "/apis")},
		{name: "anonymous reads /openapi/v2", attrs: pathRequest(anonymous, "get", "/openapi/v2")},
		{name: "anonymous reads /livez/etcd", attrs: pathRequest(anonymous, "get", "/livez/etcd")},
		{name: "anonymous lists pods", attrs: resourceRequest(anonymous, "list", "", "pods", "default", "")},
		{name: "anonymous gets a secret", attrs: resourceRequest(anonymous, "get", "", "secrets", "default", "tls")},

		{name: "system:masters gets a secret", attrs: resourceRequest(root, "get", "", "secrets", "kube-system", "tls")},
		{name: "system:masters lists namespaces", attrs: resourceRequest(root, "list", "", "namespaces", "", "")},
		{name: "system:masters binds cluster roles", attrs: resourceRequest(root, "create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "")},
		{name: "system:masters reads /metrics", attrs: pathRequest(root, "get", "/metrics")},

		{name: "user asks what it may do", attrs: resourceRequest(alice, "create", "authorization.k8s.io", "selfsubjectrulesreviews", "", ""), allow: true,
			reason: `RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "system:authenticated"`},
		{name: "user asks whether it may", attrs: resourceRequest(alice, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", ""), allow: true},
		{name: "user asks who it is", attrs: resourceRequest(alice, "create", "authentication.k8s.io", "selfsubjectreviews", "", ""), allow: true},
		{name: "user asks about others", attrs: resourceRequest(alice, "create", "authorization.k8s.io", "subjectaccessreviews", "", "")},
		{name: "user asks about others in a namespace", attrs: resourceRequest(alice, "create", "authorization.k8s.io", "localsubjectaccessreviews", "default", "")},
		{name: "anonymous asks what it may do", attrs: resourceRequest(anonymous, "create", "authorization.k8s.io", "selfsubjectrulesreviews", "", "")},

		{name: "viewer lists pods", attrs: resourceRequest(viewer, "list", "", "pods", "default", ""), allow: true,
			reason: `RBAC: allowed by ClusterRoleBinding "viewers" of ClusterRole "view" to Group "viewers"`},
		{name: "viewer reads a configmap", attrs: resourceRequest(viewer, "get", "", "configmaps", "default", "app"), allow: true},
		{name: "viewer watches deployments", attrs: resourceRequest(viewer, "watch", "apps", "deployments", "default", ""), allow: true},
		{name: "viewer reads a scale", attrs: resourceRequest(viewer, "get", "apps", "replicasets/scale", "default", "web"), allow: true},
		{name: "viewer deletes a pod", attrs: resourceRequest(viewer, "delete", "", "pods", "default", "web")},
		{name: "viewer scales a deployment", attrs: resourceRequest(viewer, "update", "apps", "deployments/scale", "default", "web")},
		{name: "viewer reads leases", attrs: resourceRequest(viewer, "list", "coordination.k8s.io", "leases", "default", "")},
		{name: "viewer reads roles", attrs: resourceRequest(viewer, "list", "rbac.authorization.k8s.io", "roles", "default", "")},
	}

	// No system identity and no public group may touch Secrets (nor the
	// scheduler ConfigMaps), in any namespace, by any verb, with or without
	// a name.
	for _, u := range []*user.DefaultInfo{scheduler, cm, leader, informers, saController, publisher, alice, anonymous, root, viewer} {
		resources := []string{"secrets"}
		if u == scheduler {
			resources = append(resources, "configmaps")
		}
		for _, res := range resources {
			for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} {
				for _, ns := range []string{"", "default", "kube-system"} {
					for _, name := range []string{"", "kube-root-ca.crt", "tls"} {
						cases = append(cases, authzCase{
							name:  fmt.Sprintf("%s %s %s in %q named %q", u.Name, verb, res, ns, name),
							attrs: resourceRequest(u, verb, "", res, ns, name),
						})
					}
				}
			}
		}
	}
	runCases(t, newTestAuthorizer(t, bootstrapLister(t, viewers)), cases)
}

// benchLister is the bootstrap policy plus n ClusterRoles, each bound to its
// own group; the benchmark user is in the last ten of those groups.
func benchLister(b *testing.B, n int) (*memLister, *user.DefaultInfo) {
	var objs []any
	u := testUser("bench-user", user.AllAuthenticated)
	for i := range n {
		name := fmt.Sprintf("bench:widgets-%d", i)
		objs = append(objs,
			testClusterRole(name, newRule("get", "list", "watch").groups("example.com").resources(fmt.Sprintf("widgets%d", i))),
			testClusterRoleBinding(name, name, groupSubject(fmt.Sprintf("bench:team-%d", i))),
		)
		if i >= n-10 {
			u.Groups = append(u.Groups, fmt.Sprintf("bench:team-%d", i))
		}
	}
	return bootstrapLister(b, objs...), u
}

func BenchmarkAuthorize(b *testing.B) {
	l, u := benchLister(b, 100)
	az := newTestAuthorizer(b, l)
	benches := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		// Matched by one of the first bootstrap bindings.
		{name: "admin", attrs: resourceRequest(testUser("ops", ClusterAdminsGroup), "get", "", "secrets", "default", "tls"), allow: true},
		{name: "scheduler bind", attrs: resourceRequest(testUser(SchedulerUser), "create", "", "pods/binding", "default", "web"), allow: true},
		{name: "discovery", attrs: pathRequest(u, "get", "/apis/apps/v1"), allow: true},
		// Matched by the last binding, after reading twelve roles.
		{name: "last binding", attrs: resourceRequest(u, "list", "example.com", "widgets99", "default", ""), allow: true},
		// Every binding visited, then the namespace's (empty) RoleBindings.
		{name: "denied", attrs: resourceRequest(u, "get", "", "secrets", "default", "tls")},
	}
	for _, bb := range benches {
		b.Run(bb.name, func(b *testing.B) {
			ctx := b.Context()
			for b.Loop() {
				d, _, err := az.Authorize(ctx, bb.attrs)
				if err != nil || (d == authorizer.DecisionAllow) != bb.allow {
					b.Fatalf("Authorize: got (%v, %v), want allow=%v", d, err, bb.allow)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// The user-facing roles, read as policy: what each level must and must not
// hold once aggregated.
func TestBootstrapPolicyUserFacingRoles(t *testing.T) {
	byName, _ := aggregatedBootstrapPolicy()
	rw := func(group string, resources ...string) rbacv1.PolicyRule {
		return newRule("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection").groups(group).resources(resources...).r
	}
	read := func(group string, resources ...string) rbacv1.PolicyRule {
		return newRule("get", "list", "watch").groups(group).resources(resources...).r
	}
	tests := []struct {
		role string
		// holds must be covered entirely; lacks must be covered in no part.
		holds, lacks []rbacv1.PolicyRule
	}{
		{
			role: "view",
			holds: []rbacv1.PolicyRule{
				read("", "pods", "pods/status", "configmaps", "serviceaccounts", "events", "namespaces"),
				read("apps", "deployments", "deployments/status", "deployments/scale", "replicasets", "replicasets/status", "replicasets/scale"),
				read("apps", "statefulsets", "statefulsets/status", "statefulsets/scale", "daemonsets", "daemonsets/status", "controllerrevisions"),
			},
			lacks: []rbacv1.PolicyRule{
				rw("", "secrets"),
				rw("coordination.k8s.io", "leases"),
				rw("rbac.authorization.k8s.io", "roles", "rolebindings", "clusterroles", "clusterrolebindings"),
				newRule("create", "update", "patch", "delete", "deletecollection").groups("", "apps").
					resources("pods", "configmaps", "serviceaccounts", "events", "namespaces", "deployments", "deployments/scale", "replicasets", "replicasets/scale").r,
				newRule("create", "update", "patch", "delete", "deletecollection").groups("apps").
					resources("statefulsets", "statefulsets/scale", "daemonsets", "controllerrevisions").r,
			},
		},
		{
			role: "edit",
			holds: []rbacv1.PolicyRule{
				rw("", "pods", "configmaps", "secrets", "serviceaccounts", "events"),
				rw("apps", "deployments", "deployments/scale", "replicasets", "replicasets/scale"),
				rw("apps", "statefulsets", "statefulsets/scale", "daemonsets"),
				rw("coordination.k8s.io", "leases"),
				read("", "namespaces", "pods/status"),
			},
			lacks: []rbacv1.PolicyRule{
				rw("rbac.authorization.k8s.io", "roles", "rolebindings", "clusterroles", "clusterrolebindings"),
				newRule("impersonate").groups("").resources("serviceaccounts").r,
				newRule("create", "update", "patch", "delete").groups("").resources("namespaces", "namespaces/status", "pods/status").r,
				newRule("update", "patch").groups("apps").resources("deployments/status", "replicasets/status", "statefulsets/status", "daemonsets/status").r,
				// A revision is the controller's record of a template.
				newRule("create", "update", "patch", "delete").groups("apps").resources("controllerrevisions").r,
				newRule("create").groups("authorization.k8s.io").resources("localsubjectaccessreviews").r,
			},
		},
		{
			role: "admin",
			holds: []rbacv1.PolicyRule{
				rw("rbac.authorization.k8s.io", "roles", "rolebindings"),
				rw("", "secrets"),
				newRule("create").groups("authorization.k8s.io").resources("localsubjectaccessreviews").r,
			},
			lacks: []rbacv1.PolicyRule{
				rw("rbac.authorization.k8s.io", "clusterroles", "clusterrolebindings"),
				rw("", "nodes"),
				newRule("create", "update", "patch", "delete").groups("").resources("namespaces").r,
				newRule("escalate", "bind").groups("rbac.authorization.k8s.io").resources("roles", "clusterroles").r,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			role := byName[tt.role]
			if role == nil || role.AggregationRule == nil {
				t.Fatalf("ClusterRole %s: got %+v, want an aggregated role", tt.role, role)
			}
			if missing := Uncovered(role.Rules, tt.holds); len(missing) > 0 {
				t.Errorf("missing: got %q, want none", describeRules(missing))
			}
			for _, lack := range tt.lacks {
				forEachPermission(&lack, func(p request) {
					if p.allowedByAny(role.Rules) {
						t.Errorf("holds %s; want not", compactString(ptr(p.rule())))
					}
				})
			}
		})
	}

	// Every verb view holds anywhere is a read, and no resource it names is
	// a secret (nor a wildcard that would include one).
	for _, rule := range byName["view"].Rules {
		for _, v := range rule.Verbs {
			if !slices.Contains([]string{"get", "list", "watch"}, v) {
				t.Errorf("view rule %+v: verb %q, want only get, list, watch", rule, v)
			}
		}
		for _, field := range [][]string{rule.APIGroups, rule.Resources, rule.NonResourceURLs} {
			for _, v := range field {
				if strings.Contains(v, "*") || strings.HasPrefix(v, "secrets") {
					t.Errorf("view rule %+v holds %q; want no wildcards or secrets", rule, v)
				}
			}
		}
	}

	// Each level holds the one below.
	for _, pair := range [][2]string{{"edit", "view"}, {"admin", "edit"}} {
		if missing := Uncovered(byName[pair[0]].Rules, byName[pair[1]].Rules); len(missing) > 0 {
			t.Errorf("%s lacks %q of %s; want it to hold all of %[3]s", pair[0], describeRules(missing), pair[1])
		}
	}
}

// BootstrapPolicy returns admin, edit and view already aggregated:
// aggregating again, as the API server does on every change, changes nothing.
func TestBootstrapPolicyAggregated(t *testing.T) {
	roles, _ := BootstrapPolicy()
	if got := AggregateClusterRoles(roles); len(got) != 0 {
		names := make([]string, 0, len(got))
		for _, r := range got {
			names = append(names, r.Name)
		}
		t.Errorf("AggregateClusterRoles(BootstrapPolicy()): changed %q, want nothing", names)
	}
	for _, r := range roles {
		if r.AggregationRule != nil && len(r.Rules) == 0 {
			t.Errorf("ClusterRole %s: aggregated to no rules", r.Name)
		}
	}
}

// The user-facing roles bound in one namespace grant there and nowhere else,
// and only a namespace's admin may grant in it, within what it holds.
func TestBootstrapPolicyNamespaceRoles(t *testing.T) {
	l := bootstrapLister(t,
		testRoleBinding("team", "viewers", "ClusterRole", "view", userSubject("vic")),
		testRoleBinding("team", "editors", "ClusterRole", "edit", userSubject("eve")),
		testRoleBinding("team", "admins", "ClusterRole", "admin", userSubject("ada")),
	)
	az := newTestAuthorizer(t, l)
	vic := testUser("vic", user.AllAuthenticated)
	eve := testUser("eve", user.AllAuthenticated)
	ada := testUser("ada", user.AllAuthenticated)
	cases := []authzCase{
		{name: "viewer gets its namespace", attrs: resourceRequest(vic, "get", "", "namespaces", "team", "team"), allow: true,
			reason: `RBAC: allowed by RoleBinding "viewers/team" of ClusterRole "view" to User "vic"`},
		{name: "viewer lists pods", attrs: resourceRequest(vic, "list", "", "pods", "team", ""), allow: true},
		{name: "viewer lists pods elsewhere", attrs: resourceRequest(vic, "list", "", "pods", "other", "")},
		{name: "viewer lists namespaces", attrs: resourceRequest(vic, "list", "", "namespaces", "", "")},
		{name: "viewer gets a secret", attrs: resourceRequest(vic, "get", "", "secrets", "team", "tls")},
		{name: "viewer lists secrets", attrs: resourceRequest(vic, "list", "", "secrets", "team", "")},
		{name: "viewer creates a pod", attrs: resourceRequest(vic, "create", "", "pods", "team", "")},

		{name: "editor gets a secret", attrs: resourceRequest(eve, "get", "", "secrets", "team", "tls"), allow: true,
			reason: `RBAC: allowed by RoleBinding "editors/team" of ClusterRole "edit" to User "eve"`},
		{name: "editor creates a deployment", attrs: resourceRequest(eve, "create", "apps", "deployments", "team", ""), allow: true},
		{name: "editor scales a replicaset", attrs: resourceRequest(eve, "patch", "apps", "replicasets/scale", "team", "web"), allow: true},
		{name: "editor takes a lease", attrs: resourceRequest(eve, "update", "coordination.k8s.io", "leases", "team", "app"), allow: true},
		{name: "editor writes deployment status", attrs: resourceRequest(eve, "update", "apps", "deployments/status", "team", "web")},
		{name: "editor creates a rolebinding", attrs: resourceRequest(eve, "create", "rbac.authorization.k8s.io", "rolebindings", "team", "")},
		{name: "editor deletes its namespace", attrs: resourceRequest(eve, "delete", "", "namespaces", "team", "team")},
		{name: "editor gets a secret elsewhere", attrs: resourceRequest(eve, "get", "", "secrets", "other", "tls")},

		{name: "admin creates a rolebinding", attrs: resourceRequest(ada, "create", "rbac.authorization.k8s.io", "rolebindings", "team", ""), allow: true,
			reason: `RBAC: allowed by RoleBinding "admins/team" of ClusterRole "admin" to User "ada"`},
		{name: "admin creates a role", attrs: resourceRequest(ada, "create", "rbac.authorization.k8s.io", "roles", "team", ""), allow: true},
		{name: "admin deletes a secret", attrs: resourceRequest(ada, "delete", "", "secrets", "team", "tls"), allow: true},
		{name: "admin creates a clusterrolebinding", attrs: resourceRequest(ada, "create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "")},
		{name: "admin creates a rolebinding elsewhere", attrs: resourceRequest(ada, "create", "rbac.authorization.k8s.io", "rolebindings", "other", "")},
		{name: "admin may not escalate", attrs: resourceRequest(ada, "escalate", "rbac.authorization.k8s.io", "roles", "team", "r")},
		{name: "admin may not bind cluster-admin", attrs: resourceRequest(ada, "bind", "rbac.authorization.k8s.io", "clusterroles", "team", "cluster-admin")},
	}
	runCases(t, az, cases)

	// What ada may grant in team is bounded by admin: all of edit, but not
	// cluster-admin, and nothing at all outside team.
	roles, _ := aggregatedBootstrapPolicy()
	grants := []struct {
		name      string
		namespace string
		rules     []rbacv1.PolicyRule
		allow     bool
	}{
		{name: "edit in team", namespace: "team", rules: roles["edit"].Rules, allow: true},
		{name: "admin in team", namespace: "team", rules: roles["admin"].Rules, allow: true},
		{name: "cluster-admin in team", namespace: "team", rules: roles["cluster-admin"].Rules},
		{name: "view in other", namespace: "other", rules: roles["view"].Rules},
		{name: "view cluster-wide", namespace: "", rules: roles["view"].Rules},
	}
	for _, g := range grants {
		t.Run("ada grants "+g.name, func(t *testing.T) {
			err := az.ConfirmNoEscalation(t.Context(), ada, g.namespace, g.rules)
			if (err == nil) != g.allow {
				t.Errorf("ConfirmNoEscalation: got %v, want allowed=%v", err, g.allow)
			}
		})
	}
}
