package e2e

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// TestKubectlGetWatch runs `kubectl get -w` with default flags and checks
// that it prints what exists, then each change as it happens: a create, a
// label change and a delete, each while the watch runs.
func TestKubectlGetWatch(t *testing.T) {
	forEachKubectl(t, func(t *testing.T, k *kubectl, c *e2etest.Cluster) {
		runSteps(t, k, c, []step{{args: []string{"create", "configmap", "before", "--from-literal=a=1"}}})

		ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, k.path, "--cache-dir", k.cacheDir, "--kubeconfig", c.AdminConf(), "get", "configmaps", "-w")
		cmd.Env = []string{"HOME=" + k.home}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr e2etest.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			cancel()
			_ = cmd.Wait()
		}()
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			_, _ = io.Copy(io.Discard, stdout)
		}()
		// expect waits for the next line matching re, and fails if the
		// watch ends or stays silent first.
		expect := func(what, re string) {
			t.Helper()
			want := regexp.MustCompile(re)
			timeout := time.After(20 * time.Second)
			var seen []string
			for {
				select {
				case line, ok := <-lines:
					if !ok {
						t.Fatalf("%s: kubectl get -w ended after %q; stderr: %s", what, seen, stderr.String())
					}
					if want.MatchString(line) {
						return
					}
					seen = append(seen, line)
				case <-timeout:
					t.Fatalf("%s: no line matching %q; got %q; stderr: %s", what, re, seen, stderr.String())
				}
			}
		}
		expect("the table header", `^NAME\s+DATA\s+AGE$`)
		expect("the ConfigMap that exists", `^before\s+1\s+\S+$`)

		runSteps(t, k, c, []step{{args: []string{"create", "configmap", "during", "--from-literal=a=1", "--from-literal=b=2"}}})
		expect("the ConfigMap created while watching", `^during\s+2\s+\S+$`)
		runSteps(t, k, c, []step{{args: []string{"label", "configmap", "before", "changed=yes"}}})
		expect("the ConfigMap labelled while watching", `^before\s+1\s+\S+$`)
		runSteps(t, k, c, []step{{args: []string{"delete", "configmap", "during"}}})
		expect("the ConfigMap deleted while watching", `^during\s+2\s+\S+$`)
		if s := stderr.String(); strings.TrimSpace(s) != "" {
			t.Errorf("kubectl get -w wrote to stderr: %s", s)
		}
	})
}
