package apiserver

import (
	"context"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/trustplane/trustplane/admission/opa"
)

// warningLog collects the Warning headers client-go is sent.
type warningLog struct {
	mu   sync.Mutex
	list []string
}

func (l *warningLog) HandleWarningHeader(_ int, _ string, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, text)
}

// The Rego stage runs in both admission chains through client-go: a patch
// mutates before validation, a deny refuses with the policy's message, a
// warn reaches the client as a Warning header, and each decision is in
// the audit event.
func TestRegoAdmission(t *testing.T) {
	set, err := opa.Compile(context.Background(), map[string][]byte{
		"no-forbidden.rego": []byte(`# METADATA
# custom:
#   enforcement: deny
package kubernetes.admission

deny contains msg if {
	input.request.kind.kind == "ConfigMap"
	input.request.object.metadata.labels.forbidden
	msg := sprintf("ConfigMap %s is labelled forbidden", [input.request.object.metadata.name])
}

warn contains "ConfigMaps in default are shared" if {
	input.request.kind.kind == "ConfigMap"
	input.request.namespace == "default"
}
`),
		"owner.rego": []byte(`package kubernetes.admission

patch contains {"op": "add", "path": "/metadata/annotations", "value": {"owner": input.request.userInfo.username}} if {
	input.request.kind.kind == "ConfigMap"
	input.request.operation == "CREATE"
	not input.request.object.metadata.annotations
}

# The patched object is judged again: a ConfigMap the patch gave no
# owner would be refused.
deny contains "a ConfigMap needs an owner" if {
	input.request.kind.kind == "ConfigMap"
	input.request.operation == "CREATE"
	not input.request.object.metadata.annotations.owner
}
`),
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, func(c *Config) { c.AdmissionPolicies = set })
	warnings := &warningLog{}
	cfg := ts.restConfig(t, admin)
	cfg.WarningHandler = warnings
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := testContext(t)

	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ok"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Annotations["owner"] != "admin" {
		t.Errorf("annotations %v: want owner=admin from the policy's patch", cm.Annotations)
	}
	if got := strings.Join(warnings.list, "\n"); got != "policy no-forbidden: ConfigMaps in default are shared" {
		t.Errorf("warnings %q", got)
	}

	_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bad", Labels: map[string]string{"forbidden": "yes"}}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "policy no-forbidden: ConfigMap bad is labelled forbidden") {
		t.Fatalf("forbidden ConfigMap: %v, want 403 naming the policy and its message", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused ConfigMap was stored: %v", err)
	}

	// A PATCH that adds the label is refused too: every write route is.
	_, err = cs.CoreV1().ConfigMaps("default").Patch(ctx, "ok", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"forbidden":"yes"}}}`), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("patch adding the label: %v, want 403", err)
	}

	var found bool
	for _, ev := range readAuditLog(t, ts.auditLog) {
		if ev.ObjectRef != nil && ev.ObjectRef.Name == "bad" && ev.Verb == "create" {
			found = strings.Contains(ev.Annotations["policy.trustplane.io/no-forbidden"], "labelled forbidden")
		}
	}
	if !found {
		t.Error("the refusal's decision is not in its audit event")
	}
}
