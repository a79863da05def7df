package apiserver

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Patches that name no resourceVersion never conflict with each other;
// one that names a stale one does.
func TestConcurrentPatches(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			_, err := cs.CoreV1().ConfigMaps("default").Patch(ctx, "hot", types.MergePatchType, fmt.Appendf(nil, `{"data":{"k%d":"v"}}`, i), metav1.PatchOptions{})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent patch: %v", err)
		}
	}
	got, _ := cs.CoreV1().ConfigMaps("default").Get(ctx, "hot", metav1.GetOptions{})
	if len(got.Data) != 20 {
		t.Errorf("%d keys after 20 patches, want 20", len(got.Data))
	}
	stale := fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q},"data":{"x":"y"}}`, cm.ResourceVersion)
	if _, err := cs.CoreV1().ConfigMaps("default").Patch(ctx, "hot", types.MergePatchType, stale, metav1.PatchOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("patch with a stale resourceVersion: %v, want Conflict", err)
	}
}
