package apiserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"

	"github.com/trustplane/trustplane/apiserver/patch"
)

// readBody reads the request body within the limit set by withLimits.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", tooLarge.Limit))
		}
		return nil, apierrors.NewBadRequest("unable to read the request body")
	}
	return body, nil
}

// decodeObject decodes the request body into a new object of res, in the
// body's content type (JSON, YAML or protobuf), checks that it is of the
// resource's kind and sets the kind's defaults. See decodeKind for
// fieldValidation.
func (s *Server) decodeObject(w http.ResponseWriter, r *http.Request, res *resource) (runtime.Object, error) {
	obj, err := s.decodeKind(w, r, res.gvk(), res.newObject)
	if err != nil {
		return nil, err
	}
	if res.defaults != nil {
		res.defaults(obj)
	}
	return obj, nil
}

// decodeKind decodes the body of a POST or PUT as a want, made by
// newObject. As in kube-apiserver, the fieldValidation parameter decides
// what becomes of the unknown fields and duplicate keys of a JSON or YAML
// body: Strict refuses the body (400), Warn, the default, drops them with
// a Warning header for each, Ignore drops them silently. A protobuf body
// has no names to check.
func (s *Server) decodeKind(w http.ResponseWriter, r *http.Request, want schema.GroupVersionKind, newObject func() runtime.Object) (runtime.Object, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	info, err := negotiation.NegotiateInputSerializer(r, false, s.codecs)
	if err != nil {
		return nil, err
	}
	validation, err := fieldValidation(r)
	if err != nil {
		return nil, err
	}
	decoder := info.Serializer
	if info.StrictSerializer != nil && validation != metav1.FieldValidationIgnore {
		decoder = info.StrictSerializer
	}
	obj, gvk, err := decoder.Decode(body, &want, newObject())
	if err != nil {
		strict, isStrict := runtime.AsStrictDecodingError(err)
		switch {
		case !isStrict || obj == nil:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded as %s: %v", info.MediaType, err))
		case validation == metav1.FieldValidationStrict:
			if gvk != nil && gvk.Kind != "" {
				// kube-apiserver's words.
				return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, want.Kind, err))
			}
			return nil, apierrors.NewBadRequest(err.Error())
		default:
			// A strict YAML error lists its duplicate keys on lines of
			// its own; each is a warning, as from kube-apiserver.
			var texts []string
			for _, e := range strict.Errors() {
				texts = append(texts, patch.YAMLWarnings(e)...)
			}
			warn(w, texts...)
		}
	}
	if gvk == nil || *gvk != want {
		got := schema.GroupVersionKind{}
		if gvk != nil {
			got = *gvk
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is a %s, the URL expects a %s", kindString(got), kindString(want)))
	}
	obj.GetObjectKind().SetGroupVersionKind(want)
	return obj, nil
}

// fieldValidation is the fieldValidation parameter of a POST or PUT, Warn
// when it is absent. Any value but Ignore, Warn and Strict is refused as
// kube-apiserver refuses it, 422 Invalid naming the CreateOptions or
// UpdateOptions:
//
//	CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"
func fieldValidation(r *http.Request) (string, error) {
	v := r.URL.Query().Get("fieldValidation")
	if errs := metavalidation.ValidateFieldValidation(field.NewPath("fieldValidation"), v); len(errs) > 0 {
		kind := "CreateOptions"
		if r.Method == http.MethodPut {
			kind = "UpdateOptions"
		}
		return "", apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
	}
	if v == "" {
		return metav1.FieldValidationWarn, nil
	}
	return v, nil
}

func kindString(gvk schema.GroupVersionKind) string {
	if gvk.Empty() {
		return "object of unknown kind"
	}
	return gvk.GroupVersion().String() + ", Kind=" + gvk.Kind
}

// decodeDeleteOptions reads the optional DeleteOptions body of a DELETE,
// in JSON or protobuf.
func (s *Server) decodeDeleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		info, err := negotiation.NegotiateInputSerializer(r, false, s.codecs)
		if err != nil {
			return nil, err
		}
		want := metav1.SchemeGroupVersion.WithKind("DeleteOptions")
		obj, _, err := info.Serializer.Decode(body, &want, opts)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the DeleteOptions in the body could not be decoded: %v", err))
		}
		var ok bool
		if opts, ok = obj.(*metav1.DeleteOptions); !ok {
			return nil, apierrors.NewBadRequest("the body of a DELETE must be DeleteOptions")
		}
	}
	if v := r.URL.Query()["dryRun"]; len(v) > 0 && len(opts.DryRun) == 0 {
		opts.DryRun = v
	}
	if p := r.URL.Query().Get("propagationPolicy"); p != "" && opts.PropagationPolicy == nil {
		policy := metav1.DeletionPropagation(p)
		opts.PropagationPolicy = &policy
	}
	if opts.PropagationPolicy != nil {
		switch *opts.PropagationPolicy {
		case metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("propagationPolicy must be Orphan, Background or Foreground, got %q", *opts.PropagationPolicy))
		}
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		return nil, apierrors.NewBadRequest("gracePeriodSeconds must not be negative")
	}
	return opts, nil
}

// dryRun reports whether a write is a dry run; All is the only value.
func dryRun(values []string) (bool, error) {
	switch {
	case len(values) == 0:
		return false, nil
	case len(values) == 1 && values[0] == metav1.DryRunAll:
		return true, nil
	}
	return false, apierrors.NewBadRequest(fmt.Sprintf("dryRun must be All, got %q", values))
}
