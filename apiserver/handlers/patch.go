package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	"sigs.k8s.io/yaml"

	"github.com/trustplane/trustplane/apiserver/patch"
	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/apiserver/responses"
)

// patchers are the patch managers, which also track managed fields: one
// per served kind, one per kind with a status subresource for writes of
// its status (recorded as subresource "status", as kube-apiserver does),
// and one for the autoscaling/v1 Scale of the scale subresources.
type patchers struct {
	objects map[schema.GroupVersionResource]*patch.Manager
	status  map[schema.GroupVersionResource]*patch.Manager
	// scale records what goes to the parent object through scale.go.
	scale *patch.Manager
}

// newPatchers builds the patch managers over client-go's type converter,
// and the Scale's over scaleTypes, which knows a Scale.
func newPatchers(scheme *runtime.Scheme, reg *registry.Registry, scaleTypes managedfields.TypeConverter) (*patchers, error) {
	tc := patch.NewTypeConverter(scheme)
	p := &patchers{objects: map[schema.GroupVersionResource]*patch.Manager{}, status: map[schema.GroupVersionResource]*patch.Manager{}}
	for _, res := range reg.All() {
		if res.Review != nil {
			continue
		}
		m, err := patch.NewManager(scheme, tc, res.GVK(), res.NewObject)
		if err != nil {
			return nil, fmt.Errorf("patch manager for %s: %w", res.GVK(), err)
		}
		p.objects[res.GVR] = m
		if res.HasStatus() {
			if p.status[res.GVR], err = patch.NewSubresourceManager(scheme, tc, res.GVK(), "status", res.NewObject); err != nil {
				return nil, fmt.Errorf("status patch manager for %s: %w", res.GVK(), err)
			}
		}
	}
	var err error
	if p.scale, err = patch.NewSubresourceManager(scheme, scaleTypes, registry.ScaleKind, "scale", func() runtime.Object { return &autoscalingv1.Scale{} }); err != nil {
		return nil, fmt.Errorf("patch manager for %s: %w", registry.ScaleKind, err)
	}
	return p, nil
}

// of is the manager of q's object, or of its status.
func (p *patchers) of(q *scope) *patch.Manager {
	if q.subresource == "status" {
		return p.status[q.res.GVR]
	}
	return p.objects[q.res.GVR]
}

// patchRequest is what a PATCH carries besides its URL.
type patchRequest struct {
	contentType string
	body        []byte
	opts        *metav1.PatchOptions // validated
	dry         bool
	// conditional: the patch names a resourceVersion, a precondition.
	conditional bool
}

// audited is the patch as the audit event's request object, in JSON as
// kube-apiserver records it: an apply patch in YAML is converted.
func (p *patchRequest) audited() runtime.Object {
	body := p.body
	if p.contentType == string(types.ApplyYAMLPatchType) {
		var err error
		if body, err = yaml.YAMLToJSON(body); err != nil {
			return nil
		}
	}
	return &runtime.Unknown{Raw: body, ContentType: runtime.ContentTypeJSON}
}

// request is p for the patch manager.
func (p *patchRequest) request(userAgent string) patch.Request {
	return patch.Request{
		ContentType:     p.contentType,
		Body:            p.body,
		FieldManager:    p.opts.FieldManager,
		Force:           p.opts.Force != nil && *p.opts.Force,
		FieldValidation: p.opts.FieldValidation,
		UserAgent:       userAgent,
	}
}

// readPatch reads a PATCH in kube-apiserver's order: its content type
// (415), its body (413) and its options (422).
func (h *Handler) readPatch(r *http.Request) (*patchRequest, error) {
	ct := r.Header.Get("Content-Type")
	mediaType, _, err := mime.ParseMediaType(ct)
	if err != nil || !slices.Contains(patch.Types, mediaType) {
		return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", schema.GroupResource{}, "", fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %v", patch.Types), 0, false)
	}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	opts, err := patchOptions(r, types.PatchType(mediaType))
	if err != nil {
		return nil, err
	}
	if responses.MetadataOnly(r.Context()) {
		if err := namesOnlyMetadata(mediaType, body); err != nil {
			return nil, err
		}
	}
	return &patchRequest{contentType: mediaType, body: body, opts: opts, dry: isDryRun(opts.DryRun), conditional: setsResourceVersion(mediaType, body)}, nil
}

