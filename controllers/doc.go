// Package controllers is trustplane's controller manager: ordinary
// client-go controllers, each running under its own identity.
//
// The controller manager's own credential (controller-manager.conf, user
// system:kube-controller-manager) may do one thing: obtain bound tokens,
// through TokenRequest, for the ServiceAccounts of kube-system that
// rbac.Controllers names. Each controller writes with its own token, as
// system:serviceaccount:kube-system:<controller>, within its own
// ClusterRole; the informers they share read with the token of
// shared-informers, which may list and watch and read no Secret; leader
// election holds the Lease kube-system/kube-controller-manager with the
// token of kube-controller-manager. The tokens are renewed before they
// expire.
//
// The package talks to the API server only: it imports neither the
// server nor etcd (DESIGN.md, rule 1; cmd/trustplane's TestClientsReachNoServer).
package controllers
