// Package rbac is trustplane's RBAC authorizer and the bootstrap policy for
// its system identities.
//
// The [Authorizer] follows the semantics of kube-apiserver's RBAC authorizer
// (plugin/pkg/auth/authorizer/rbac), re-implemented here. It keeps no cache:
// every decision reads ClusterRoleBindings, RoleBindings, ClusterRoles and
// Roles live through a [Lister], so a change to RBAC objects takes effect on the
// next request. The package depends only on that small interface and never on
// trustplane's apiserver or etcd packages.
//
// Decisions fail closed. Authorize returns authorizer.DecisionAllow only when a
// rule matched the request; anything else is authorizer.DecisionNoOpinion,
// which kube treats as "not allowed" (the zero Decision is Deny). A Lister
// error never turns into an allow: it is returned with NoOpinion unless some
// other binding read successfully allows the request (RBAC only adds grants,
// so a binding that could not be read can only have added more). No user,
// group or name is special: in particular "system:masters" gets nothing that
// RBAC objects do not grant it. The cluster administrator is the ordinary
// group [ClusterAdminsGroup], bound to cluster-admin by [BootstrapPolicy].
//
// Typical use, with l reading from storage:
//
//	az, err := rbac.New(l)
//	if err != nil {
//		return err
//	}
//	decision, reason, err := az.Authorize(ctx, attrs)
//	if decision != authorizer.DecisionAllow {
//		// refuse: 403, or 500 when err != nil; log err, never send it
//	}
//
// Resource wildcards are kube-apiserver's: "*" and "*/sub". A rule naming
// "pods/*" matches no real subresource, there and here, so that a role means
// the same in both.
package rbac
