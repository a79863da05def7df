package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// newTokenCleaner deletes expired bootstrap tokens, as kube's
// tokencleaner does. The API server already refuses an expired token; the
// cleaner removes its Secret so that nothing stale lingers. The shared
// informers read no Secret, so it lists and watches the bootstrap token
// Secrets of kube-system itself, as its own identity, which may read
// Secrets there only.
func newTokenCleaner(c *controllerContext) (runner, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0,
		informers.WithNamespace(metav1.NamespaceSystem),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("type", string(bootstrapapi.SecretTypeBootstrapToken)).String()
		}))
	secrets := factory.Core().V1().Secrets()
	lister := secrets.Lister().Secrets(metav1.NamespaceSystem)
	var w *worker
	w = newWorker("tokencleaner", c.logger, func(ctx context.Context, key string) error {
		_, name, err := cache.SplitMetaNamespaceKey(key)
		if err != nil {
			return nil
		}
		s, err := lister.Get(name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		left, expired := tokenExpiry(s, time.Now())
		if !expired {
			if left > 0 {
				w.queue.AddAfter(key, left)
			}
			return nil
		}
		// Only the Secret that expired: one made again under the same
		// name since is another token.
		err = c.client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: ptrUID(s.UID)},
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		if err == nil {
			// The name is the token's id, which is no secret.
			w.logger.Info("deleted an expired bootstrap token", "secret", name)
		}
		return err
	})
	if _, err := secrets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.enqueue,
		UpdateFunc: func(_, obj any) { w.enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	return func(ctx context.Context, workers int) {
		factory.Start(ctx.Done())
		defer factory.Shutdown()
		w.run(ctx, workers, secrets.Informer().HasSynced)
	}, nil
}

// tokenExpiry is how long a bootstrap token Secret has left, and whether
// it has expired: one without an expiration never does, one whose
// expiration does not parse has, as the API server treats them.
func tokenExpiry(s *corev1.Secret, now time.Time) (time.Duration, bool) {
	if s.Type != bootstrapapi.SecretTypeBootstrapToken {
		return 0, false
	}
	exp, ok := s.Data[bootstrapapi.BootstrapTokenExpirationKey]
	if !ok {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339, string(exp))
	if err != nil || !now.Before(t) {
		return 0, true
	}
	return t.Sub(now), false
}

func ptrUID(uid types.UID) *types.UID { return &uid }
