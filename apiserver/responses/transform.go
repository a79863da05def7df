package responses

import (
	"errors"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"

	"github.com/trustplane/trustplane/apiserver/printers"
)

// transformRestrictions let clients ask for a resource as a
// meta.k8s.io/v1 Table (kubectl get) or as PartialObjectMetadata
// (metadata informers), and for nothing else.
type transformRestrictions struct{}

func (transformRestrictions) AllowsMediaTypeTransform(mimeType, mimeSubType string, target *schema.GroupVersionKind) bool {
	if target == nil {
		return true
	}
	if target.Group != metav1.GroupName || (target.Version != "v1" && target.Version != "v1beta1") {
		return false
	}
	switch target.Kind {
	case "Table", "PartialObjectMetadata", "PartialObjectMetadataList":
		// Tables in protobuf are not served, as kube-apiserver.
		return target.Kind != "Table" || mimeSubType == "json" || mimeSubType == "yaml"
	}
	return false
}

func (transformRestrictions) AllowsServerVersion(string) bool  { return false }
func (transformRestrictions) AllowsStreamSchema(s string) bool { return s == "watch" }

// Transform turns obj (an object or a list) into what the client asked
// for: unchanged, a Table, or partial object metadata. noHeaders drops the
// Table's column definitions (watch events after the first).
func Transform(r *http.Request, opts negotiation.MediaTypeOptions, obj runtime.Object, noHeaders bool) (runtime.Object, error) {
	target := opts.Convert
	if target == nil {
		return obj, nil
	}
	gv := metav1.SchemeGroupVersion
	if MetadataOnly(r.Context()) {
		// Negotiate forced the conversion: only its list-ness is
		// the object's, and a Status (a delete's answer) carries no
		// object.
		if _, isStatus := obj.(*metav1.Status); isStatus {
			return obj, nil
		}
		kind := "PartialObjectMetadata"
		if meta.IsListType(obj) {
			kind = "PartialObjectMetadataList"
		}
		out, err := partialMetadataOf(obj, kind)
		switch m := out.(type) {
		case *metav1.PartialObjectMetadata:
			hideFromMetadata(&m.ObjectMeta)
		case *metav1.PartialObjectMetadataList:
			for i := range m.Items {
				hideFromMetadata(&m.Items[i].ObjectMeta)
			}
		}
		return out, err
	}
	switch target.Kind {
	case "Table":
		if _, isStatus := obj.(*metav1.Status); isStatus {
			return obj, nil
		}
		table, err := printers.Table(obj, noHeaders, time.Now())
		if err != nil {
			return nil, NotAcceptable(err.Error())
		}
		switch r.URL.Query().Get("includeObject") {
		case "", string(metav1.IncludeMetadata):
		case string(metav1.IncludeNone):
			for i := range table.Rows {
				table.Rows[i].Object = runtime.RawExtension{}
			}
		case string(metav1.IncludeObject):
			items, _ := meta.ExtractList(obj)
			if items == nil {
				items = []runtime.Object{obj}
			}
			for i := range table.Rows {
				if i < len(items) {
					table.Rows[i].Object = runtime.RawExtension{Object: items[i]}
				}
			}
		default:
			return nil, apierrors.NewBadRequest("includeObject must be None, Metadata or Object")
		}
		table.SetGroupVersionKind(gv.WithKind("Table"))
		return table, nil
	case "PartialObjectMetadata", "PartialObjectMetadataList":
		return partialMetadataOf(obj, target.Kind)
	}
	return nil, NotAcceptable("unsupported transformation")
}

// partialMetadataOf is obj, an object or a list, as kind:
// PartialObjectMetadata or PartialObjectMetadataList.
func partialMetadataOf(obj runtime.Object, kind string) (runtime.Object, error) {
	if meta.IsListType(obj) {
		if kind != "PartialObjectMetadataList" {
			return nil, NotAcceptable("a list can only be served as PartialObjectMetadataList")
		}
		listMeta, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, err
		}
		out := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: metav1.SchemeGroupVersion.String()}}
		out.ResourceVersion = listMeta.GetResourceVersion()
		out.Continue = listMeta.GetContinue()
		err = meta.EachListItem(obj, func(item runtime.Object) error {
			p, err := partialMetadata(item)
			if err == nil {
				out.Items = append(out.Items, *p)
			}
			return err
		})
		return out, err
	}
	if kind != "PartialObjectMetadata" {
		return nil, NotAcceptable("an object can only be served as PartialObjectMetadata")
	}
	return partialMetadata(obj)
}

func partialMetadata(obj runtime.Object) (*metav1.PartialObjectMetadata, error) {
	withMeta, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, errors.New("object has no metadata")
	}
	objMeta, ok := withMeta.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok {
		return nil, errors.New("object has no metadata")
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: metav1.SchemeGroupVersion.String()},
		ObjectMeta: *objMeta.DeepCopy(),
	}, nil
}

// NotAcceptable is the 406 answer to a format or transformation that is
// not served.
func NotAcceptable(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: msg,
	}}
}
