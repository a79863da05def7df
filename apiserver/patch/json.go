package patch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kjson "sigs.k8s.io/json"
)

// maxJSONPatchOperations bounds the operations of one JSON patch, as
// kube-apiserver does.
const maxJSONPatchOperations = 10000

// jsonPatchOp is an operation of a JSON patch, for finding unknown and
// duplicate members when validating fields.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from"`
	Value any    `json:"value"`
}

// applyJSON applies a JSON patch (RFC 6902) or a JSON merge patch
// (RFC 7386) to the JSON of current and decodes the result. When check is
// enabled, it records the duplicate keys of the patch and the unknown
// fields of the result, as kube-apiserver finds them.
func (m *Manager) applyJSON(current runtime.Object, patchType types.PatchType, body []byte, check *fieldCheck) (runtime.Object, error) {
	if check.enabled {
		if err := checkPatchKeys(patchType, body, check); err != nil {
			return nil, err
		}
	}
	doc, err := json.Marshal(current)
	if err != nil {
		return nil, fmt.Errorf("encode the stored %s: %w", m.gvk.Kind, err)
	}

	var patched []byte
	switch patchType {
	case types.JSONPatchType:
		ops, err := jsonpatch.DecodePatch(body)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid JSON patch: %v", err))
		}
		if len(ops) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
				"The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(ops)))
		}
		if patched, err = applyOps(ops, doc); err != nil {
			return nil, m.unprocessable(fmt.Sprintf("the JSON patch could not be applied: %v", err))
		}
	case types.MergePatchType:
		if patched, err = mergePatch(doc, body); err != nil {
			return nil, err
		}
	}

	obj := m.newObject()
	// Case-sensitive, like the API's JSON decoder, which drops unknown
	// fields; the strict decoder also lists them, without changing what it
	// decodes.
	if check.enabled {
		strictErrs, err := kjson.UnmarshalStrict(patched, obj)
		if err != nil {
			return nil, m.unprocessable(fmt.Sprintf("the patched object is not a valid %s: %v", m.gvk.Kind, err))
		}
		check.add(strictErrs...)
	} else if err := kjson.UnmarshalCaseSensitivePreserveInts(patched, obj); err != nil {
		return nil, m.unprocessable(fmt.Sprintf("the patched object is not a valid %s: %v", m.gvk.Kind, err))
	}
	return m.decoded(obj)
}

// checkPatchKeys records the duplicate keys of a merge patch, or the
// unknown and duplicate members of a JSON patch's operations ("json patch
// unknown field \"[0].foo\""). A body of the wrong shape is a 400, as in
// kube-apiserver.
func checkPatchKeys(patchType types.PatchType, body []byte, check *fieldCheck) error {
	if patchType == types.JSONPatchType {
		var ops []jsonPatchOp
		strictErrs, err := kjson.UnmarshalStrict(body, &ops)
		if err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		for _, e := range strictErrs {
			check.add(fmt.Errorf("json patch %w", e))
		}
		return nil
	}
	strictErrs, err := kjson.UnmarshalStrict(body, &map[string]any{})
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	check.add(strictErrs...)
	return nil
}

// applyOps applies a JSON patch to doc. json-patch v4 panics on some
// "test" operations, such as one on the root without a value or one
// comparing lists that hold null, so a panic is taken as a failed
// operation: Apply is a pure function of its arguments.
func applyOps(ops jsonpatch.Patch, doc []byte) (patched []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			patched, err = nil, errors.New("an operation could not be evaluated")
		}
	}()
	return ops.Apply(doc)
}

// mergePatch applies the JSON merge patch (RFC 7386) patch to the JSON
// object doc. Its results are those of jsonpatch.MergePatch, which
// kube-apiserver uses, quirks included (FuzzMergePatch compares the two),
// but it takes linear time: jsonpatch.MergePatch parses every subtree of
// the patch again at each level it descends, so a 3 MB patch nested 1,000
// levels deep kept a core busy for a minute.
func mergePatch(doc, patch []byte) ([]byte, error) {
	p, err := decodeJSON(patch)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid JSON merge patch: %v", err))
	}
	var merged any
	switch p := p.(type) {
	case map[string]any:
		d, err := decodeJSON(doc)
		obj, ok := d.(map[string]any)
		if err != nil || !ok {
			return nil, errors.New("merge patch: the stored object is not a JSON object")
		}
		mergeObject(obj, p)
		merged = obj
	case []any:
		// A list replaces the whole document (and fails to decode later).
		pruneNulls(p)
		merged = p
	default:
		return nil, apierrors.NewBadRequest("invalid JSON merge patch: it must be an object")
	}
	out, err := json.Marshal(merged)
	if err != nil {
		return nil, fmt.Errorf("merge patch: encode the result: %w", err)
	}
	return out, nil
}

// mergeObject merges patch into doc: null deletes a key, an object merges
// into an object, anything else replaces what was there.
func mergeObject(doc, patch map[string]any) {
	for k, v := range patch {
		if v == nil {
			delete(doc, k)
			continue
		}
		cur, ok := doc[k].(map[string]any)
		if !ok {
			// A new value, or one replacing a list or scalar, has its
			// nulls dropped, as if merged into nothing.
			pruneNulls(v)
			doc[k] = v
			continue
		}
		if obj, ok := v.(map[string]any); ok {
			mergeObject(cur, obj)
		} else {
			doc[k] = v // replacing an object; jsonpatch keeps its nulls
		}
	}
}

// pruneNulls removes null members from the objects in v, however deep,
// leaving null list elements.
func pruneNulls(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
			} else {
				pruneNulls(e)
			}
		}
	case []any:
		for _, e := range v {
			pruneNulls(e)
		}
	}
}

// decodeJSON decodes one JSON value, keeping numbers as written.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}
