package opa

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/trustplane/trustplane/e2e/e2etest"
)

// Watch loads what changed since the running set was compiled, even a
// change made before it started; a change that does not compile is
// logged and leaves the running set.
func TestWatch(t *testing.T) {
	data := NewData()
	set, err := data.Compile(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	log := &e2etest.Buffer{}
	p, err := NewPlugin(set, DefaultTimeout, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	files := map[string][]byte{"s.rego": []byte("package kubernetes.admission\n\ndeny contains \"no s\" if input.request.name == \"s\"\n")}
	read := func() (map[string][]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		out := map[string][]byte{}
		for k, v := range files {
			out[k] = v
		}
		return out, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Watch(ctx, data, 5*time.Millisecond, read); close(done) }()
	defer func() { cancel(); <-done }()

	validate := func() error {
		return p.Validate(context.Background(), secretAttrs(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team"}}, admission.Create), nil)
	}
	waitFor(t, func() bool { return apierrors.IsForbidden(validate()) })

	mu.Lock()
	files["broken.rego"] = []byte("package kubernetes.admission\n\ndeny contains if {\n")
	mu.Unlock()
	waitFor(t, func() bool { return strings.Contains(log.String(), "broken.rego:3") })
	if !apierrors.IsForbidden(validate()) {
		t.Error("a set that did not compile replaced the running one")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
