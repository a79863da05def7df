package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

const deploymentManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:IMAGE
`

const nodeManifest = `apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {node-role.kubernetes.io/worker: ""}
`

const podManifest = `apiVersion: v1
kind: Pod
metadata:
  name: p1
  labels: {app: solo}
spec:
  containers:
  - name: c
    image: busybox:1.36
`

// listManifest is what `kubectl get -o yaml` prints for several objects:
// a List, which kubectl validates on the client against /openapi/v2 in
// protobuf, whatever the server says of fieldValidation.
const listManifest = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: listed-a
  data: {k: a}
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: listed-b
  data: {k: b}
`

// unknownFieldManifest is a ConfigMap with a field ConfigMaps lack.
const unknownFieldManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: NAME
bogus: 1
`

// TestKubectlWorkflows runs kubectl's everyday commands with default
// flags: apply (client- and server-side), edit, patch, scale, explain,
// describe, the output formats, and deletion by label; and field
// validation: on the client for a List, on the server for everything
// else.
func TestKubectlWorkflows(t *testing.T) {
	forEachKubectl(t, func(t *testing.T, k *kubectl, c *e2etest.Cluster) {
		dir := t.TempDir()
		manifest := func(name, image string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(strings.ReplaceAll(deploymentManifest, "IMAGE", image)), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
		pod := filepath.Join(dir, "pod.yaml")
		if err := os.WriteFile(pod, []byte(podManifest), 0o600); err != nil {
			t.Fatal(err)
		}
		node := filepath.Join(dir, "node.yaml")
		if err := os.WriteFile(node, []byte(nodeManifest), 0o600); err != nil {
			t.Fatal(err)
		}
		v1, v2, v3 := manifest("v1.yaml", "1.25"), manifest("v2.yaml", "1.26"), manifest("v3.yaml", "1.28")
		write := func(name, content string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
		list := write("list.yaml", listManifest)
		badList := write("bad-list.yaml", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: listed-c}\n  bogus: 1\n")
		unknownWarn := write("unknown-warn.yaml", strings.ReplaceAll(unknownFieldManifest, "NAME", "unknown-warn"))
		unknownStrict := write("unknown-strict.yaml", strings.ReplaceAll(unknownFieldManifest, "NAME", "unknown-strict"))
		unknownRaw := write("unknown-raw.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"unknown-raw"},"bogus":1}`)
		editor := filepath.Join(dir, "editor.sh")
		if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/nginx:1.28/nginx:1.29/' \"$1\"\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		runSteps(t, k, c, []step{
			{args: []string{"api-resources"}, stdout: []string{`(?m)^deployments\s+deploy\s+apps/v1\s+true\s+Deployment`, `(?m)^pods\s+po\s+v1\s+true\s+Pod`}},
			{args: []string{"api-versions"}, stdout: []string{`(?m)^apps/v1$`, `(?m)^v1$`}},
			{args: []string{"explain", "pods.spec.containers"}, stdout: []string{`FIELD: containers <\[\]Container>`, `DESCRIPTION:`}},
			{args: []string{"explain", "secret.data"}, stdout: []string{`FIELD: data <map\[string\]string>`}},

			{args: []string{"apply", "-f", v1}, stdout: []string{`deployment.apps/web created`}},
			{args: []string{"apply", "-f", v1}, stdout: []string{`deployment.apps/web unchanged`}},
			{args: []string{"apply", "-f", v2}, stdout: []string{`deployment.apps/web configured`}},
			{args: []string{"get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"}, stdout: []string{`\Anginx:1.26\z`}},
			{args: []string{"scale", "deployment", "web", "--replicas=3"}, stdout: []string{`deployment.apps/web scaled`}},
			{args: []string{"label", "deploy", "web", "tier=front"}, stdout: []string{`labeled`}},
			{args: []string{"annotate", "deploy", "web", "note=x"}, stdout: []string{`annotated`}},
			{args: []string{"patch", "deploy", "web", "--type=json", "-p", `[{"op":"replace","path":"/spec/replicas","value":2}]`}, stdout: []string{`patched`}},
			{args: []string{"patch", "deploy", "web", "--type=merge", "-p", `{"metadata":{"labels":{"merged":"yes"}}}`}, stdout: []string{`patched`}},
			{args: []string{"patch", "deploy", "web", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}}}}`}, stdout: []string{`patched`}},
			{args: []string{"get", "deploy", "-l", "merged=yes", "-o", "wide"}, stdout: []string{`(?m)^web\s+0/2\s+\d\s+0\s+\S+\s+nginx\s+nginx:1.27\s+app=web$`}},
			{args: []string{"apply", "--server-side", "-f", v3}, wantExit: 1, stderr: []string{`conflict`, `--force-conflicts`}},
			{args: []string{"apply", "--server-side", "--force-conflicts", "-f", v3}, stdout: []string{`serverside-applied`}},
			{args: []string{"edit", "deploy", "web"}, env: []string{"KUBE_EDITOR=" + editor}, stdout: []string{`edited`}},
			{args: []string{"get", "deploy", "web", "-o", "json"}, stdout: []string{`"image": "nginx:1.29"`, `"kind": "Deployment"`}},
			// replace reads the Deployment's resourceVersion and writes
			// with it, while the controller rolls the edit out.
			{args: []string{"replace", "-f", v1}, stdout: []string{`replaced`}, againOnConflict: true},
			{args: []string{"describe", "deployment", "web"}, stdout: []string{`(?m)^Name:\s+web$`, `(?m)^Selector:\s+app=web$`}},

			{args: []string{"create", "-f", node}, stdout: []string{`node/n1 created`}},
			{args: []string{"get", "nodes"}, stdout: []string{`(?m)^n1\s+Unknown\s+worker\s`}},
			{args: []string{"describe", "node", "n1"}, stdout: []string{`(?m)^Name:\s+n1$`, `(?m)^Roles:\s+worker$`}},
			{args: []string{"create", "-f", pod}, stdout: []string{`pod/p1 created`}},
			{args: []string{"get", "pods", "-A", "-o", "wide"}, stdout: []string{`(?m)^default\s+p1\s+0/1\s+Pending\s+0\s+`}},
			// The Deployment's pods are Pending too (no node runs them).
			{args: []string{"get", "pods", "-l", "app=solo", "--field-selector", "status.phase=Pending", "-o", "name"}, stdout: []string{`\Apod/p1\n\z`}},
			{args: []string{"get", "pods", "-l", "app=solo", "--field-selector", "status.phase=Running", "-o", "name"}, stdout: []string{`\A\z`}},
			{args: []string{"describe", "pod", "p1"}, stdout: []string{`(?m)^Name:\s+p1$`, `(?m)^Status:\s+Pending$`}},
			{args: []string{"create", "deployment", "api", "--image=nginx"}, stdout: []string{`deployment.apps/api created`}},
			{args: []string{"create", "serviceaccount", "robot"}, stdout: []string{`serviceaccount/robot created`}},
			{args: []string{"create", "token", "robot", "--duration=10m"}, stdout: []string{`\Aey[\w-]+\.[\w-]+\.[\w-]+\n?\z`}},
			{args: []string{"auth", "whoami"}, stdout: []string{`(?m)^Username\s+admin$`}},
			{args: []string{"auth", "can-i", "create", "secrets"}, stdout: []string{`\Ayes\n\z`}},
			{args: []string{"auth", "can-i", "list", "nodes", "--as=system:kube-scheduler"}, stdout: []string{`\Ayes\n\z`}},
			{args: []string{"create", "secret", "generic", "creds", "--from-literal=k=v"}, stdout: []string{`secret/creds created`}},
			{args: []string{"describe", "secret", "creds"}, stdout: []string{`(?m)^k:\s+1 bytes$`}},
			{args: []string{"get", "deploy", "--chunk-size=1"}, stdout: []string{`(?m)^api\s`, `(?m)^web\s`}},

			// A List is validated by kubectl against the v2 schemas.
			{args: []string{"create", "-f", list}, stdout: []string{`configmap/listed-a created`, `configmap/listed-b created`}},
			{args: []string{"create", "-f", badList}, wantExit: 1, stderr: []string{`unknown field "bogus" in io.k8s.api.core.v1.ConfigMap`, `--validate=false`}},
			{args: []string{"get", "configmap", "listed-c"}, wantExit: 1, stderr: []string{`NotFound`}},
			// Anything else by the server, as fieldValidation says:
			// kubectl's Strict by default, Warn on request, and Warn
			// when a client does not say.
			{args: []string{"create", "-f", unknownStrict}, wantExit: 1, stderr: []string{`ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus"`}},
			{args: []string{"create", "-f", unknownWarn, "--validate=warn"}, stdout: []string{`configmap/unknown-warn created`}, stderr: []string{`(?m)^Warning: unknown field "bogus"$`}},
			{args: []string{"create", "--raw", "/api/v1/namespaces/default/configmaps", "-f", unknownRaw}, stdout: []string{`"name":"unknown-raw"`}, stderr: []string{`(?m)^Warning: unknown field "bogus"$`}},
			{args: []string{"get", "configmaps", "-o", "name"}, stdout: []string{`(?m)^configmap/listed-a$`, `(?m)^configmap/listed-b$`, `(?m)^configmap/unknown-warn$`, `(?m)^configmap/unknown-raw$`}},

			{args: []string{"delete", "-l", "app=solo", "pods"}, stdout: []string{`pod "p1" deleted`}},
			{args: []string{"delete", "-f", v1}, stdout: []string{`deployment.apps "web" deleted`}},
			{args: []string{"wait", "--for=delete", "deployment/api", "--timeout=1s"}, wantExit: 1},
			{args: []string{"delete", "deployment", "--all", "--cascade=foreground"}, stdout: []string{`deployment.apps "api" deleted`}},
			{args: []string{"wait", "--for=delete", "deployment/api", "--timeout=10s"}},
			{args: []string{"get", "deploy"}, stderr: []string{`No resources found`}},
		})
	})
}
