package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/trustplane/trustplane/audit"
)

// responder writes objects and errors in the API's formats.
type responder struct {
	scheme *runtime.Scheme
	codecs runtime.NegotiatedSerializer
	logger *slog.Logger
	gzips  gzipPool
}

// object writes obj with the status code, in the format the client asked
// for first among those served, and records it for the audit log.
func (rs *responder) object(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) {
	opts, info, err := rs.negotiate(r)
	if err != nil {
		rs.error(w, r, err)
		return
	}
	// The audit log records the object, not its presentation.
	audit.LogResponseObject(r.Context(), obj)
	if obj, err = transform(r, opts, obj, false); err != nil {
		rs.error(w, r, err)
		return
	}
	gvks, _, err := rs.scheme.ObjectKinds(obj)
	if err != nil {
		rs.error(w, r, err)
		return
	}
	encoder := rs.codecs.EncoderForVersion(info.Serializer, gvks[0].GroupVersion())
	var buf bytes.Buffer
	if err := encoder.Encode(obj, &buf); err != nil {
		rs.error(w, r, err)
		return
	}
	rs.send(w, r, code, info.MediaType, buf.Bytes())
}

// send writes a body encoded in full beforehand, so that an encoding error
// could still be answered with its Status. It is gzip-compressed when the
// request (if any) accepts it and the body is long enough: gzipResponse
// decides.
func (rs *responder) send(w http.ResponseWriter, r *http.Request, code int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	gw := rs.gzips.writer(w, r != nil && acceptsGzip(r))
	gw.WriteHeader(code)
	// An error here is the client's connection failing: nothing can
	// be answered on it any more.
	gw.Write(body)
	gw.Close()
}

// error writes err as a metav1.Status in JSON. Errors that are not API
// errors are internal: their text goes to the log, never to the client.
func (rs *responder) error(w http.ResponseWriter, r *http.Request, err error) {
	writeError(r.Context(), w, rs.logger, err)
}

func writeError(ctx context.Context, w http.ResponseWriter, logger *slog.Logger, err error) {
	var status metav1.Status
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		status = apiStatus.Status()
	} else {
		logger.ErrorContext(ctx, "internal error", "err", err)
		status = apierrors.NewInternalError(errors.New("an internal error occurred; see the server log")).Status()
	}
	writeStatus(w, &status)
}

// writeStatus writes a Status in JSON. It is never compressed, unlike in
// kube-apiserver, where one over gzipThreshold would be: the audit filter
// reads the Status of a failed request from the body it holds, and the
// filters that refuse a request write theirs with no responder at hand. A
// Status is small; one of more than 128 KiB (a strict decoding error
// listing thousands of unknown fields) is sent plain.
func writeStatus(w http.ResponseWriter, status *metav1.Status) {
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

// metaAccessor is meta.Accessor for objects the scheme serves, which all
// have ObjectMeta.
func metaAccessor(obj runtime.Object) (metav1.Object, error) {
	return meta.Accessor(obj)
}

// json writes a small document that is only ever served as JSON, without
// the request at hand: the version. It is never compressed.
func (rs *responder) json(w http.ResponseWriter, code int, v any) {
	rs.jsonAs(w, nil, code, "application/json", v)
}

// jsonAs writes v as JSON with the given content type, compressed if r
// accepts it and the document is long enough: discovery.
func (rs *responder) jsonAs(w http.ResponseWriter, r *http.Request, code int, contentType string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(context.Background(), w, rs.logger, err)
		return
	}
	rs.send(w, r, code, contentType, body)
}

// maxWarnings bounds the Warning headers of one response. kube-apiserver
// sends them all, shortened once they pass 4 KiB; but a body of a few MiB
// of unknown one-letter fields would then be answered with hundreds of
// thousands of headers.
const maxWarnings = 100

// moreWarnings is the last Warning of a response that had more.
const moreWarnings = "more warnings left out"

// warn adds a Warning header for each text not already sent, with code 299
// and agent "-" as kube-apiserver's warning recorder writes them, up to
// maxWarnings, the last of which then says that some were left out. It
// does not count them: a text may itself sum up problems its producer
// left out. The text is quoted, so that a field name in it cannot break
// the header.
func warn(w http.ResponseWriter, texts ...string) {
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
