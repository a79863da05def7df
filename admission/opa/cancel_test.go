package opa

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
)

// slowPolicy takes minutes to find that its deny never holds, and
// allocates nothing as it goes.
const slowPolicy = "package kubernetes.admission\n\ndeny contains \"never\" if {\n\tsome a in numbers.range(1, 10000)\n\tsome b in numbers.range(1, 10000)\n\ta * b < 0\n}\n"

// A timeout refuses the request, saying so; an evaluation that timed out
// leaves nothing behind that stops the next ones.
func TestTimeoutRefuses(t *testing.T) {
	p := plugin(t, compile(t, map[string]string{"slow.rego": slowPolicy}), 20*time.Millisecond)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team"}}
	err := p.Validate(context.Background(), secretAttrs(s, admission.Create), nil)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not evaluated within 20ms") {
		t.Fatalf("got %v, want a refusal for the timeout", err)
	}
	fast := plugin(t, compile(t, map[string]string{"no-default.rego": denyDefault}), 20*time.Millisecond)
	for range 100 {
		if err := fast.Validate(context.Background(), secretAttrs(s, admission.Create), nil); err != nil {
			t.Fatalf("after a timeout: %v", err)
		}
	}
}

// An evaluation stops when its request's context is done, before its
// timeout.
func TestCancelStopsEvaluation(t *testing.T) {
	set := compile(t, map[string]string{"slow.rego": slowPolicy})
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team"}}
	input, err := set.Input(secretAttrs(s, admission.Create))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	// Uncancelled, it would find no decision, and no error, after
	// minutes.
	_, err = set.eval(ctx, set.queryFor(input), input, time.Hour, nil)
	if err == nil || errors.Is(err, errTimedOut) {
		t.Fatalf("got %v, want the evaluation cancelled", err)
	}
}
