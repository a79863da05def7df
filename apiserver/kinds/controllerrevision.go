package kinds

import (
	"bytes"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateControllerRevision validates a controller revision on create
// (old == nil) or update, as kube's apps validation does: data is
// required, revision is not negative, and neither changes once written —
// a revision is a snapshot that its controller compares against.
func ValidateControllerRevision(r, old *appsv1.ControllerRevision) field.ErrorList {
	if r == nil {
		r = &appsv1.ControllerRevision{}
	}
	var errs field.ErrorList
	if r.Data.Raw == nil && r.Data.Object == nil {
		errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
	}
	errs = append(errs, apivalidation.ValidateNonnegativeField(r.Revision, field.NewPath("revision"))...)
	if old != nil && !sameJSON(r.Data.Raw, old.Data.Raw) {
		errs = append(errs, field.Invalid(field.NewPath("data"), "<omitted>", "field is immutable"))
	}
	return errs
}

// sameJSON reports whether a and b are the same JSON but for
// insignificant space: data is stored compacted, and a client may send
// it back indented.
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
