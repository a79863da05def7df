package apiserver

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

func (s *Server) admissionAttributes(ctx context.Context, q *restRequest, obj, old runtime.Object, name string, op admission.Operation, opts runtime.Object, dry bool) admission.Attributes {
	return admission.NewAttributesRecord(obj, old, q.res.gvk(), q.namespace, name, q.res.gvr, "", op, opts, dry, userFrom(ctx))
}

// admit runs the mutating admission plugins.
func (s *Server) admit(ctx context.Context, attrs admission.Attributes) error {
	if s.mutating.Handles(attrs.GetOperation()) {
		return s.mutating.Admit(ctx, attrs, s.objectInterfaces)
	}
	return nil
}

// validate checks the object, then runs the validating admission plugins.
func (s *Server) validate(ctx context.Context, res *resource, obj, old runtime.Object, attrs admission.Attributes) error {
	errs, err := validateObject(res, obj, old)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		accessor, _ := metaAccessor(obj)
		return apierrors.NewInvalid(res.gvk().GroupKind(), accessor.GetName(), errs)
	}
	return s.validateAdmission(ctx, attrs)
}

// validateAdmission runs the validating admission plugins.
func (s *Server) validateAdmission(ctx context.Context, attrs admission.Attributes) error {
	if s.validating.Handles(attrs.GetOperation()) {
		return s.validating.Validate(ctx, attrs, s.objectInterfaces)
	}
	return nil
}
