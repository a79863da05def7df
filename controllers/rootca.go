package controllers

import (
	"context"
	"errors"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// rootCAConfigMap is the ConfigMap, in every namespace, that holds the
// cluster's CA under rootCAKey: what a pod's projected ServiceAccount
// volume mounts as ca.crt to trust the API server.
const (
	rootCAConfigMap = "kube-root-ca.crt"
	rootCAKey       = "ca.crt"
	// kube's description of the ConfigMap.
	rootCADescription = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
)

// newRootCAPublisher keeps kube-root-ca.crt in every active namespace
// holding the cluster's CA, as kube's root-ca-cert-publisher does.
func newRootCAPublisher(c *controllerContext) (runner, error) {
	if len(c.rootCA) == 0 {
		return nil, errors.New("root-ca-cert-publisher: the controller manager's kubeconfig holds no CA to publish")
	}
	configMaps := c.informers.Core().V1().ConfigMaps()
	want := map[string]string{rootCAKey: string(c.rootCA)}
	w, err := perNamespace(c, "root-ca-cert-publisher", func(ctx context.Context, ns string) error {
		cm, err := configMaps.Lister().ConfigMaps(ns).Get(rootCAConfigMap)
		switch {
		case apierrors.IsNotFound(err):
			_, err = c.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: rootCAConfigMap, Annotations: map[string]string{"kubernetes.io/description": rootCADescription}},
				Data:       want,
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		case err != nil:
			return err
		case maps.Equal(cm.Data, want) && len(cm.BinaryData) == 0:
			return nil
		}
		cm = cm.DeepCopy()
		cm.Data, cm.BinaryData = want, nil
		_, err = c.client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, err
	}
	onConfigMap := func(obj any) {
		if ns, ok := namespaceOf[*corev1.ConfigMap](obj, rootCAConfigMap); ok {
			w.queue.Add(ns)
		}
	}
	if _, err := configMaps.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { onConfigMap(obj) },
		DeleteFunc: onConfigMap,
	}); err != nil {
		return nil, err
	}
	synced := []cache.InformerSynced{c.informers.Core().V1().Namespaces().Informer().HasSynced, configMaps.Informer().HasSynced}
	return func(ctx context.Context, workers int) { w.run(ctx, workers, synced...) }, nil
}
