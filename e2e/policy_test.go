package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// registryPolicy is the image registry policy of OPA's Kubernetes
// admission tutorial, as written there.
const registryPolicy = `package kubernetes.admission

deny contains msg if {
	input.request.kind.kind == "Pod"
	image := input.request.object.spec.containers[_].image
	not startswith(image, "hooli.com/")
	msg := sprintf("image '%v' comes from untrusted registry", [image])
}
`

// A policy written for kube-mgmt, dropped into the policy directory of a
// running cluster, refuses a pod from another registry through stock
// kubectl, without a restart, and lets one from the trusted registry in.
func TestRegistryPolicyWithKubectl(t *testing.T) {
	forEachKubectl(t, func(t *testing.T, k *kubectl, c *e2etest.Cluster) {
		if err := os.WriteFile(filepath.Join(c.Dir, "policies", "image-registry.rego"), []byte(registryPolicy), 0o600); err != nil {
			t.Fatal(err)
		}
		// The policy directory is read again every two seconds.
		deadline := time.Now().Add(30 * time.Second)
		for {
			res := k.run(t, c.AdminConf(), "run", "web", "--image=nginx", "--restart=Never")
			if res.exit != 0 {
				want := `image 'nginx' comes from untrusted registry`
				if !strings.Contains(res.stderr, want) || !strings.Contains(res.stderr, "policy image-registry") {
					t.Fatalf("kubectl run: exit %d, stderr %q; want the policy's refusal %q", res.exit, res.stderr, want)
				}
				break
			}
			// Created before the policy was loaded: try again.
			k.run(t, c.AdminConf(), "delete", "pod", "web", "--wait=false")
			if time.Now().After(deadline) {
				t.Fatalf("the policy was not in force within 30s; trustplane said:\n%s", c.Output())
			}
			time.Sleep(200 * time.Millisecond)
		}
		if res := k.run(t, c.AdminConf(), "run", "trusted", "--image=hooli.com/nginx", "--restart=Never"); res.exit != 0 {
			t.Fatalf("a pod from the trusted registry: exit %d, stderr %q", res.exit, res.stderr)
		}
	})
}
