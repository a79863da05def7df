// Package responses writes the API server's answers: objects and lists in
// the format the client negotiated (JSON, YAML, protobuf, a Table, partial
// object metadata), documents with their ETags, errors as metav1.Status,
// and Warning headers; bodies over 128 KiB gzip-compressed for clients that
// accept it, as kube-apiserver's.
package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"k8s.io/apiserver/pkg/warning"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"

	"github.com/trustplane/trustplane/audit"
)

// Writer writes objects, documents and errors in the API's formats.
type Writer struct {
	scheme *runtime.Scheme
	codecs runtime.NegotiatedSerializer
	logger *slog.Logger
	gzips  gzipPool
	// plainTo are the client addresses never sent a compressed body.
	plainTo []netip.Prefix
}

// New returns a Writer that encodes with codecs the kinds scheme knows,
// and logs internal errors to logger. A client whose address is in one of
// plainTo is never sent a compressed body, as kube-apiserver's
// --disable-compression-for-client-ips: compression saves the bytes of a
// network link at the CPU of both ends, and on a link as fast as the
// machine's memory (loopback), or a local network, it only costs.
func New(scheme *runtime.Scheme, codecs runtime.NegotiatedSerializer, logger *slog.Logger, plainTo []netip.Prefix) *Writer {
	return &Writer{scheme: scheme, codecs: codecs, logger: logger, plainTo: plainTo}
}

// Object writes obj with the status code, in the format the client asked
// for first among those served, and records it for the audit log.
func (rs *Writer) Object(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) {
	opts, info, err := rs.Negotiate(r)
	if err != nil {
		rs.Error(w, r, err)
		return
	}
	// The audit log records the object, not its presentation.
	audit.LogResponseObject(r.Context(), obj)
	if obj, err = Transform(r, opts, obj, false); err != nil {
		rs.Error(w, r, err)
		return
	}
	gvks, _, err := rs.scheme.ObjectKinds(obj)
	if err != nil {
		rs.Error(w, r, err)
		return
	}
	encoder := rs.codecs.EncoderForVersion(info.Serializer, gvks[0].GroupVersion())
	var buf bytes.Buffer
	if err := encoder.Encode(obj, &buf); err != nil {
		rs.Error(w, r, err)
		return
	}
	rs.Send(w, r, code, info.MediaType, buf.Bytes())
}

// Send writes a body encoded in full beforehand, so that an encoding error
// could still be answered with its Status. It is gzip-compressed when the
// request (if any) accepts it, the body is long enough (gzipResponse
// decides) and gzip shrinks it enough (see gzipPool.shrinks).
func (rs *Writer) Send(w http.ResponseWriter, r *http.Request, code int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	accepts := len(body) > GzipThreshold && rs.compresses(r) && rs.gzips.shrinks(body)
	gw := rs.gzips.writer(w, accepts)
	gw.WriteHeader(code)
	// An error here is the client's connection failing: nothing can
	// be answered on it any more.
	gw.Write(body)
	gw.Close()
}

// Error writes err as a metav1.Status in JSON. Errors that are not API
// errors are internal: their text goes to the log, never to the client.
func (rs *Writer) Error(w http.ResponseWriter, r *http.Request, err error) {
	WriteError(r.Context(), w, rs.logger, err)
}

// WriteError writes err as a metav1.Status: an API error as it is, any
// other error as a generic 500 whose cause goes to logger only.
func WriteError(ctx context.Context, w http.ResponseWriter, logger *slog.Logger, err error) {
	var status metav1.Status
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		status = apiStatus.Status()
	} else {
		logger.ErrorContext(ctx, "internal error", "err", err)
		status = apierrors.NewInternalError(errors.New("an internal error occurred; see the server log")).Status()
	}
	WriteStatus(w, &status)
}

// WriteStatus writes a Status in JSON. It is never compressed, unlike in
// kube-apiserver, where one over GzipThreshold would be: the audit filter
// reads the Status of a failed request from the body it holds, and the
// filters that refuse a request write theirs with no Writer at hand. A
// Status is small; one of more than 128 KiB (a strict decoding error
// listing thousands of unknown fields) is sent plain.
func WriteStatus(w http.ResponseWriter, status *metav1.Status) {
	status.Kind = "Status"
	status.APIVersion = "v1"
	if status.Status == "" {
		status.Status = metav1.StatusFailure
	}
	code := int(status.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	body, _ := json.Marshal(status)
	if status.Details != nil && status.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(status.Details.RetryAfterSeconds)))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write(append(body, '\n'))
}