// patchRoute applies a JSON, merge, strategic merge or apply patch to an
// object or its status. An apply patch to an object that does not exist
// creates it. fieldValidation (Strict, Warn by default, or Ignore) is the
// patch manager's: a strict refusal is an error, warnings are Warning
// headers.
func (h *Handler) patchRoute(q *scope) *writeRoute {
	m := h.patchers.of(q)
	var p *patchRequest
	decode := func(_ http.ResponseWriter, r *http.Request) (in *writeInput, err error) {
		if p, err = h.readPatch(r); err != nil {
			return nil, err
		}
		return &writeInput{audited: p.audited(), opts: patchToUpdateOptions(p.opts), dry: p.dry}, nil
	}
	merge := func(w http.ResponseWriter, r *http.Request, _ *writeInput, old runtime.Object) (runtime.Object, error) {
		patched, err := applyPatch(w, r, m, p, old)
		if err != nil {
			return nil, err
		}
		if err := metadataOnlyPatch(r.Context(), q, old, patched); err != nil {
			return nil, err
		}
		if q.subresource == "status" {
			// Only the status of the patched object is taken.
			copyStatus(old, patched)
			oldAccessor, _ := meta.Accessor(old)
			patchedAccessor, _ := meta.Accessor(patched)
			oldAccessor.SetManagedFields(patchedAccessor.GetManagedFields())
			if patchedAccessor.GetResourceVersion() != "" {
				oldAccessor.SetResourceVersion(patchedAccessor.GetResourceVersion())
			}
			return old, nil
		}
		return patched, nil
	}
	route := h.existingRoute(q, decode, merge)
	if q.subresource != "" {
		return route
	}
	// Server-side apply creates what is missing: the write is then a
	// create, admitted and stored as one.
	load, build, validate, update := route.load, route.build, route.validate, route.store
	create := h.storeNew(q)
	route.load = func(ctx context.Context, a *attempt) error {
		err := load(ctx, a)
		if apierrors.IsNotFound(err) && p.contentType == string(types.ApplyYAMLPatchType) {
			a.op = admission.Create
			return nil
		}
		return err
	}
	route.build = func(ctx context.Context, w http.ResponseWriter, r *http.Request, in *writeInput, a *attempt) error {
		if a.op != admission.Create {
			return build(ctx, w, r, in, a)
		}
		if responses.MetadataOnly(ctx) {
			return metadataOnlyRefusal(q)
		}
		in.opts = patchToCreateOptions(p.opts)
		obj, warnings, err := m.Patch(nil, p.request(r.UserAgent()))
		if err != nil {
			return err
		}
		responses.Warn(w, warnings...)
		accessor, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		if accessor.GetName() == "" {
			accessor.SetName(q.name)
		}
		if accessor.GetName() != q.name {
			return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", accessor.GetName(), q.name))
		}
		if q.res.Defaults != nil {
			q.res.Defaults(obj)
		}
		a.obj, err = h.prepareNew(ctx, q, obj, func(o runtime.Object) (runtime.Object, error) { return o, nil })
		return err
	}
	route.validate = func(ctx context.Context, in *writeInput, a *attempt) error {
		if a.op == admission.Create {
			return registry.ValidateObject(q.res, a.obj, nil)
		}
		return validate(ctx, in, a)
	}
	code := http.StatusOK
	route.store = func(ctx context.Context, in *writeInput, a *attempt) (runtime.Object, error) {
		if a.op == admission.Create {
			code = http.StatusCreated
			return create(ctx, in, a)
		}
		return update(ctx, in, a)
	}
	route.respond = func(w http.ResponseWriter, r *http.Request, results []runtime.Object) {
		h.respond.Object(w, r, code, results[0])
	}
	return route
}

