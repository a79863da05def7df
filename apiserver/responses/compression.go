package responses

import (
	"compress/gzip"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// GzipThreshold is kube-apiserver's defaultGzipThresholdBytes: a body of
// this many bytes or fewer is sent plain even to a client that accepts
// gzip, as compressing it costs the server more than it saves the wire.
const GzipThreshold = 128 * 1024

// acceptsGzip reports whether the client accepts a gzip-compressed body,
// reading Accept-Encoding as kube-apiserver does: one of its
// comma-separated tokens is "gzip" itself. A token with parameters does not
// count, so "gzip;q=0" refuses compression, and so does "gzip;q=1"; Go's
// transport, client-go and curl all send the bare token.
func acceptsGzip(r *http.Request) bool {
	for _, token := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if strings.TrimSpace(token) == "gzip" {
			return true
		}
	}
	return false
}

// gzipPool holds gzip writers for reuse: each holds a few hundred KiB of
// compressor state, and every response that uses one is over
// GzipThreshold. The zero value is ready to use.
type gzipPool struct {
	pool sync.Pool
}

// writer is w, compressing the body when the client accepts gzip (the
// caller reads that from the request) and the response is long enough.
// The caller must Close it once the body is written.
func (p *gzipPool) writer(w http.ResponseWriter, accepts bool) *gzipResponse {
	return &gzipResponse{ResponseWriter: w, accepts: accepts, pool: p}
}

// gzipResponse decides, when the header goes out, whether the body is
// compressed: when the client accepts gzip and the Content-Length set
// before WriteHeader passes GzipThreshold. It is the one place that
// decides, for every response whose length is known before it is written:
// the objects and documents of the Writer, which sets the length, and
// the OpenAPI documents, whose length http.ServeContent sets. A response
// without a length (a 304, a stream) is never compressed.
//
// The headers are kube-apiserver's deferredResponseWriter's:
// Content-Encoding: gzip and Vary: Accept-Encoding added to what is there,
// on the compressed response alone. The length is dropped, since the
// compressed one is known only at the end, and so is Accept-Ranges: a range
// is of the plain bytes, which a Range request is answered with (206 is
// never compressed), not of the compressed ones.
//
// It has only the methods of http.ResponseWriter: io.Copy must not find a
// ReadFrom that writes around the compressor.
type gzipResponse struct {
	http.ResponseWriter
	accepts bool
	pool    *gzipPool

	wroteHeader bool
	compress    bool
	gz          *gzip.Writer // from the first Write of a compressed body
}

func (g *gzipResponse) WriteHeader(code int) {
	if g.wroteHeader {
		g.ResponseWriter.WriteHeader(code) // superfluous: net/http reports it
		return
	}
	g.wroteHeader = true
	h := g.Header()
	length, err := strconv.Atoi(h.Get("Content-Length"))
	if g.accepts && err == nil && length > GzipThreshold && code != http.StatusPartialContent && h.Get("Content-Encoding") == "" {
		g.compress = true
		h.Del("Content-Length")
		h.Del("Accept-Ranges")
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *gzipResponse) Write(p []byte) (int, error) {
	if !g.wroteHeader {
		g.WriteHeader(http.StatusOK)
	}
	if !g.compress {
		return g.ResponseWriter.Write(p)
	}
	if g.gz == nil {
		gz, ok := g.pool.pool.Get().(*gzip.Writer)
		if ok {
			gz.Reset(g.ResponseWriter)
		} else {
			// BestSpeed is kube's gzipContentEncodingLevel: a ratio
			// close to the best for much less CPU.
			var err error
			if gz, err = gzip.NewWriterLevel(g.ResponseWriter, gzip.BestSpeed); err != nil {
				return 0, fmt.Errorf("start gzip: %w", err)
			}
		}
		g.gz = gz
	}
	return g.gz.Write(p)
}

// Close ends the compressed stream, if one was started, and returns its
// writer to the pool.
func (g *gzipResponse) Close() error {
	if g.gz == nil {
		return nil
	}
	err := g.gz.Close()
	g.gz.Reset(nil)
	g.pool.pool.Put(g.gz)
	g.gz = nil
	return err
}
