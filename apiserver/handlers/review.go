package handlers

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

// reviewRoute answers a review resource: create only, 201 with the
// review and its status.
func (h *Handler) reviewRoute(q *scope) *writeRoute {
	kind := q.res.GVK()
	return &writeRoute{
		op:     admission.Create,
		kind:   kind,
		decode: h.decodeCreate(kind, q.res.NewObject),
		build:  takeRequestObject,
		validate: func(ctx context.Context, _ *writeInput, a *attempt) error {
			if q.res.Review.Validate == nil {
				return nil
			}
			if errs := q.res.Review.Validate(ctx, q.namespace, a.obj); len(errs) > 0 {
				return apierrors.NewInvalid(kind.GroupKind(), "", errs)
			}
			return nil
		},
		store: func(ctx context.Context, _ *writeInput, a *attempt) (runtime.Object, error) {
			return q.res.Review.Answer(ctx, h.reviewer, q.namespace, a.obj), nil
		},
		respond: h.respondOne(http.StatusCreated),
	}
}