// JSON writes a small document that is only ever served as JSON, without
// the request at hand: the version. It is never compressed.
func (rs *Writer) JSON(w http.ResponseWriter, code int, v any) {
	rs.JSONAs(w, nil, code, "application/json", v)
}

// JSONAs writes v as JSON with the given content type, compressed if r
// accepts it and the document is long enough: discovery.
func (rs *Writer) JSONAs(w http.ResponseWriter, r *http.Request, code int, contentType string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		WriteError(context.Background(), w, rs.logger, err)
		return
	}
	rs.Send(w, r, code, contentType, body)
}

// maxWarnings bounds the Warning headers of one response. kube-apiserver
// sends them all, shortened once they pass 4 KiB; but a body of a few MiB
// of unknown one-letter fields would then be answered with hundreds of
// thousands of headers.
const maxWarnings = 100

// moreWarnings is the last Warning of a response that had more.
const moreWarnings = "more warnings left out"

// Warn adds a Warning header for each text not already sent, with code 299
// and agent "-" as kube-apiserver's warning recorder writes them, up to
// maxWarnings, the last of which then says that some were left out. It
// does not count them: a text may itself sum up problems its producer
// left out. The text is quoted, so that a field name in it cannot break
// the header.
func Warn(w http.ResponseWriter, texts ...string) {
	h := w.Header()
	sent := map[string]bool{}
	for _, v := range h.Values("Warning") {
		sent[v] = true
	}
	for i, text := range texts {
		if len(sent) >= maxWarnings {
			return
		}
		if len(sent) == maxWarnings-1 && i < len(texts)-1 {
			text = moreWarnings
		}
		v := "299 - " + strconv.Quote(text)
		if !sent[v] {
			sent[v] = true
			h.Add("Warning", v)
		}
	}
}

// Document writes an OpenAPI document with its ETag. http.ServeContent
// answers If-None-Match (304), HEAD and Range; a full document is
// gzip-compressed as the Writer's bodies are, when the client accepts
// it and the document is over GzipThreshold. Either form carries the same
// ETag, as kube-openapi's gzip handler leaves /openapi/v2's: Vary:
// Accept-Encoding tells caches apart.
//
// kube differs in its thresholds: kube-openapi compresses /openapi/v2
// from 1400 bytes (gziphandler's default) and the v3 documents not at
// all. One threshold for every response keeps one place deciding; the
// documents are hundreds of KiB, over either.
func (rs *Writer) Document(w http.ResponseWriter, r *http.Request, contentType string, doc []byte, hash string, modified time.Time) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Etag", strconv.Quote(hash))
	gw := rs.gzips.writer(w, rs.compresses(r))
	defer gw.Close()
	http.ServeContent(gw, r, "", modified, bytes.NewReader(doc))
}

// NotFound is kube-apiserver's answer for a path it does not serve.
func NotFound() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotFound,
		Reason:  metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
	}}
}

// Negotiate picks the output format and the transformation asked for.
// A request allowed only by a grant on metadata (MetadataOnly) is
// answered with PartialObjectMetadata in the format it asked for, whatever
// conversion it asked for, or none.
func (rs *Writer) Negotiate(r *http.Request) (negotiation.MediaTypeOptions, runtime.SerializerInfo, error) {
	opts, info, err := negotiation.NegotiateOutputMediaType(r, rs.codecs, transformRestrictions{})
	if err == nil && MetadataOnly(r.Context()) {
		opts.Convert = &metadataConversion
	}
	return opts, info, err
}

// WarningRecorder adds the warnings recorded with k8s.io/apiserver's
// warning package to w's headers, as Warn does.
func WarningRecorder(w http.ResponseWriter) warning.Recorder { return warningRecorder{w} }

type warningRecorder struct{ w http.ResponseWriter }

func (r warningRecorder) AddWarning(_, text string) { Warn(r.w, text) }
