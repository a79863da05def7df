package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// defaultServiceAccount is the ServiceAccount every namespace has, which
// a pod without one runs as.
const defaultServiceAccount = "default"

// newServiceAccountController gives every active namespace its "default"
// ServiceAccount, and gives it back when it is deleted, as kube's
// ServiceAccountsController does.
func newServiceAccountController(c *controllerContext) (runner, error) {
	accounts := c.informers.Core().V1().ServiceAccounts()
	w, err := perNamespace(c, "serviceaccount", func(ctx context.Context, ns string) error {
		if _, err := accounts.Lister().ServiceAccounts(ns).Get(defaultServiceAccount); err == nil {
			return nil
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: defaultServiceAccount}}
		_, err := c.client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if _, err := accounts.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if ns, ok := namespaceOf[*corev1.ServiceAccount](obj, defaultServiceAccount); ok {
				w.queue.Add(ns)
			}
		},
	}); err != nil {
		return nil, err
	}
	synced := []cache.InformerSynced{c.informers.Core().V1().Namespaces().Informer().HasSynced, accounts.Informer().HasSynced}
	return func(ctx context.Context, workers int) { w.run(ctx, workers, synced...) }, nil
}
