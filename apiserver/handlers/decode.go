package handlers

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"

	"github.com/trustplane/trustplane/apiserver/patch"
	"github.com/trustplane/trustplane/apiserver/responses"
)

// presizeLimit bounds what readBody allocates ahead on the word of a
// request's Content-Length: beyond it, the buffer grows only as the body
// arrives, so that a length declared and not sent costs little.
const presizeLimit = 64 << 10

// readBody reads the request body within the limit set by filters.WithLimits.
// A body of a known length is read into one buffer: io.ReadAll's growth, a
// copy at each doubling, was most of the time of reading a Secret's.
func readBody(r *http.Request) ([]byte, error) {
	size := bytes.MinRead
	if n := r.ContentLength; n > 0 {
		// MinRead more, the room ReadFrom wants to see the end without
		// growing.
		size += int(min(n, presizeLimit))
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	_, err := buf.ReadFrom(r.Body)
	body := buf.Bytes()
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", tooLarge.Limit))
		}
		return nil, apierrors.NewBadRequest("unable to read the request body")
	}
	return body, nil
}

// decodeKind decodes the body of a POST or PUT as a want, made by
// newObject. As in kube-apiserver, validation, the request's validated
// fieldValidation option, decides what becomes of the unknown fields and
// duplicate keys of a JSON or YAML body: Strict refuses the body (400);
// Warn, the default ("" or a value validation would have refused), drops
// them with a Warning header for each; Ignore drops them silently. A
// protobuf body has no names to check.
func (h *Handler) decodeKind(w http.ResponseWriter, r *http.Request, validation string, want schema.GroupVersionKind, newObject func() runtime.Object) (runtime.Object, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	info, err := negotiation.NegotiateInputSerializer(r, false, h.codecs)
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
			responses.Warn(w, texts...)
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

func kindString(gvk schema.GroupVersionKind) string {
	if gvk.Empty() {
		return "object of unknown kind"
	}
	return gvk.GroupVersion().String() + ", Kind=" + gvk.Kind
}

// decodeDeleteOptions reads the options of a DELETE as kube-apiserver's
// handlers do: from the DeleteOptions body, in JSON or protobuf, when the
// request has one, and then the query's options (dryRun,
// propagationPolicy, gracePeriodSeconds, orphanDependents) count for
// nothing; from the query when it has none. Then they are validated (422).
//
// A negative gracePeriodSeconds then becomes 1, as kube's
// rest.BeforeDelete makes it: as short as it gets while still graceful, so
// that a pod on a node is stopped by its node agent, not dropped from
// under it. kube does it after validating the options, which accept any
// grace period, and after checking the preconditions, which do not look at
// it; admission then sees 1, as in kube.
func (h *Handler) decodeDeleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		info, err := negotiation.NegotiateInputSerializer(r, false, h.codecs)
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
	} else if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		// A gracePeriodSeconds or orphanDependents that does not parse.
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if err := validateDeleteOptions(opts); err != nil {
		return nil, err
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		one := int64(1)
		opts.GracePeriodSeconds = &one
	}
	return opts, nil
}
