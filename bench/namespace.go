package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The label, and its value, of a namespace allowed to hold Secrets by the
// shipped policy secrets_namespace.
const (
	secretsLabel   = "trustplane.io/secrets"
	secretsAllowed = "allowed"
)

// cleanupPoll is how often cleanup looks again at a namespace that is
// still terminating.
const cleanupPoll = 100 * time.Millisecond

// createNamespace creates the run's namespace and reports whether the run
// owns it, to delete at the end. An existing namespace is an error and not
// the run's: it must not delete someone else's. After any other error the
// namespace may have been created all the same, and is the run's.
func (r *run) createNamespace(ctx context.Context) (owned bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: r.Namespace,
		Labels: map[string]string{
			"app.kubernetes.io/managed-by": "trustplane-bench",
			// The namespace holds the run's Secrets, so it is labelled as
			// the shipped policy secrets_namespace asks of a namespace
			// that holds Secrets; unlabelled, every create would carry a
			// warning, and the run would measure them.
			secretsLabel: secretsAllowed,
		},
	}}
	_, err = r.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsAlreadyExists(err):
		return false, fmt.Errorf("namespace %s exists; bench needs a namespace of its own", r.Namespace)
	default:
		return true, fmt.Errorf("create namespace %s: %w", r.Namespace, err)
	}
}

// cleanup removes what the run created: its raw etcd keys, then its
// namespace with everything in it. It tries both, whatever fails.
func (r *run) cleanup(ctx context.Context) error {
	var errs []error
	if r.etcdPrefix != "" {
		if _, err := r.Etcd.Delete(ctx, r.etcdPrefix, clientv3.WithPrefix()); err != nil {
			errs = append(errs, fmt.Errorf("delete etcd keys under %s: %w", r.etcdPrefix, err))
		}
	}
	if err := r.deleteNamespace(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// deleteNamespace deletes the run's namespace and waits until it is gone.
//
// A namespace keeps the "kubernetes" finalizer until its content has been
// deleted; the server then removes the namespace and everything stored
// under it in one transaction. The run created everything in its
// namespace, and `trustplane up` may run no namespace controller, so the
// run removes that finalizer itself rather than wait for one. Any other
// finalizer belongs to someone else and is waited for.
func (r *run) deleteNamespace(ctx context.Context) error {
	nss := r.Client.CoreV1().Namespaces()
	tick := time.NewTicker(cleanupPoll)
	defer tick.Stop()
	for {
		acted := false
		ns, err := nss.Get(ctx, r.Namespace, metav1.GetOptions{})
		switch {
		case err != nil:
			// NotFound is the end; anything else may be transient.
		case ns.DeletionTimestamp == nil:
			acted, err = true, nss.Delete(ctx, r.Namespace, metav1.DeleteOptions{})
		case slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes):
			ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool {
				return f == corev1.FinalizerKubernetes
			})
			_, err = nss.Finalize(ctx, ns, metav1.UpdateOptions{})
			acted = true
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("delete namespace %s: %w (last error: %v)", r.Namespace, ctx.Err(), err)
		}
		if acted && (err == nil || apierrors.IsConflict(err)) {
			// Progress, or a race with another writer: look again at once.
			continue
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("delete namespace %s: %w (last error: %v)", r.Namespace, ctx.Err(), err)
		case <-tick.C:
		}
	}
}
