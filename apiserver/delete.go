package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/trustplane/trustplane/apiserver/storage"
)

func (s *Server) delete(w http.ResponseWriter, r *http.Request, q *restRequest) {
	opts, err := s.decodeDeleteOptions(r)
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	dry := isDryRun(opts.DryRun)
	out, err := s.deleteOne(r.Context(), q, q.name, opts, dry)
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	s.respond.object(w, r, http.StatusOK, out)
}

// deleteOne deletes one object: after its preconditions and admission, at
// once, or by marking it when finalizers or a grace period hold it. It
// returns what the client is answered: a Status when the object is gone,
// the marked object otherwise.
func (s *Server) deleteOne(ctx context.Context, q *restRequest, name string, opts *metav1.DeleteOptions, dry bool) (runtime.Object, error) {
	gr := q.res.groupResource()
	old, err := s.load(ctx, q, name)
	if err != nil {
		return nil, q.storageError(err, name)
	}
	oldAccessor, err := meta.Accessor(old)
	if err != nil {
		return nil, err
	}
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && *p.UID != oldAccessor.GetUID() {
			return nil, apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", *p.UID, oldAccessor.GetUID()))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != oldAccessor.GetResourceVersion() {
			return nil, apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s", *p.ResourceVersion, oldAccessor.GetResourceVersion()))
		}
	}
	attrs := s.admissionAttributes(ctx, q, nil, old, name, admission.Delete, opts, dry)
	if err := s.admit(ctx, attrs); err != nil {
		return nil, err
	}
	if err := s.validateAdmission(ctx, attrs); err != nil {
		return nil, err
	}
	rev, _ := storage.ParseResourceVersion(oldAccessor.GetResourceVersion())
	var grace int64
	if q.res.gracePeriod != nil {
		grace = q.res.gracePeriod(old, opts)
	}
	if oldAccessor.GetDeletionTimestamp() != nil {
		// Being deleted already. A shorter grace period shortens the
		// wait (kubectl delete --grace-period=0, a node agent done with
		// the pod); otherwise it goes when its finalizers are done.
		current := oldAccessor.GetDeletionGracePeriodSeconds()
		if current == nil || grace >= *current {
			return old, nil
		}
		if grace == 0 && len(oldAccessor.GetFinalizers()) == 0 {
			if !dry {
				if err := s.deleteStored(ctx, q, name, rev); err != nil {
					return nil, q.storageError(err, name)
				}
			}
			return deletedStatus(q, name, oldAccessor), nil
		}
		at := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second).Truncate(time.Second))
		oldAccessor.SetDeletionTimestamp(&at)
		oldAccessor.SetDeletionGracePeriodSeconds(&grace)
		if !dry {
			if err := s.save(ctx, q, name, rev, old); err != nil {
				return nil, q.storageError(err, name)
			}
		}
		return old, nil
	}
	if len(oldAccessor.GetFinalizers()) > 0 || grace > 0 {
		// Graceful deletion: mark the object; its finalizers (or the node
		// agent, for a pod) finish it.
		at := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second).Truncate(time.Second))
		oldAccessor.SetDeletionTimestamp(&at)
		oldAccessor.SetDeletionGracePeriodSeconds(&grace)
		if ns, ok := old.(*corev1.Namespace); ok {
			ns.Status.Phase = corev1.NamespaceTerminating
		}
		if !dry {
			if err := s.save(ctx, q, name, rev, old); err != nil {
				return nil, q.storageError(err, name)
			}
		}
		return old, nil
	}
	if !dry {
		if err := s.deleteStored(ctx, q, name, rev); err != nil {
			return nil, q.storageError(err, name)
		}
	}
	return deletedStatus(q, name, oldAccessor), nil
}

// deletedStatus is the answer to a delete that removed the object.
func deletedStatus(q *restRequest, name string, accessor metav1.Object) *metav1.Status {
	return &metav1.Status{
		Status: metav1.StatusSuccess,
		Details: &metav1.StatusDetails{
			Name:  name,
			Group: q.res.gvr.Group,
			Kind:  q.res.gvr.Resource,
			UID:   accessor.GetUID(),
		},
	}
}

// deleteCollection deletes every object the selectors match, one by one,
// each through admission, and answers the list of what it deleted.
func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request, q *restRequest) {
	ctx := r.Context()
	sel, err := parseSelector(q, r)
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	opts, err := s.decodeDeleteOptions(r)
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	dry := isDryRun(opts.DryRun)
	cache := s.cache(q)
	rev, err := cache.CurrentRevision(ctx)
	if err != nil {
		s.respond.error(w, r, err)
		return
	}
	var matched []runtime.Object
	if _, err := cache.List(ctx, storage.ListPrefix(q.res.groupResource(), q.namespace), rev, func(obj runtime.Object) error {
		if obj = q.served(obj); sel.matches(obj) {
			matched = append(matched, obj)
		}
		return nil
	}); err != nil {
		s.respond.error(w, r, err)
		return
	}
	var deleted []runtime.Object
	for _, obj := range matched {
		accessor, _ := meta.Accessor(obj)
		one := *q
		one.namespace = accessor.GetNamespace()
		out, err := s.deleteOne(ctx, &one, accessor.GetName(), opts, dry)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			s.respond.error(w, r, err)
			return
		}
		if _, gone := out.(*metav1.Status); gone {
			out = obj
		}
		deleted = append(deleted, out)
	}
	list := q.res.newList()
	if err := meta.SetList(list, deleted); err != nil {
		s.respond.error(w, r, err)
		return
	}
	s.respond.object(w, r, http.StatusOK, list)
}

// deleteStored removes a stored object at revision rev. A namespace goes
// with everything in it, in one transaction, so nothing is left behind in
// a namespace that no longer exists.
func (s *Server) deleteStored(ctx context.Context, q *restRequest, name string, rev int64) error {
	var prefixes []string
	if q.res.gvr.Resource == "namespaces" && q.res.gvr.Group == "" {
		for _, nsRes := range s.registry.namespaced() {
			prefixes = append(prefixes, storage.ListPrefix(nsRes.groupResource(), name))
		}
	}
	_, err := s.store.Delete(ctx, q.key(name), rev, prefixes...)
	return err
}
