package opa

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"

	"github.com/trustplane/trustplane/apiserver/responses"
	"github.com/trustplane/trustplane/audit"
)

// warnings records the Warning headers a request would get.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func compile(t *testing.T, files map[string]string) *Set {
	t.Helper()
	src := map[string][]byte{}
	for k, v := range files {
		src[k] = []byte(v)
	}
	set, err := Compile(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func plugin(t *testing.T, set *Set, timeout time.Duration) *Plugin {
	t.Helper()
	p, err := NewPlugin(set, timeout, discard())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func secretAttrs(s *corev1.Secret, op admission.Operation) admission.Attributes {
	return admission.NewAttributesRecord(s, nil, corev1.SchemeGroupVersion.WithKind("Secret"), s.Namespace, s.Name, corev1.SchemeGroupVersion.WithResource("secrets"), "", op, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "alice", Groups: []string{"dev"}})
}

const (
	denyDefault = `# METADATA
# title: no Secrets in default
# custom:
#   enforcement: deny
package kubernetes.admission

deny contains msg if {
	input.request.kind.kind == "Secret"
	input.request.namespace == "default"
	msg := sprintf("Secret %s may not be in default", [input.request.name])
}
`
	warnUser = `# METADATA
# custom:
#   enforcement: warn
package kubernetes.admission

deny contains "alice should not write Secrets" if input.request.userInfo.username == "alice"

warn contains "a warning for everyone" if true
`
	dryRunAll = `# METADATA
# custom:
#   enforcement: dryrun
package kubernetes.admission

deny contains "would deny everything" if true
`
	labelPatch = `package kubernetes.admission

patch contains {"op": "add", "path": "/metadata/labels", "value": {"patched": "yes"}} if {
	input.request.kind.kind == "Secret"
	not input.request.object.metadata.labels
}
`
)

// Deny, warn and dryrun policies each do what their enforcement says, and
// every decision is in the audit event.
func TestEnforcement(t *testing.T) {
	p := plugin(t, compile(t, map[string]string{"no-default.rego": denyDefault, "alice.rego": warnUser, "all.rego": dryRunAll}), DefaultTimeout)
	tests := []struct {
		name      string
		namespace string
		refused   string
		warnings  []string
	}{
		{"denied in default", "default", "policy no-default: Secret s may not be in default", []string{"policy alice: a warning for everyone", "policy alice would deny: alice should not write Secrets"}},
		{"allowed elsewhere, with warnings", "team", "", []string{"policy alice: a warning for everyone", "policy alice would deny: alice should not write Secrets"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := audit.NewRecord(auditv1.LevelMetadata, "id")
			w := &warnings{}
			ctx := warning.WithWarningRecorder(audit.WithRecord(context.Background(), rec), w)
			err := p.Validate(ctx, secretAttrs(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: tt.namespace}}, admission.Create), nil)
			switch {
			case tt.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.refused != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.refused)):
				t.Fatalf("got %v, want a 403 saying %q", err, tt.refused)
			}
			if strings.Join(w.list, "\n") != strings.Join(tt.warnings, "\n") {
				t.Errorf("warnings %q, want %q", w.list, tt.warnings)
			}
			ev := &auditv1.Event{}
			rec.Fill(ev)
			if !strings.Contains(ev.Annotations["policy.trustplane.io/all"], "would deny everything") || !strings.Contains(ev.Annotations["policy.trustplane.io/all"], `"dryrun"`) {
				t.Errorf("dry run not recorded: %v", ev.Annotations)
			}
		})
	}
}

