package rbac

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// whoCanFixture is the bootstrap policy plus bindings of every shape that
// Authorize treats specially: RoleBindings in two namespaces, to Roles and
// ClusterRoles, ServiceAccounts with and without a namespace, duplicate,
// malformed and unmatchable subjects, dangling and foreign roleRefs, nil
// bindings, resourceNames, subresources and non-resource URLs.
func whoCanFixture(t testing.TB) *memLister {
	return bootstrapLister(t,
		testClusterRole("secret-reader", newRule("get", "list", "watch").groups("").resources("secrets")),
		testClusterRole("pod-logs", newRule("get").groups("").resources("pods/log")),
		testClusterRole("web-config", newRule("get").groups("").resources("configmaps").names("web")),
		testClusterRole("metrics-reader", newRule("get").urls("/metrics", "/logs/*")),
		testClusterRole("status-writer", newRule("update", "patch").groups("*").resources("*/status")),
		testRole("a", "deployer", newRule("create", "update").groups("apps").resources("deployments")),
		testRole("b", "deployer", newRule("get").groups("").resources("pods")),

		testClusterRoleBinding("readers", "secret-reader",
			groupSubject("auditors"),
			userSubject("carol"),
			serviceAccountSubject("kube-system", "reader"),
			// No namespace in a ClusterRoleBinding: no ServiceAccount is it.
			serviceAccountSubject("", "orphan"),
			rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: "evil.example", Name: "mallory"},
			rbacv1.Subject{Kind: "Robot", APIGroup: rbacv1.GroupName, Name: "r2d2"},
			rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: ""},
		),
		testClusterRoleBinding("logs", "pod-logs", userSubject("dave")),
		testClusterRoleBinding("metrics", "metrics-reader", groupSubject("monitoring")),
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "to-role"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "deployer"},
			Subjects:   []rbacv1.Subject{userSubject("eve")},
		},
		(*rbacv1.ClusterRoleBinding)(nil),

		testRoleBinding("a", "read-secrets", "ClusterRole", "secret-reader",
			userSubject("alice"),
			serviceAccountSubject("", "builder"), // the binding's namespace, a
			serviceAccountSubject("b", "remote"),
		),
		testRoleBinding("a", "deploy", "Role", "deployer",
			groupSubject("devs"),
			rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice"}, // apiGroup "" is accepted
			userSubject("alice"),
		),
		testRoleBinding("b", "deploy", "Role", "deployer", userSubject("bob")),
		testRoleBinding("a", "dangling", "Role", "missing", userSubject("eve")),
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "foreign-ref"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "example.com", Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{userSubject("eve")},
		},
		testRoleBinding("a", "web", "ClusterRole", "web-config", userSubject("frank")),
		testRoleBinding("a", "status", "ClusterRole", "status-writer", serviceAccountSubject("a", "controller")),
		(*rbacv1.RoleBinding)(nil),
	)
}

// whoCan calls WhoCan with the objects l holds.
func whoCan(l *memLister, attrs authorizer.Attributes) []Grant {
	var crs []*rbacv1.ClusterRole
	for _, r := range l.clusterRoles {
		crs = append(crs, r)
	}
	var roles []*rbacv1.Role
	for _, r := range l.roles {
		roles = append(roles, r)
	}
	return WhoCan(attrs, crs, roles, l.clusterRoleBindings, l.roleBindings)
}

func crbGrant(s rbacv1.Subject, binding, role string) Grant {
	return Grant{Subject: s, BindingKind: "ClusterRoleBinding", BindingName: binding, RoleKind: "ClusterRole", RoleName: role}
}

func rbGrant(s rbacv1.Subject, namespace, binding, roleKind, role string) Grant {
	return Grant{Subject: s, BindingKind: "RoleBinding", BindingNamespace: namespace, BindingName: binding, RoleKind: roleKind, RoleName: role}
}

