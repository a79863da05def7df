package patch

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	kjson "sigs.k8s.io/json"
)

// applyStrategic applies a strategic merge patch to current, merging lists
// by the patchStrategy and patchMergeKey tags of the kind's Go struct. When
// check is enabled, it records the duplicate keys of the patch and the
// unknown fields of the result, as kube-apiserver finds them.
func (m *Manager) applyStrategic(current runtime.Object, body []byte, check *fieldCheck) (runtime.Object, error) {
	original, err := runtime.DefaultUnstructuredConverter.ToUnstructured(current)
	if err != nil {
		return nil, fmt.Errorf("convert the stored %s: %w", m.gvk.Kind, err)
	}
	patchMap := map[string]any{}
	if check.enabled {
		strictErrs, err := kjson.UnmarshalStrict(body, &patchMap)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid strategic merge patch: %v", err))
		}
		check.add(strictErrs...)
	} else if err := kjson.UnmarshalCaseSensitivePreserveInts(body, &patchMap); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid strategic merge patch: %v", err))
	}
	patched, err := m.strategicMerge(original, patchMap)
	if err != nil {
		return nil, err
	}
	obj := m.newObject()
	// The unknown fields are dropped either way; a strict decoding error
	// only lists them.
	err = runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(patched, obj, check.enabled)
	if strictErr, ok := runtime.AsStrictDecodingError(err); ok {
		check.add(strictErr.Errors()...)
	} else if err != nil {
		return nil, m.unprocessable(fmt.Sprintf("the patched object is not a valid %s: %v", m.gvk.Kind, err))
	}
	return m.decoded(obj)
}

// strategicMerge merges patch into original. strategicpatch (v0.37) panics
// on some malformed patches, such as a merging list that starts with null
// when the stored list is empty ({"containers":[null]}); the merge is a pure
// function of its arguments, so such a panic is a bad patch, nothing more.
func (m *Manager) strategicMerge(original, patch map[string]any) (merged map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			merged, err = nil, apierrors.NewBadRequest("invalid strategic merge patch: it cannot be merged into the object")
		}
	}()
	merged, err = strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(original, patch, m.smpSchema)
	if err != nil {
		return nil, m.strategicError(err)
	}
	return merged, nil
}

// strategicError classifies a strategic merge failure as kube-apiserver
// does: a patch whose shape the format does not allow is a bad request, one
// that is well formed but cannot be merged is unprocessable. Every other
// failure is about the patch too (a directive or a list item of the wrong
// type), so it is a bad request, not a server error.
func (m *Manager) strategicError(err error) error {
	switch {
	case errors.Is(err, mergepatch.ErrNoListOfLists), errors.Is(err, mergepatch.ErrPatchContentNotMatchRetainKeys):
		return m.unprocessable(fmt.Sprintf("the strategic merge patch could not be applied: %v", err))
	default:
		// Includes ErrBadJSONDoc, ErrBadPatchFormatForPrimitiveList,
		// ErrBadPatchFormatForRetainKeys,
		// ErrBadPatchFormatForSetElementOrderList and
		// ErrUnsupportedStrategicMergePatchFormat.
		return apierrors.NewBadRequest(fmt.Sprintf("invalid strategic merge patch: %v", err))
	}
}
