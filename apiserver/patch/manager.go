package patch

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"reflect"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/client-go/applyconfigurations"
)

// Types are the PATCH content types served, in the order a 415 lists them.
var Types = []string{
	string(types.JSONPatchType),
	string(types.MergePatchType),
	string(types.StrategicMergePatchType),
	string(types.ApplyYAMLPatchType),
}

// maxJSONPatchCopyBytes bounds what the "copy" operations of one JSON patch
// may duplicate. Without it, a few dozen operations that each copy a
// subtree into itself double the document every time. kube-apiserver uses
// its request body limit, 3 MiB by default.
const maxJSONPatchCopyBytes = 3 << 20

// Manager applies patches to objects of one kind. It is safe for concurrent
// use: every field is set by NewManager and only read afterwards.
type Manager struct {
	gvk       schema.GroupVersionKind
	newObject func() runtime.Object
	objType   reflect.Type // the Go type newObject returns
	scheme    *runtime.Scheme

	typeConverter managedfields.TypeConverter
	fieldManager  *managedfields.FieldManager
	// smpSchema supplies patchStrategy and patchMergeKey from the Go struct.
	smpSchema strategicpatch.LookupPatchMeta
}

// NewTypeConverter returns the converter for every built-in kind:
// client-go's embedded structured-merge-diff schema, so no OpenAPI
// document is needed. Build it once; it serves every Manager.
func NewTypeConverter(scheme *runtime.Scheme) managedfields.TypeConverter {
	return applyconfigurations.NewTypeConverter(scheme)
}

// NewManager returns the manager for kind gvk, whose typed Go object is made
// by newObject, decoding, converting and defaulting through scheme. It
// checks up front everything a request would otherwise find out late: the
// scheme knows gvk as newObject's type, the object has metadata, and
// typeConverter has a schema for the kind.
func NewManager(scheme *runtime.Scheme, typeConverter managedfields.TypeConverter, gvk schema.GroupVersionKind, newObject func() runtime.Object) (*Manager, error) {
	return newManager(scheme, typeConverter, gvk, "", newObject)
}

// NewSubresourceManager returns the manager of kind gvk as a subresource
// reads and writes it, such as the autoscaling/v1 Scale of
// deployments/scale, subresource "scale". Like kube-apiserver's field
// manager for a subresource, it names the subresource in the
// managedFields entries it records, and keeps the managed fields of the
// current object whatever the request's object says about them. Mapping
// those entries to and from the parent object is the caller's.
func NewSubresourceManager(scheme *runtime.Scheme, typeConverter managedfields.TypeConverter, gvk schema.GroupVersionKind, subresource string, newObject func() runtime.Object) (*Manager, error) {
	if subresource == "" {
		return nil, fmt.Errorf("new patch manager for %s: the subresource is empty", gvk)
	}
	return newManager(scheme, typeConverter, gvk, subresource, newObject)
}