// whoCanCases are requests (without a user) and, for some, the grants they
// must get from whoCanFixture.
var whoCanCases = []struct {
	name  string
	attrs authorizer.AttributesRecord
	want  []Grant // nil: only the agreement with Authorize is checked
}{
	{name: "get secret in a", attrs: resourceRequest(nil, "get", "", "secrets", "a", "tls"), want: []Grant{
		crbGrant(groupSubject("auditors"), "readers", "secret-reader"),
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
		rbGrant(serviceAccountSubject("a", "builder"), "a", "read-secrets", "ClusterRole", "secret-reader"),
		rbGrant(serviceAccountSubject("b", "remote"), "a", "read-secrets", "ClusterRole", "secret-reader"),
		crbGrant(serviceAccountSubject("kube-system", "reader"), "readers", "secret-reader"),
		rbGrant(userSubject("alice"), "a", "read-secrets", "ClusterRole", "secret-reader"),
		crbGrant(userSubject("carol"), "readers", "secret-reader"),
	}},
	{name: "list secrets in all namespaces", attrs: resourceRequest(nil, "list", "", "secrets", "", ""), want: []Grant{
		crbGrant(groupSubject("auditors"), "readers", "secret-reader"),
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
		crbGrant(serviceAccountSubject("kube-system", "reader"), "readers", "secret-reader"),
		crbGrant(userSubject("carol"), "readers", "secret-reader"),
	}},
	{name: "delete secret in a", attrs: resourceRequest(nil, "delete", "", "secrets", "a", "tls"), want: []Grant{
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
	}},
	{name: "get secret in b", attrs: resourceRequest(nil, "get", "", "secrets", "b", "tls")},
	{name: "list secrets' metadata in a", attrs: resourceRequest(nil, "list", "", "secrets/metadata", "a", ""), want: []Grant{
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
		crbGrant(serviceAccountSubject("kube-system", "generic-garbage-collector"), "system:controller:generic-garbage-collector", "system:controller:generic-garbage-collector"),
		crbGrant(serviceAccountSubject("kube-system", "namespace-controller"), "system:controller:namespace-controller", "system:controller:namespace-controller"),
	}},
	{name: "create deployments in a", attrs: resourceRequest(nil, "create", "apps", "deployments", "a", ""), want: []Grant{
		rbGrant(groupSubject("devs"), "a", "deploy", "Role", "deployer"),
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
		rbGrant(userSubject("alice"), "a", "deploy", "Role", "deployer"),
	}},
	{name: "create deployments in b", attrs: resourceRequest(nil, "create", "apps", "deployments", "b", ""), want: []Grant{
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
	}},
	{name: "create deployments of the core group in a", attrs: resourceRequest(nil, "create", "", "deployments", "a", ""), want: []Grant{
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
	}},
	{name: "get pod in b", attrs: resourceRequest(nil, "get", "", "pods", "b", "web")},
	{name: "get pod log in a", attrs: resourceRequest(nil, "get", "", "pods/log", "a", "web"), want: []Grant{
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
		crbGrant(userSubject("dave"), "logs", "pod-logs"),
	}},
	{name: "get configmap web in a", attrs: resourceRequest(nil, "get", "", "configmaps", "a", "web"), want: []Grant{
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
		rbGrant(userSubject("frank"), "a", "web", "ClusterRole", "web-config"),
	}},
	{name: "update configmap web in a", attrs: resourceRequest(nil, "update", "", "configmaps", "a", "web"), want: []Grant{
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
	}},
	{name: "get configmap db in a", attrs: resourceRequest(nil, "get", "", "configmaps", "a", "db")},
	{name: "list configmaps in a", attrs: resourceRequest(nil, "list", "", "configmaps", "a", "")},
	{name: "update deployment status in a", attrs: resourceRequest(nil, "update", "apps", "deployments/status", "a", "web"), want: []Grant{
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
		rbGrant(serviceAccountSubject("a", "controller"), "a", "status", "ClusterRole", "status-writer"),
		crbGrant(serviceAccountSubject(ControllersNamespace, "deployment-controller"), ControllerRole("deployment-controller"), ControllerRole("deployment-controller")),
	}},
	{name: "update node status", attrs: resourceRequest(nil, "update", "", "nodes/status", "", "n1")},
	{name: "get nodes", attrs: resourceRequest(nil, "get", "", "nodes", "", "n1")},
	{name: "escalate clusterroles", attrs: resourceRequest(nil, "escalate", rbacv1.GroupName, "clusterroles", "", "view")},
	{name: "create rolebindings in a", attrs: resourceRequest(nil, "create", rbacv1.GroupName, "rolebindings", "a", "")},
	{name: "create selfsubjectreviews", attrs: resourceRequest(nil, "create", "authentication.k8s.io", "selfsubjectreviews", "", ""), want: []Grant{
		crbGrant(groupSubject(user.AllAuthenticated), "system:basic-user", "system:basic-user"),
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
	}},
	{name: "get /metrics", attrs: pathRequest(nil, "get", "/metrics"), want: []Grant{
		crbGrant(groupSubject("monitoring"), "metrics", "metrics-reader"),
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
	}},
	{name: "get /logs/x", attrs: pathRequest(nil, "get", "/logs/kube.log")},
	{name: "post /metrics", attrs: pathRequest(nil, "post", "/metrics"), want: []Grant{
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
	}},
	{name: "get /healthz", attrs: pathRequest(nil, "get", "/healthz"), want: []Grant{
		crbGrant(groupSubject(user.AllAuthenticated), "system:discovery", "system:discovery"),
		crbGrant(groupSubject(user.AllAuthenticated), "system:public-info-viewer", "system:public-info-viewer"),
		crbGrant(groupSubject(user.AllUnauthenticated), "system:public-info-viewer", "system:public-info-viewer"),
		crbGrant(groupSubject(ClusterAdminsGroup), "trustplane:cluster-admins", "cluster-admin"),
	}},
}