// A policy's patch mutates the object in the mutating stage; a dry run's
// does not.
func TestPatch(t *testing.T) {
	p := plugin(t, compile(t, map[string]string{"label.rego": labelPatch}), DefaultTimeout)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team"}, Data: map[string][]byte{"k": []byte("v")}}
	if err := p.Admit(context.Background(), secretAttrs(s, admission.Create), nil); err != nil {
		t.Fatal(err)
	}
	if s.Labels["patched"] != "yes" || string(s.Data["k"]) != "v" {
		t.Errorf("patched secret %+v: want label patched=yes and its data kept", s)
	}
	bad := compile(t, map[string]string{"rename.rego": `package kubernetes.admission

patch contains {"op": "replace", "path": "/metadata/name", "value": "other"} if true
`})
	p.Swap(bad)
	s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team"}}
	if err := p.Admit(context.Background(), secretAttrs(s, admission.Create), nil); !apierrors.IsForbidden(err) || s.Name != "s" {
		t.Errorf("a patch renaming the object: %v, name %q; want a refusal and the name kept", err, s.Name)
	}
}

// Anything unexpected refuses: an evaluation error, a rule that is not a
// set, a timeout.
func TestFailClosed(t *testing.T) {
	tests := []struct {
		name    string
		policy  string
		timeout time.Duration
	}{
		{"conflicting complete rule", "package kubernetes.admission\n\nx := 1 if true\n\nx := 2 if true\n\ndeny contains \"x\" if x == 3\n", DefaultTimeout},
		{"failing builtin", "package kubernetes.admission\n\ndeny contains \"bad\" if json.unmarshal(input.request.name).x\n", DefaultTimeout},
		{"too slow", "package kubernetes.admission\n\ndeny contains \"never\" if {\n\tsome i in numbers.range(1, 100000000)\n\ti < 0\n}\n", 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plugin(t, compile(t, map[string]string{"p.rego": tt.policy}), tt.timeout)
			err := p.Validate(context.Background(), secretAttrs(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team"}}, admission.Create), nil)
			if !apierrors.IsForbidden(err) {
				t.Fatalf("got %v, want a refusal", err)
			}
		})
	}
}

// A set that does not parse, or whose tests fail, is refused with the
// file and line.
func TestCompileRefuses(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"syntax", map[string]string{"bad.rego": "package kubernetes.admission\n\ndeny contains if {\n"}, "bad.rego:3"},
		{"failing test", map[string]string{
			"no-default.rego":      denyDefault,
			"no-default_test.rego": "package kubernetes.admission_test\n\ntest_allows_default if {\n\tcount(data.kubernetes.admission.deny) == 0 with input as {\"request\": {\"kind\": {\"kind\": \"Secret\"}, \"namespace\": \"default\", \"name\": \"s\"}}\n}\n",
		}, "no-default_test.rego:3"},
		{"bad enforcement", map[string]string{"e.rego": "# METADATA\n# custom:\n#   enforcement: maybe\npackage kubernetes.admission\n\ndeny contains \"x\" if false\n"}, "maybe"},
		{"deny is not a set", map[string]string{"p.rego": "package kubernetes.admission\n\ndeny := \"no\"\n"}, "p.rego:3: deny must be a set"},
		{"warn is not a set", map[string]string{"p.rego": "package kubernetes.admission\n\nwarn := \"x\"\n"}, "warn must be a set"},
		// Gatekeeper's and kube-mgmt's old form is an object rule in Rego
		// v1: loaded, it would decide nothing.
		{"deny is an object", map[string]string{"p.rego": "package kubernetes.admission\n\ndeny[msg] if {\n\tmsg := \"no\"\n}\n"}, "p.rego:3: deny must be a set"},
		{"deny is nested", map[string]string{"p.rego": "package kubernetes.admission\n\ndeny.secrets contains \"no\" if true\n"}, "p.rego:3: deny must be a set"},
		{"enforcement of one rule", map[string]string{"p.rego": "package kubernetes.admission\n\n# METADATA\n# custom:\n#   enforcement: dryrun\ndeny contains \"a\" if false\n\ndeny contains \"b\" if true\n"}, "set it in the METADATA of the package"},
		{"rules beside the admission package", map[string]string{"p.rego": "package kubernetes\n\nadmission.deny contains \"x\" if true\n"}, "only policies"},
		{"into another policy's namespace", map[string]string{"p.rego": "package trustplane.policies.other\n\ndeny contains \"x\" if true\n"}, "only policies"},
		{"a call out of the server", map[string]string{"p.rego": "package kubernetes.admission\n\ndeny contains \"x\" if http.send({\"method\": \"get\", \"url\": \"http://127.0.0.1:1\"}).status_code == 200\n"}, "http.send"},
		// A schema's $ref is fetched from a host, or read from a file.
		{"a schema from a host", map[string]string{"p.rego": "package kubernetes.admission\n\ndeny contains \"x\" if {\n\t[ok, _] := json.match_schema({}, {\"$ref\": concat(\"\", [\"http://127.0.0.1:1/\", input.request.name])})\n\tnot ok\n}\n"}, "json.match_schema"},
		{"a schema from a file", map[string]string{"p.rego": "package kubernetes.admission\n\ndeny contains \"x\" if {\n\t[ok, _] := json.verify_schema({\"$ref\": \"file:///etc/passwd\"})\n\tnot ok\n}\n"}, "json.verify_schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := map[string][]byte{}
			for k, v := range tt.files {
				src[k] = []byte(v)
			}
			_, err := Compile(context.Background(), src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error naming %q", err, tt.want)
			}
		})
	}
	// A passing test lets the set load.
	compile(t, map[string]string{
		"no-default.rego":      denyDefault,
		"no-default_test.rego": "package kubernetes.admission_test\n\ntest_denies_default if {\n\tcount(data.kubernetes.admission.deny) == 1 with input as {\"request\": {\"kind\": {\"kind\": \"Secret\"}, \"namespace\": \"default\", \"name\": \"s\"}}\n}\n",
	})
}

