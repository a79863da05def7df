package e2e

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// watchPods runs, until the test ends, an informer of the pods of
// namespace that selector matches ("" for all), and calls observe for
// each of their events: the pod, whether it was added, whether it is
// gone. It returns once the informer has listed them, so that observe has
// seen every pod that existed then.
func watchPods(t testing.TB, client kubernetes.Interface, namespace, selector string, observe func(pod *corev1.Pod, added, deleted bool)) cache.SharedIndexInformer {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { observe(obj.(*corev1.Pod), true, false) },
		UpdateFunc: func(_, obj any) { observe(obj.(*corev1.Pod), false, false) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				observe(pod, false, true)
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(t.Context().Done())
	t.Cleanup(factory.Shutdown)
	if !cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced) {
		t.Fatal("the pod watch's informer did not sync")
	}
	return inf
}
