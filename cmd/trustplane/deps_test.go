package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The scheduler, the controllers and the node agent talk to the API
// server only: none imports the server or etcd (DESIGN.md, rule 1). The
// scheduler and the node agent import no package of k8s.io/apiserver
// either; the controllers do, through rbac, for the names of users and
// groups (authentication/user, serviceaccount) and authorizer's types,
// which hold no server.
func TestClientsReachNoServer(t *testing.T) {
	banned := []string{"github.com/trustplane/trustplane/apiserver", "github.com/trustplane/trustplane/etcd", "go.etcd.io/etcd/"}
	for _, tc := range []struct {
		client string
		banned []string
	}{
		{"scheduler", slices.Concat(banned, []string{"k8s.io/apiserver/"})},
		{"controllers", banned},
		{"node", slices.Concat(banned, []string{"k8s.io/apiserver/"})},
	} {
		out, err := exec.Command("go", "list", "-deps", "github.com/trustplane/trustplane/"+tc.client+"/...").Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tc.client, err)
		}
		for _, pkg := range strings.Fields(string(out)) {
			for _, b := range tc.banned {
				if strings.HasPrefix(pkg, b) {
					t.Errorf("%s depends on %s", tc.client, pkg)
				}
			}
		}
	}
}