// The input is the AdmissionReview of the request; a TokenReview's token
// is not in it.
func TestInput(t *testing.T) {
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "secret-bearer-token", Audiences: []string{"a"}}}
	a := admission.NewAttributesRecord(review, nil, authenticationv1.SchemeGroupVersion.WithKind("TokenReview"), "", "", authenticationv1.SchemeGroupVersion.WithResource("tokenreviews"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "bob", Groups: []string{"g"}})
	v, err := Input(a)
	if err != nil {
		t.Fatal(err)
	}
	s := v.String()
	if strings.Contains(s, "secret-bearer-token") {
		t.Fatalf("the token is in the input: %s", s)
	}
	if review.Spec.Token != "secret-bearer-token" {
		t.Fatal("the request's own object was changed")
	}
	var got struct {
		Request struct {
			Operation string `json:"operation"`
			Kind      struct {
				Group, Kind string
			} `json:"kind"`
			UserInfo struct {
				Username string   `json:"username"`
				Groups   []string `json:"groups"`
			} `json:"userInfo"`
			Object map[string]any `json:"object"`
		} `json:"request"`
	}
	if err := json.Unmarshal([]byte(s), &got); err != nil {
		t.Fatal(err)
	}
	r := got.Request
	if r.Operation != "CREATE" || r.Kind.Kind != "TokenReview" || r.UserInfo.Username != "bob" || r.Object["kind"] != "TokenReview" {
		t.Errorf("input %s", s)
	}
	_ = runtime.Object(review)
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A policy that puts a Secret's data in its messages does not get it to
// the client, the Warning headers or the audit event.
func TestMessagesRedacted(t *testing.T) {
	p := plugin(t, compile(t, map[string]string{
		"leak.rego": `package kubernetes.admission

deny contains msg if msg := sprintf("the password is %s", [base64.decode(input.request.object.data.pw)])

warn contains msg if msg := sprintf("encoded: %s", [input.request.object.data.pw])
`,
		"leak-dry.rego": "# METADATA\n# custom:\n#   enforcement: dryrun\npackage kubernetes.admission\n\ndeny contains base64.decode(input.request.object.data.pw) if true\n",
	}), DefaultTimeout)
	rec := audit.NewRecord(auditv1.LevelMetadata, "id")
	w := &warnings{}
	ctx := warning.WithWarningRecorder(audit.WithRecord(context.Background(), rec), w)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team"}, Data: map[string][]byte{"pw": []byte("hunter2")}}
	err := p.Validate(ctx, secretAttrs(s, admission.Create), nil)
	ev := &auditv1.Event{}
	rec.Fill(ev)
	all := fmt.Sprint(err, w.list, ev.Annotations)
	for _, form := range []string{"hunter2", "aHVudGVyMg=="} {
		if strings.Contains(all, form) {
			t.Errorf("%q shown: %s", form, all)
		}
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "the password is") {
		t.Errorf("got %v, want the refusal with its message redacted", err)
	}
}

