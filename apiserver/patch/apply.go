package patch

import (
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// applyServerSide merges an applied configuration (YAML or JSON) into
// current, or into an empty object when current is nil, through the field
// manager: fields another manager owns with a different value are a 409
// conflict unless force takes them over. When check is enabled and the
// merge succeeds, it records the duplicate keys of the configuration, as
// one YAML error, as kube-apiserver does.
func (m *Manager) applyServerSide(current runtime.Object, body []byte, fieldManager string, force bool, check *fieldCheck) (runtime.Object, error) {
	patchObj := &unstructured.Unstructured{}
	// yaml.Unmarshal keeps integers as int64, as unstructured content must.
	if err := yaml.Unmarshal(body, &patchObj.Object); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	if patchObj.Object == nil { // an empty document or "null"
		patchObj.Object = map[string]any{}
	}
	if gvk := patchObj.GroupVersionKind(); gvk != m.gvk {
		apiVersion, kind := m.gvk.ToAPIVersionAndKind()
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the apply patch has apiVersion %q and kind %q, expected %q and %q",
			patchObj.GetAPIVersion(), patchObj.GetKind(), apiVersion, kind))
	}
	if current != nil {
		if cur, err := meta.Accessor(current); err == nil && patchObj.GetName() != "" && patchObj.GetName() != cur.GetName() {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", patchObj.GetName(), cur.GetName()))
		}
	}
	// The field manager reports a patch that does not fit the schema as a
	// plain error (kube-apiserver answers 500, kubernetes#139253). It is the
	// client's mistake, so find it here. Duplicate keys in a keyed list are
	// refused too, as the field manager would.
	if _, err := m.typeConverter.ObjectToTyped(patchObj); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the apply patch is not a valid %s: %v", m.gvk.Kind, err))
	}

	live := current
	if live == nil {
		live = m.empty()
	}
	out, err := m.fieldManager.Apply(live, patchObj, fieldManager, force)
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return nil, err // 409 conflicts, 400 for managedFields in the patch
		}
		// What is left is a merged object the Go type cannot hold, such as
		// a quantity that does not parse.
		return nil, m.unprocessable(fmt.Sprintf("the applied configuration could not be merged: %v", err))
	}
	if isNil(out) {
		return nil, m.unprocessable("the applied configuration leaves no object")
	}
	if check.enabled {
		if err := sigsyaml.UnmarshalStrict(body, &map[string]any{}); err != nil {
			check.add(err)
		}
	}
	obj, err := m.typed(out)
	if err != nil {
		return nil, err
	}
	if current != nil {
		if err := m.checkIdentity(current, obj); err != nil {
			return nil, err
		}
		return obj, nil
	}
	if acc, err := meta.Accessor(obj); err == nil && acc.GetUID() != "" {
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    409,
			Reason:  metav1.StatusReasonConflict,
			Message: fmt.Sprintf("uid mismatch: the provided object specified uid %s, and no existing object was found", acc.GetUID()),
			Details: &metav1.StatusDetails{Group: m.gvk.Group, Kind: m.gvk.Kind, Name: acc.GetName()},
		}}
	}
	return obj, nil
}

// typed returns obj as the Manager's Go type with apiVersion and kind set.
// The field manager hands back the scheme's conversion of its merge result,
// normally already typed.
func (m *Manager) typed(obj runtime.Object) (runtime.Object, error) {
	if reflect.TypeOf(obj) != m.objType {
		u, ok := obj.(runtime.Unstructured)
		if !ok {
			return nil, fmt.Errorf("apply returned a %T", obj)
		}
		typed := m.newObject()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), typed); err != nil {
			return nil, m.unprocessable(fmt.Sprintf("the applied object is not a valid %s: %v", m.gvk.Kind, err))
		}
		obj = typed
	}
	obj.GetObjectKind().SetGroupVersionKind(m.gvk)
	return obj, nil
}
