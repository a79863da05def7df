package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The scheduler, the controllers and the node agent talk to the API
// server only: none imports the server or etcd (DESIGN.md, rule 1).
func TestClientsReachNoServer(t *testing.T) {
	for _, client := range []string{"scheduler", "controllers", "node"} {
		out, err := exec.Command("go", "list", "-deps", "github.com/trustplane/trustplane/"+client+"/...").Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", client, err)
		}
		for _, pkg := range strings.Fields(string(out)) {
			for _, banned := range []string{"github.com/trustplane/trustplane/apiserver", "github.com/trustplane/trustplane/etcd", "go.etcd.io/etcd/"} {
				if strings.HasPrefix(pkg, banned) {
					t.Errorf("%s depends on %s", client, pkg)
				}
			}
		}
	}
}