// A request allowed only by a grant on metadata is told no policy's
// message, nor that a policy warns: either could describe what the grant
// does not show. A denial still refuses it, and the audit event still
// records every message.
func TestMessagesWithheldFromMetadataGrant(t *testing.T) {
	p := plugin(t, compile(t, map[string]string{
		"typed.rego": `package kubernetes.admission

deny contains msg if {
	input.request.object.type == "example.com/refused"
	msg := sprintf("Secret %s is of type %s", [input.request.name, input.request.object.type])
}
`,
		"mutable.rego": "# METADATA\n# custom:\n#   enforcement: warn\npackage kubernetes.admission\n\nwarn contains \"the Secret is mutable\" if not input.request.object.immutable\n\ndeny contains \"a mutable Secret would be refused\" if not input.request.object.immutable\n",
	}), DefaultTimeout)
	for _, tt := range []struct {
		name    string
		typ     corev1.SecretType
		refused bool
	}{
		{"allowed", corev1.SecretTypeOpaque, false},
		{"refused", "example.com/refused", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := audit.NewRecord(auditv1.LevelMetadata, "id")
			w := &warnings{}
			ctx := responses.WithMetadataOnly(warning.WithWarningRecorder(audit.WithRecord(context.Background(), rec), w))
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team"}, Type: tt.typ}
			err := p.Validate(ctx, secretAttrs(s, admission.Update), nil)
			if tt.refused != (err != nil) || err != nil && !apierrors.IsForbidden(err) {
				t.Fatalf("err %v, want refused %v", err, tt.refused)
			}
			if err != nil && (strings.Contains(err.Error(), "example.com") || strings.Contains(err.Error(), "typed")) {
				t.Errorf("the refusal tells the policy or its message: %v", err)
			}
			if len(w.list) > 0 {
				t.Errorf("warnings %q, want none", w.list)
			}
			ev := &auditv1.Event{}
			rec.Fill(ev)
			if !strings.Contains(ev.Annotations["policy.trustplane.io/mutable"], "the Secret is mutable") {
				t.Errorf("the audit event lacks the warning: %v", ev.Annotations)
			}
			if tt.refused && !strings.Contains(ev.Annotations["policy.trustplane.io/typed"], "example.com/refused") {
				t.Errorf("the audit event lacks the refusal: %v", ev.Annotations)
			}
		})
	}
}

// A patch may not change what the server sets.
func TestPatchSystemFields(t *testing.T) {
	p := plugin(t, compile(t, map[string]string{"uid.rego": `package kubernetes.admission

patch contains {"op": "replace", "path": "/metadata/uid", "value": "forged"} if true
`}), DefaultTimeout)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team", UID: "real"}}
	if err := p.Admit(context.Background(), secretAttrs(s, admission.Create), nil); !apierrors.IsForbidden(err) || s.UID != "real" {
		t.Errorf("a patch of the uid: %v, uid %q; want a refusal and the uid kept", err, s.UID)
	}
}

