package apiserver

import (
	"context"
	"errors"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/rbac"
)

// aggregationBuffer is how many ClusterRole events the aggregation may
// fall behind by before its watch is cut off and started again.
const aggregationBuffer = 1000

// aggregateClusterRoles keeps the rules of every ClusterRole with an
// aggregationRule equal to the union of the roles it selects, as kube's
// clusterrole-aggregation controller does: after each change of a
// ClusterRole it recomputes them all and writes those that differ. It runs
// until ctx is done.
func (s *Server) aggregateClusterRoles(ctx context.Context) {
	followCache(ctx, s.caches[clusterRolesGR], storage.ListPrefix(clusterRolesGR, ""), aggregationBuffer, func(w *storage.Watcher, _ int64) {
		s.followClusterRoles(ctx, w)
	})
}

// followCache watches cache's objects under prefix from their current
// state, and hands each watch to follow; when follow returns (the watch
// ended or fell behind), it watches again, until ctx is done. A watch that
// cannot start is tried again a second later.
func followCache(ctx context.Context, cache *storage.Cacher, prefix string, buffer int, follow func(w *storage.Watcher, rev int64)) {
	for ctx.Err() == nil {
		w, rev, err := cache.Watch(ctx, prefix, 0, buffer)
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
				continue
			}
		}
		follow(w, rev)
		w.Stop()
	}
}

func (s *Server) followClusterRoles(ctx context.Context, w *storage.Watcher) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-w.Events():
			if !ok {
				return
			}
			// Take every event already queued, then aggregate once.
			for drained := false; !drained; {
				select {
				case _, ok := <-w.Events():
					if !ok {
						return
					}
				default:
					drained = true
				}
			}
			if err := s.aggregateOnce(ctx); err != nil && ctx.Err() == nil {
				s.logger.Warn("cluster role aggregation failed", "err", err)
			}
		}
	}
}

func (s *Server) aggregateOnce(ctx context.Context) error {
	var roles []*rbacv1.ClusterRole
	if _, err := s.caches[clusterRolesGR].List(ctx, storage.ListPrefix(clusterRolesGR, ""), -1, func(obj runtime.Object) error {
		roles = append(roles, obj.(*rbacv1.ClusterRole))
		return nil
	}); err != nil {
		return err
	}
	var errs []error
	for _, changed := range rbac.AggregateClusterRoles(roles) {
		rev, err := storage.ParseResourceVersion(changed.ResourceVersion)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// A conflict means the role changed meanwhile; its event brings
		// another round.
		if err := s.store.Update(ctx, clusterRolesGR, storage.Key(clusterRolesGR, "", changed.Name), rev, changed); err != nil && !errors.Is(err, storage.ErrConflict) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
