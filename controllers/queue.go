package controllers

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// worker runs sync for the keys of a rate-limited work queue: a key that
// fails is retried with backoff, one that succeeds is forgotten. Each key
// is synced by one worker at a time.
type worker struct {
	name   string
	queue  workqueue.TypedRateLimitingInterface[string]
	sync   func(ctx context.Context, key string) error
	logger *slog.Logger
}

func newWorker(name string, logger *slog.Logger, sync func(ctx context.Context, key string) error) *worker {
	return &worker{
		name:   name,
		queue:  workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
		sync:   sync,
		logger: logger.With("controller", name),
	}
}

// enqueue adds the key of obj (namespace/name, or name).
func (w *worker) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		w.logger.Error("no key for object", "err", err)
		return
	}
	w.queue.Add(key)
}

// run runs n workers until ctx is done, once the informers are synced.
func (w *worker) run(ctx context.Context, n int, synced ...cache.InformerSynced) {
	defer w.queue.ShutDown()
	if !cache.WaitForNamedCacheSync(w.name, ctx.Done(), synced...) {
		return
	}
	w.logger.Info("controller started", "workers", n)
	done := make(chan struct{})
	for range n {
		go func() {
			defer func() { done <- struct{}{} }()
			for w.next(ctx) {
			}
		}()
	}
	<-ctx.Done()
	w.queue.ShutDown()
	for range n {
		<-done
	}
}

func (w *worker) next(ctx context.Context) bool {
	key, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(key)
	if err := w.sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			logRetry(w.logger, "sync failed; retrying", err, "key", key, "retries", w.queue.NumRequeues(key))
		}
		w.queue.AddRateLimited(key)
		return true
	}
	w.queue.Forget(key)
	return true
}

// perNamespace is a worker that keeps something in every active
// namespace: ensure runs for each namespace added or changed, and for
// each the worker's queue is given by other handlers.
func perNamespace(c *controllerContext, name string, ensure func(ctx context.Context, namespace string) error) (*worker, error) {
	namespaces := c.informers.Core().V1().Namespaces()
	w := newWorker(name, c.logger, func(ctx context.Context, key string) error {
		ns, err := namespaces.Lister().Get(key)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if ns.Status.Phase != corev1.NamespaceActive {
			// Being deleted: a new object would only hold it up.
			return nil
		}
		return ensure(ctx, key)
	})
	_, err := namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.enqueue,
		UpdateFunc: func(_, obj any) { w.enqueue(obj) },
	})
	return w, err
}

// namespaceOf is the namespace of the object of an event, tombstone or
// not, if it is an object of kind T named name.
func namespaceOf[T metav1.Object](obj any, name string) (string, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(T)
	if !ok || o.GetName() != name {
		return "", false
	}
	return o.GetNamespace(), true
}

// logRetry logs a write that failed and will be made again: a conflict,
// a write on a stale copy that the next try makes on the fresh one, is
// routine for controllers sharing objects and logged at debug, as kube
// logs it, below the level an operator reads; anything else is a
// warning.
func logRetry(logger *slog.Logger, msg string, err error, args ...any) {
	args = append(args, "err", err)
	if apierrors.IsConflict(err) {
		logger.Debug(msg, args...)
		return
	}
	logger.Warn(msg, args...)
}