// With no policies the stage does no work: nothing is evaluated, so even
// a request that could not be made into an input passes untouched.
func TestNoPoliciesNoWork(t *testing.T) {
	p := plugin(t, compile(t, nil), DefaultTimeout)
	// A channel cannot be converted to an input; were it evaluated, the
	// request would be refused.
	bad := admission.NewAttributesRecord(&unconvertible{Ch: make(chan int)}, nil, corev1.SchemeGroupVersion.WithKind("Secret"), "team", "s", corev1.SchemeGroupVersion.WithResource("secrets"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "alice"})
	if err := p.Validate(context.Background(), bad, nil); err != nil {
		t.Errorf("validate with no policies: %v", err)
	}
	p.Swap(compile(t, map[string]string{"allow.rego": "package kubernetes.admission\n\ndeny contains \"never\" if false\n"}))
	if err := p.Validate(context.Background(), bad, nil); err == nil {
		t.Error("with a policy, an input that cannot be built was allowed")
	}
}

// unconvertible is an object the input builder cannot convert: its data,
// which every input holds, is a channel.
type unconvertible struct {
	metav1.TypeMeta
	Ch chan int `json:"data"`
}

func (u *unconvertible) DeepCopyObject() runtime.Object { return u }

// A set enforced as deny refuses what its warn and dryrun policies deny,
// and leaves the set it came from as it was.
func TestEnforced(t *testing.T) {
	set := compile(t, map[string]string{"alice.rego": warnUser, "all.rego": dryRunAll})
	enforced := set.Enforced(Deny)
	for _, p := range enforced.Policies() {
		if p.Enforcement != Deny {
			t.Errorf("enforced policy %s is %s, want deny", p.Name, p.Enforcement)
		}
	}
	for _, p := range set.Policies() {
		if p.Enforcement == Deny {
			t.Errorf("the original set's policy %s became deny", p.Name)
		}
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team"}}
	if err := plugin(t, set, DefaultTimeout).Validate(context.Background(), secretAttrs(s, admission.Create), nil); err != nil {
		t.Errorf("as written: %v, want allowed", err)
	}
	err := plugin(t, enforced, DefaultTimeout).Validate(context.Background(), secretAttrs(s, admission.Create), nil)
	for _, want := range []string{"policy alice: alice should not write Secrets", "policy all: would deny everything"} {
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("enforced as deny: %v, want a 403 saying %q", err, want)
		}
	}
}

// A request of a kind no policy applies to is not evaluated, nor made into
// an input; while the policies' data is stale it is refused all the same.
func TestNoPolicyForKindNoWork(t *testing.T) {
	set := compile(t, map[string]string{"secrets.rego": "package kubernetes.admission\n\ndeny contains \"no\" if {\n\tinput.request.kind.kind == \"Secret\"\n\tinput.request.name == \"forbidden\"\n}\n"})
	p := plugin(t, set, DefaultTimeout)
	// A channel cannot be converted to an input; were it evaluated, the
	// request would be refused.
	bad := func(kind, resource string) admission.Attributes {
		return admission.NewAttributesRecord(&unconvertible{Ch: make(chan int)}, nil, corev1.SchemeGroupVersion.WithKind(kind), "team", "c", corev1.SchemeGroupVersion.WithResource(resource), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "alice"})
	}
	ctx := context.Background()
	if err := p.Validate(ctx, bad("ConfigMap", "configmaps"), nil); err != nil {
		t.Errorf("a ConfigMap, which no policy applies to: %v", err)
	}
	if err := p.Validate(ctx, bad("Secret", "secrets"), nil); err == nil {
		t.Error("a Secret whose input cannot be built was allowed")
	}
	set.data.MarkStale("namespaces")
	good := admission.NewAttributesRecord(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "team"}}, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "team", "c", corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "alice"})
	if err := p.Validate(ctx, good, nil); !apierrors.IsForbidden(err) {
		t.Errorf("a ConfigMap while the data is stale: %v; want a refusal", err)
	}
}