func newManager(scheme *runtime.Scheme, typeConverter managedfields.TypeConverter, gvk schema.GroupVersionKind, subresource string, newObject func() runtime.Object) (*Manager, error) {
	var errs []error
	if scheme == nil {
		errs = append(errs, errors.New("scheme is nil"))
	}
	if typeConverter == nil {
		errs = append(errs, errors.New("type converter is nil"))
	}
	if gvk.Version == "" || gvk.Kind == "" {
		errs = append(errs, fmt.Errorf("kind %q: version and kind are required", gvk))
	}
	if newObject == nil {
		errs = append(errs, errors.New("newObject is nil"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("new patch manager: %w", errors.Join(errs...))
	}

	obj := newObject()
	if isNil(obj) {
		return nil, fmt.Errorf("new patch manager for %s: newObject returned nil", gvk)
	}
	objType := reflect.TypeOf(obj)
	if registered, err := scheme.New(gvk); err != nil {
		errs = append(errs, fmt.Errorf("scheme: %w", err))
	} else if t := reflect.TypeOf(registered); t != objType {
		errs = append(errs, fmt.Errorf("the scheme makes %s a %v, newObject returns a %v", gvk, t, objType))
	}
	if _, err := meta.Accessor(obj); err != nil {
		errs = append(errs, fmt.Errorf("object metadata: %w", err))
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if _, err := typeConverter.ObjectToTyped(obj); err != nil {
		errs = append(errs, fmt.Errorf("type converter has no schema for it: %w", err))
	}
	smpSchema, err := strategicpatch.NewPatchMetaFromStruct(obj)
	if err != nil {
		errs = append(errs, fmt.Errorf("strategic merge patch metadata: %w", err))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("new patch manager for %s: %w", gvk, errors.Join(errs...))
	}
	fm, err := managedfields.NewDefaultFieldManager(typeConverter, scheme, scheme, scheme, gvk, gvk.GroupVersion(), subresource, nil)
	if err != nil {
		return nil, fmt.Errorf("new patch manager for %s: %w", gvk, err)
	}
	limitJSONPatchCopies(maxJSONPatchCopyBytes)
	return &Manager{
		gvk:           gvk,
		newObject:     newObject,
		objType:       objType,
		scheme:        scheme,
		typeConverter: typeConverter,
		fieldManager:  fm,
		smpSchema:     smpSchema,
	}, nil
}

// limitJSONPatchCopies lowers json-patch's process-wide copy limit to n
// unless a lower one is already set; zero there means unlimited.
func limitJSONPatchCopies(n int64) {
	for {
		cur := atomic.LoadInt64(&jsonpatch.AccumulatedCopySizeLimit)
		if cur > 0 && cur <= n {
			return
		}
		if atomic.CompareAndSwapInt64(&jsonpatch.AccumulatedCopySizeLimit, cur, n) {
			return
		}
	}
}

// Request is one patch: its body, the body's content type, and the query
// parameters that decide how it applies.
type Request struct {
	// ContentType is one of Types; parameters such as charset are allowed.
	ContentType string
	Body        []byte
	// FieldManager and Force are the query parameters of those names. As in
	// kube-apiserver, apply requires a FieldManager and only apply takes
	// Force (422 otherwise); the other types record an empty FieldManager
	// as the User-Agent's product name, and an empty product name as
	// "unknown".
	FieldManager string
	Force        bool
	// FieldValidation is the fieldValidation query parameter: what to do
	// with the fields of the body that the kind does not have, and with
	// keys an object of the body names twice. Strict refuses the patch,
	// Warn applies it and reports each problem, Ignore drops them silently.
	// Empty means Warn, kube-apiserver's default. See Patch for what each
	// patch type checks.
	FieldValidation string
	// UserAgent is the request's User-Agent header.
	UserAgent string
}

// Patch computes the patched object: current is the stored object, nil
// when none exists, in which case only an apply patch may create one.
//
// The result is a new object of the Manager's Go type that shares nothing
// with current, with metadata.managedFields brought up to date. Whatever
// metadata.resourceVersion the patch produced is left for the caller's
// precondition check. current is not modified.
//
// Field validation checks what kube-apiserver checks for each type:
//
//   - JSON and merge patches: duplicate keys in the patch (and, for a JSON
//     patch, unknown or duplicate members of its operations), then the
//     unknown fields of the patched object, which only the patch can have
//     put there;
//   - strategic merge patches: duplicate keys in the patch, then the
//     unknown fields of the merged object;
//   - apply patches: duplicate keys. An applied configuration with a field
//     the kind's schema lacks is refused whatever FieldValidation says
//     (400), as the field manager cannot merge it.
//
// Under Strict a problem refuses the patch: 422 Invalid for the first
// three types, with a message ending in kube's "strict decoding error:
// unknown field \"spec.foo\", ..." (the patched object itself is left
// out, as it may hold Secret data); 400 BadRequest "error strict decoding
// patch: ..." for apply. Under Warn the patch applies and warnings holds
// one text per problem, for Warning headers.
func (m *Manager) Patch(current runtime.Object, req Request) (obj runtime.Object, warnings []string, err error) {
	patchType, err := parsePatchType(req.ContentType)
	if err != nil {
		return nil, nil, err
	}
	if isNil(current) {
		current = nil // a typed nil pointer is no object either
	}
	isApply := patchType == types.ApplyYAMLPatchType
	if errs := validatePatchOptions(isApply, req); len(errs) > 0 {
		return nil, nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	validation := req.FieldValidation
	if validation == "" {
		validation = metav1.FieldValidationWarn
	}
	check := &fieldCheck{enabled: validation != metav1.FieldValidationIgnore}
	if current != nil {
		if current, err = m.live(current); err != nil {
			return nil, nil, err
		}
	}
	if isApply {
		obj, err = m.applyServerSide(current, req.Body, req.FieldManager, req.Force, check)
		if err != nil {
			return nil, nil, err
		}
		if len(check.problems) > 0 {
			// One YAML error listing every duplicate key.
			if validation == metav1.FieldValidationStrict {
				return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", check.problems[0]))
			}
			return obj, YAMLWarnings(check.problems[0]), nil
		}
		return obj, nil, nil
	}
	if current == nil {
		return nil, nil, m.notFound()
	}
	if !json.Valid(req.Body) {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the %s body is not valid JSON", patchType))
	}

	var patched runtime.Object
	switch patchType {
	case types.JSONPatchType, types.MergePatchType:
		patched, err = m.applyJSON(current, patchType, req.Body, check)
	case types.StrategicMergePatchType:
		patched, err = m.applyStrategic(current, req.Body, check)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(check.problems) > 0 {
		if validation == metav1.FieldValidationStrict {
			return nil, nil, m.strictError(current, check)
		}
		warnings = check.texts()
	}
	if err := m.checkIdentity(current, patched); err != nil {
		return nil, nil, err
	}
	return m.fieldManager.UpdateNoErrors(current, patched, managerName(req.FieldManager, req.UserAgent)), warnings, nil
}

// Update records a create (liveObj nil) or an update of newObj by
// fieldManager, or by the User-Agent's product name when fieldManager is
// empty, in newObj's managedFields, as kube-apiserver does for POST and
// PUT. It returns a copy of newObj; neither argument is modified. A
// managedFields list in newObj replaces the stored one, so clients can
// edit it; an empty list in newObj resets it. (Not through a subresource:
// see NewSubresourceManager.)
//
// Tracking starts at creation: like kube-apiserver's field manager, an
// update of an object that has a uid but no managedFields records nothing,
// until the first apply, which hands every existing field to the manager
// "before-first-apply". Record every create here, so that never happens.
func (m *Manager) Update(liveObj, newObj runtime.Object, fieldManager, userAgent string) (runtime.Object, error) {
	kind := "UpdateOptions"
	if isNil(liveObj) {
		kind = "CreateOptions"
	}
	if errs := metavalidation.ValidateFieldManager(fieldManager, field.NewPath("fieldManager")); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
	}
	if isNil(newObj) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("no %s to record", m.gvk.Kind))
	}
	obj, err := m.live(newObj)
	if err != nil {
		return nil, err
	}
	var live runtime.Object
	if isNil(liveObj) {
		// A create is recorded against an empty object without a uid, which
		// is what tells the field manager to start tracking this object.
		live = m.empty()
	} else if live, err = m.live(liveObj); err != nil {
		return nil, err
	}
	return m.fieldManager.UpdateNoErrors(live, obj, managerName(fieldManager, userAgent)), nil
}

// live returns a deep copy of obj, which must be of the Manager's Go type,
// with apiVersion and kind set: stored objects may lack them, and the field
// manager finds the schema through them.
func (m *Manager) live(obj runtime.Object) (runtime.Object, error) {
	if reflect.TypeOf(obj) != m.objType {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a %s, got a %T", m.gvk.Kind, obj))
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(m.gvk)
	return obj, nil
}

// empty returns a new, empty object of the kind with apiVersion and kind set.
func (m *Manager) empty() runtime.Object {
	obj := m.newObject()
	obj.GetObjectKind().SetGroupVersionKind(m.gvk)
	return obj
}

// notFound is the answer to a patch other than apply when nothing is stored.
// The caller, which knows the resource and name, normally answers first.
func (m *Manager) notFound() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    404,
		Reason:  metav1.StatusReasonNotFound,
		Message: fmt.Sprintf("%s not found: only an apply patch creates objects", m.gvk.Kind),
		Details: &metav1.StatusDetails{Group: m.gvk.Group, Kind: m.gvk.Kind},
	}}
}

