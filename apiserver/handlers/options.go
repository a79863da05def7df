package handlers

import (
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The options of the writes: read from the query as kube-apiserver's
// handlers read them, and checked by the same validation, so that a bad
// value gets kube's answer, 422 Invalid on the options kind listing every
// problem, before the body is decoded:
//
//	CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["true"]: supported values: "All"
//
// Every write checks them: subresources, token requests, bindings and
// reviews included. Validated options go to admission as they are; a dry
// run is then any dryRun, All being the only value left.

// createOptions are the options of a POST.
func createOptions(r *http.Request) (*metav1.CreateOptions, error) {
	q := r.URL.Query()
	opts := &metav1.CreateOptions{DryRun: q["dryRun"], FieldManager: q.Get("fieldManager"), FieldValidation: q.Get("fieldValidation")}
	if errs := metavalidation.ValidateCreateOptions(opts); len(errs) > 0 {
		return nil, invalidOptions("CreateOptions", errs)
	}
	opts.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("CreateOptions"))
	return opts, nil
}

// updateOptions are the options of a PUT.
func updateOptions(r *http.Request) (*metav1.UpdateOptions, error) {
	q := r.URL.Query()
	opts := &metav1.UpdateOptions{DryRun: q["dryRun"], FieldManager: q.Get("fieldManager"), FieldValidation: q.Get("fieldValidation")}
	if errs := metavalidation.ValidateUpdateOptions(opts); len(errs) > 0 {
		return nil, invalidOptions("UpdateOptions", errs)
	}
	opts.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("UpdateOptions"))
	return opts, nil
}

// patchOptions are the options of a PATCH of the given type. force, when
// present, must be a boolean (400), which kube does not check: it takes
// any value but "false" and "0" as true, and forcing an apply is not
// something to do by accident.
func patchOptions(r *http.Request, patchType types.PatchType) (*metav1.PatchOptions, error) {
	q := r.URL.Query()
	opts := &metav1.PatchOptions{DryRun: q["dryRun"], FieldManager: q.Get("fieldManager"), FieldValidation: q.Get("fieldValidation")}
	if _, ok := q["force"]; ok {
		force, err := strconv.ParseBool(q.Get("force"))
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("force must be true or false, got %q", q.Get("force")))
		}
		opts.Force = &force
	}
	if errs := metavalidation.ValidatePatchOptions(opts, patchType); len(errs) > 0 {
		return nil, invalidOptions("PatchOptions", errs)
	}
	opts.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PatchOptions"))
	return opts, nil
}

// validateDeleteOptions checks the options of a DELETE, from its body or
// its query.
func validateDeleteOptions(opts *metav1.DeleteOptions) error {
	if errs := metavalidation.ValidateDeleteOptions(opts); len(errs) > 0 {
		return invalidOptions("DeleteOptions", errs)
	}
	opts.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("DeleteOptions"))
	return nil
}

func invalidOptions(kind string, errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
}

// isDryRun reports whether validated options ask for a dry run.
func isDryRun(dryRun []string) bool {
	return len(dryRun) > 0
}

// The options a patch is admitted with: those of the create or update it
// turns out to be, as in kube-apiserver.

func patchToCreateOptions(p *metav1.PatchOptions) *metav1.CreateOptions {
	opts := &metav1.CreateOptions{DryRun: p.DryRun, FieldManager: p.FieldManager, FieldValidation: p.FieldValidation}
	opts.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("CreateOptions"))
	return opts
}

func patchToUpdateOptions(p *metav1.PatchOptions) *metav1.UpdateOptions {
	opts := &metav1.UpdateOptions{DryRun: p.DryRun, FieldManager: p.FieldManager, FieldValidation: p.FieldValidation}
	opts.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("UpdateOptions"))
	return opts
}