func TestWhoCan(t *testing.T) {
	l := whoCanFixture(t)
	for _, c := range whoCanCases {
		if c.want == nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, whoCan(l, c.attrs)); diff != "" {
				t.Errorf("WhoCan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWhoCanAgreesWithAuthorize checks, for every case and every user
// (fixed ones and one for each subject WhoCan returns), that Authorize
// allows the user exactly when it is one of WhoCan's subjects, and that the
// binding Authorize names is one of those WhoCan gives for it.
func TestWhoCanAgreesWithAuthorize(t *testing.T) {
	l := whoCanFixture(t)
	az := newTestAuthorizer(t, l)
	authenticated := func(name string, groups ...string) user.Info {
		return testUser(name, append(groups, user.AllAuthenticated)...)
	}
	users := []user.Info{
		testUser("nobody"),
		testUser(user.Anonymous, user.AllUnauthenticated),
		authenticated("alice"), authenticated("bob"), authenticated("carol"), authenticated("dave"),
		authenticated("eve"), authenticated("frank"), authenticated("mallory"), authenticated("r2d2"),
		authenticated("alice", "devs"), authenticated("grace", "devs", "monitoring"),
		authenticated("heidi", "auditors"), authenticated("ops", ClusterAdminsGroup),
		authenticated(SchedulerUser), authenticated(ControllerManagerUser),
		authenticated("system:serviceaccount:a:builder", "system:serviceaccounts", "system:serviceaccounts:a"),
		authenticated("system:serviceaccount:b:builder", "system:serviceaccounts", "system:serviceaccounts:b"),
		authenticated("system:serviceaccount:b:remote", "system:serviceaccounts", "system:serviceaccounts:b"),
		authenticated("system:serviceaccount:kube-system:reader"),
		authenticated("system:serviceaccount:a:controller"),
		authenticated("system:serviceaccount::orphan"),
		authenticated("system:serviceaccount:a:orphan"),
	}
	for _, c := range whoCanCases {
		t.Run(c.name, func(t *testing.T) {
			grants := whoCan(l, c.attrs)
			if !slices.IsSortedFunc(grants, compareGrants) {
				t.Errorf("WhoCan: grants not sorted: %+v", grants)
			}
			checked := slices.Clone(users)
			for _, g := range grants {
				checked = append(checked, subjectUser(g.Subject))
			}
			for _, u := range checked {
				attrs := c.attrs
				attrs.User = u
				d, reason, err := az.Authorize(t.Context(), attrs)
				if err != nil {
					t.Fatalf("Authorize(%s): %v", u.GetName(), err)
				}
				var reasons []string
				for _, g := range grants {
					if subjectMatches(u, &g.Subject, g.BindingNamespace) {
						reasons = append(reasons, grantReason(g))
					}
				}
				allowed := d == authorizer.DecisionAllow
				switch {
				case allowed != (len(reasons) > 0):
					t.Errorf("user %q groups %q: Authorize allowed=%v (%q), WhoCan grants it by %q",
						u.GetName(), u.GetGroups(), allowed, reason, reasons)
				case allowed && !slices.Contains(reasons, reason):
					t.Errorf("user %q groups %q: Authorize says %q, not one of WhoCan's %q",
						u.GetName(), u.GetGroups(), reason, reasons)
				}
			}
		})
	}
}

// subjectUser is the user that s describes, alone: a member of no other
// group.
func subjectUser(s rbacv1.Subject) user.Info {
	switch s.Kind {
	case rbacv1.GroupKind:
		return testUser("member-of-"+s.Name, s.Name)
	case rbacv1.ServiceAccountKind:
		return testUser(serviceAccountPrefix + s.Namespace + ":" + s.Name)
	default:
		return testUser(s.Name)
	}
}

// grantReason is the reason Authorize gives when g allows a request.
func grantReason(g Grant) string {
	gr := grant{
		binding:   g.BindingName,
		namespace: g.BindingNamespace,
		roleRef:   rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: g.RoleKind, Name: g.RoleName},
		subject:   &g.Subject,
	}
	return gr.allowReason()
}

func TestWhoCanEdges(t *testing.T) {
	l := whoCanFixture(t)
	if got := WhoCan(nil, nil, nil, nil, nil); got != nil {
		t.Errorf("WhoCan(nil attrs): got %+v, want nil", got)
	}
	attrs := resourceRequest(nil, "get", "", "secrets", "a", "tls")
	if got := WhoCan(attrs, nil, nil, l.clusterRoleBindings, l.roleBindings); len(got) != 0 {
		t.Errorf("WhoCan without roles: got %+v, want none", got)
	}

	// The objects are read, never modified.
	before := newMemLister(t)
	for _, b := range l.clusterRoleBindings {
		before.clusterRoleBindings = append(before.clusterRoleBindings, b.DeepCopy())
	}
	for _, b := range l.roleBindings {
		before.roleBindings = append(before.roleBindings, b.DeepCopy())
	}
	for _, r := range l.clusterRoles {
		before.clusterRoles[r.Name] = r.DeepCopy()
	}
	for k, r := range l.roles {
		before.roles[k] = r.DeepCopy()
	}
	grants := whoCan(l, attrs)
	for i := range grants {
		grants[i].Subject.Name = "changed"
	}
	if diff := cmp.Diff(before, l, cmp.AllowUnexported(memLister{})); diff != "" {
		t.Errorf("WhoCan modified its objects (-before +after):\n%s", diff)
	}

	// A Role of another namespace with the same name is not the one a
	// RoleBinding refers to.
	other := newMemLister(t,
		testRole("b", "reader", newRule("get").groups("").resources("secrets")),
		testRoleBinding("a", "reader", "Role", "reader", userSubject("alice")),
	)
	if got := whoCan(other, attrs); len(got) != 0 {
		t.Errorf("RoleBinding in a to a Role of b: got %+v, want none", got)
	}
}