// decoded finishes a JSON or strategic merge patch result: the patch may
// drop apiVersion and kind, which are then taken as unchanged, but not
// change them; and it is defaulted, as decoding a request body is.
func (m *Manager) decoded(obj runtime.Object) (runtime.Object, error) {
	// The strings as decoded: an apiVersion that does not parse reads as
	// empty through GroupVersionKind.
	apiVersion, kind := obj.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()
	if tm, ok := obj.GetObjectKind().(*metav1.TypeMeta); ok {
		apiVersion, kind = tm.APIVersion, tm.Kind
	}
	wantAPIVersion, wantKind := m.gvk.ToAPIVersionAndKind()
	if apiVersion != "" && apiVersion != wantAPIVersion || kind != "" && kind != wantKind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("a patch may not change apiVersion %q and kind %q, it made them %q and %q",
			wantAPIVersion, wantKind, apiVersion, kind))
	}
	obj.GetObjectKind().SetGroupVersionKind(m.gvk)
	m.scheme.Default(obj)
	return obj, nil
}

// checkIdentity refuses a patch that renames the object or moves it to
// another namespace; a namespace the patch removed is put back.
func (m *Manager) checkIdentity(current, patched runtime.Object) error {
	cur, err := meta.Accessor(current)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the stored %s has no metadata", m.gvk.Kind))
	}
	obj, err := meta.Accessor(patched)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the patched %s has no metadata", m.gvk.Kind))
	}
	if obj.GetName() != cur.GetName() {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", obj.GetName(), cur.GetName()))
	}
	switch ns := obj.GetNamespace(); {
	case ns == cur.GetNamespace():
	case ns == "":
		obj.SetNamespace(cur.GetNamespace())
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("the namespace of the object (%s) does not match the namespace on the request (%s)", ns, cur.GetNamespace()))
	}
	return nil
}