// namesOnlyMetadata refuses a patch, allowed only by a grant on metadata,
// whose document names anything but the object's metadata (and its
// apiVersion and kind): a JSON patch whose every operation's path and
// from are under /metadata, a merge, strategic merge or apply patch whose
// only other keys are apiVersion and kind. The document is judged, not
// only its result: a patch that sets data to what it already is changes
// nothing, and a JSON patch's test operation fails or passes on it, and
// either would tell the client whether it guessed the data.
func namesOnlyMetadata(contentType string, body []byte) error {
	refuse := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "",
		fmt.Errorf("a grant on secrets/%s allows patches of metadata only", responses.MetadataSubresource))
	if contentType == string(types.ApplyYAMLPatchType) {
		var err error
		if body, err = yaml.YAMLToJSON(body); err != nil {
			return refuse
		}
	}
	if contentType == string(types.JSONPatchType) {
		var ops []map[string]any
		if err := json.Unmarshal(body, &ops); err != nil {
			return refuse
		}
		for _, op := range ops {
			for _, field := range []string{"path", "from"} {
				v, present := op[field]
				if !present && field == "from" {
					continue
				}
				path, _ := v.(string)
				if !openMetadataPath(path) {
					return refuse
				}
			}
		}
		return nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return refuse
	}
	for key := range doc {
		if key != "metadata" && key != "apiVersion" && key != "kind" {
			return refuse
		}
	}
	var meta map[string]json.RawMessage
	if raw, ok := doc["metadata"]; ok && json.Unmarshal(raw, &meta) != nil {
		return refuse
	}
	if _, ok := meta["managedFields"]; ok {
		return refuse
	}
	var annotations map[string]json.RawMessage
	if raw, ok := meta["annotations"]; ok && string(raw) != "null" && json.Unmarshal(raw, &annotations) != nil {
		return refuse
	}
	if _, ok := annotations[corev1.LastAppliedConfigAnnotation]; ok {
		return refuse
	}
	return nil
}

// openMetadataPath reports whether a JSON patch may name path under a
// grant on metadata: a path inside metadata, but neither metadata nor its
// annotations whole, nor the fields that hold or describe a Secret's
// data: kubectl apply's last-applied configuration, and the managed
// fields, which name the data's keys and whose forging would let a later
// apply delete them (the answers to such a grant leave both out).
func openMetadataPath(path string) bool {
	const annotations = "/metadata/annotations"
	lastApplied := annotations + "/" + strings.ReplaceAll(corev1.LastAppliedConfigAnnotation, "/", "~1")
	switch {
	case !strings.HasPrefix(path, "/metadata/"), path == annotations,
		path == lastApplied, strings.HasPrefix(path, lastApplied+"/"),
		path == "/metadata/managedFields", strings.HasPrefix(path, "/metadata/managedFields/"):
		return false
	}
	return true
}

// metadataOnlyPatch refuses a patch allowed only by a grant on metadata
// that changes more than the object's metadata.
func metadataOnlyPatch(ctx context.Context, q *scope, old, patched runtime.Object) error {
	if !responses.MetadataOnly(ctx) {
		return nil
	}
	same, err := responses.SameButMetadata(old, patched)
	if err != nil {
		return err
	}
	if !same {
		return metadataOnlyRefusal(q)
	}
	return nil
}

// metadataOnlyRefusal is the 403 of a write beyond a metadata grant.
func metadataOnlyRefusal(q *scope) error {
	return apierrors.NewForbidden(q.res.GroupResource(), q.name,
		fmt.Errorf("a grant on %s/%s allows changes of metadata only", q.res.GVR.Resource, responses.MetadataSubresource))
}

// setsResourceVersion reports whether a patch names a resourceVersion,
// which makes it a precondition. A body it cannot read is treated as
// naming one: the patch then fails or holds to the stored version.
func setsResourceVersion(contentType string, body []byte) bool {
	if contentType == string(types.JSONPatchType) {
		var ops []struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(body, &ops); err != nil {
			return true
		}
		for _, op := range ops {
			if strings.HasPrefix(op.Path, "/metadata/resourceVersion") || op.Path == "/metadata" || op.Path == "" {
				return true
			}
		}
		return false
	}
	var doc struct {
		Metadata *struct {
			ResourceVersion *string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(body, &doc); err != nil {
		return true
	}
	return doc.Metadata != nil && doc.Metadata.ResourceVersion != nil
}

// applyPatch patches old with p through m and sends the warnings it finds.
// Unless the patch names a resourceVersion, the result applies to whatever
// is stored, retried if the object changes meanwhile.
func applyPatch(w http.ResponseWriter, r *http.Request, m *patch.Manager, p *patchRequest, old runtime.Object) (runtime.Object, error) {
	patched, warnings, err := m.Patch(old, p.request(r.UserAgent()))
	if err != nil {
		return nil, err
	}
	// A retry finds the same problems; warn dedupes them.
	responses.Warn(w, warnings...)
	if !p.conditional {
		if accessor, err := meta.Accessor(patched); err == nil {
			accessor.SetResourceVersion("")
		}
	}
	return patched, nil
}
