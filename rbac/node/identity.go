package node

import (
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
)

// userPrefix starts the user name of every node identity.
const userPrefix = "system:node:"

// NodeName reports whether u is a node identity: a user named
// "system:node:<name>" that is in the group "system:nodes". The name alone
// is not enough: a user named like a node but outside the group is an
// ordinary user.
//
// ok is true with an empty name for the user "system:node:" in that group.
// Such a user is a node that cannot be told apart from others: callers must
// refuse it, never treat "" as a node name (pods with spec.nodeName "" are
// the unscheduled ones).
func NodeName(u user.Info) (name string, ok bool) {
	if u == nil {
		return "", false
	}
	name, ok = strings.CutPrefix(u.GetName(), userPrefix)
	if !ok || !slices.Contains(u.GetGroups(), user.NodesGroup) {
		return "", false
	}
	return name, true
}
