// Package rbac is trustplane's RBAC authorizer, the escalation checks that
// guard RBAC objects, ClusterRole aggregation, and the bootstrap policy.
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
//
// # What a user holds
//
// [Authorizer.RulesFor] lists the rules that apply to a user in a namespace
// (kube's VisitRulesFor). It walks the same bindings as Authorize, in the same
// way, so a request is allowed exactly when one of those rules matches it. It
// answers SelfSubjectRulesReview, and it is the measure of the escalation
// checks below.
//
// # What a user used
//
// [Usage] sets what a user's bindings grant against the requests an audit
// log shows it made: each rule split by [ExpandRule] into permissions (one
// verb, group, resource, name, as far as they are finite; wildcards stay
// wildcards) and, for each, how many requests it allowed, matched by the
// authorizer's own code. [CoveringRules] is the other half: the smallest
// rules, per namespace, that allow every one of the requests, each of
// whose permissions some request used (`trustplane rbac unused`).
//
// # Escalation
//
// RBAC objects are themselves guarded, as in kube (pkg/registry/rbac/*/
// policybased): a user who may create Roles or RoleBindings must not thereby
// give anyone, itself included, a permission it does not hold. The API
// server enforces these rules in the verb handlers of the four RBAC
// resources, before storage; [Authorizer.ConfirmNoEscalation] and
// [Authorizer.ResolveRoleRef] are its tools, and Authorize answers the verb
// checks. No identity is exempt (kube exempts system:masters; trustplane has
// no such group).
//
//  1. Creating or updating a Role or ClusterRole is allowed if the user may
//     "escalate" it: Authorize with verb "escalate", group
//     rbac.authorization.k8s.io, resource "roles" or "clusterroles", and the
//     request's namespace and name (a create has no name yet, so an escalate
//     grant limited by resourceNames does not allow creating). Otherwise
//     ConfirmNoEscalation(user, the role's namespace or "" for a ClusterRole,
//     the role's rules) must return nil.
//  2. Without "escalate", a ClusterRole created with an aggregationRule, or
//     updated to a different one, also needs ConfirmNoEscalation(user, "",
//     cluster-admin's rules: verb "*" on resource "*" in group "*", and verb
//     "*" on non-resource URL "*"), which kube words "must have cluster-admin privileges to use the
//     aggregationRule". Checking the rules the selectors gather today is not
//     enough: they gather every ClusterRole labelled to match later too.
//  3. Creating or updating a RoleBinding or ClusterRoleBinding is allowed if
//     the user may "bind" the role it refers to: Authorize with verb "bind",
//     group rbac.authorization.k8s.io, resource "roles" or "clusterroles" by
//     roleRef.kind, name roleRef.name, and the binding's namespace ("" for a
//     ClusterRoleBinding), so that bind can be delegated per namespace.
//     Otherwise ResolveRoleRef(binding's namespace, roleRef) must find the
//     role (a binding to a role that does not exist is refused, as kube
//     refuses it, since whoever creates that role later would unknowingly
//     grant it) and ConfirmNoEscalation(user, binding's namespace, its rules)
//     must return nil. Because a RoleBinding's rules are measured in its
//     namespace, the admin of one namespace may bind admin there and nowhere
//     else.
//  4. An update that changes only ownerReferences and finalizers (what the
//     garbage collector writes) needs no check; a delete needs none.
//
// A refusal is a Forbidden status whose message is ConfirmNoEscalation's
// error text, which is safe to show the user; a lookup failure it wraps goes
// to the log.
//
// # Aggregation
//
// A ClusterRole with an aggregationRule holds the rules of the ClusterRoles
// its label selectors match. [AggregateClusterRoles] computes them for a set
// of ClusterRoles, as kube's clusterrole-aggregation controller does; the API
// server runs it over all ClusterRoles whenever one changes and writes back
// the roles it returns (a system write, not subject to the checks above).
// Authorize reads only the stored rules, so until that write an aggregated
// role grants what it held before.
//
// # Bootstrap policy
//
// [BootstrapPolicy] holds cluster-admin (bound to [ClusterAdminsGroup]),
// discovery and health roles, the scheduler's and the controller-manager's
// roles, system:basic-user (bound to system:authenticated: "can I" and
// "who am I" reviews), and kube's user-facing admin, edit and view, bound to
// no one, for operators to bind in namespaces. view reads workloads and their
// configuration but never Secrets; edit also reads and writes Secrets and
// workloads; admin also manages the namespace's Roles and RoleBindings.
// A node's roles are kube's: system:node-bootstrapper (create and read
// CertificateSigningRequests) bound to system:nodes, and the nodeclient and
// selfnodeclient roles that the CSR approver asks about, bound to
// system:bootstrappers and system:nodes. A bootstrap token gets
// trustplane:csr-creator (create only); it reads its own CSRs through
// rbac/bootstrapper.
package rbac