// isNil reports whether obj is nil or a nil pointer in an interface.
func isNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// parsePatchType returns the patch type of a Content-Type header value.
func parsePatchType(contentType string) (types.PatchType, error) {
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		// kube-apiserver only cuts at the first ";"; do the same for
		// parameters mime cannot parse.
		mediaType, _, _ = strings.Cut(contentType, ";")
		mediaType = strings.ToLower(strings.TrimSpace(mediaType))
	}
	switch pt := types.PatchType(mediaType); pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType:
		return pt, nil
	}
	return "", negotiation.NewUnsupportedMediaTypeError([]string{
		string(types.JSONPatchType),
		string(types.MergePatchType),
		string(types.StrategicMergePatchType),
		string(types.ApplyYAMLPatchType),
	})
}

// validatePatchOptions checks the query parameters the way kube-apiserver
// does: apply needs a field manager, only apply takes force, a field
// manager name is short and printable, and fieldValidation is empty,
// Strict, Warn or Ignore.
func validatePatchOptions(isApply bool, req Request) field.ErrorList {
	var errs field.ErrorList
	if isApply && req.FieldManager == "" {
		errs = append(errs, field.Required(field.NewPath("fieldManager"), "is required for apply patch"))
	}
	if !isApply && req.Force {
		errs = append(errs, field.Forbidden(field.NewPath("force"), "may not be specified for non-apply patch"))
	}
	errs = append(errs, metavalidation.ValidateFieldManager(req.FieldManager, field.NewPath("fieldManager"))...)
	return append(errs, metavalidation.ValidateFieldValidation(field.NewPath("fieldValidation"), req.FieldValidation)...)
}

// managerName is the field manager recorded for a write: the one the
// request names, or else the product name of its User-Agent ("kubectl" of
// "kubectl/v1.32.5 (linux/amd64) kubernetes/9894294"), printable
// characters only, at most FieldManagerMaxLength bytes.
func managerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	product, _, _ := strings.Cut(userAgent, "/")
	var b strings.Builder
	for _, r := range product {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > metavalidation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unprocessable is a 422 Invalid error about the patch as a whole.
func (m *Manager) unprocessable(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    422,
		Reason:  metav1.StatusReasonInvalid,
		Message: msg,
		Details: &metav1.StatusDetails{Group: m.gvk.Group, Kind: m.gvk.Kind},
	}}
}
