package responses

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// GzipThreshold is kube-apiserver's defaultGzipThresholdBytes: a body of
// this many bytes or fewer is sent plain even to a client that accepts
// gzip, as compressing it costs the server more than it saves the wire.
const GzipThreshold = 128 * 1024

// compresses reports whether a body for r may be compressed: the client
// accepts gzip, and its address is in none of the ranges the Writer sends
// plain to.
func (rs *Writer) compresses(r *http.Request) bool {
	return r != nil && acceptsGzip(r) && !plainClient(r, rs.plainTo)
}

// plainClient reports whether r's client, by the address its connection
// comes from, is in one of prefixes. A forwarded-for header does not
// count: a client may write anything there.
func plainClient(r *http.Request, prefixes []netip.Prefix) bool {
	if len(prefixes) == 0 {
		return false
	}
	addrPort, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	// A link-local peer's address carries its interface (fe80::1%eth0),
	// and netip never finds an address with a zone in a range.
	addr := addrPort.Addr().Unmap().WithZone("")
	for _, p := range prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

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
		gz, err := g.pool.get(g.ResponseWriter)
		if err != nil {
			return 0, err
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
	g.pool.put(g.gz)
	g.gz = nil
	return err
}

// get returns a writer from the pool, or a new one, compressing to w.
func (p *gzipPool) get(w io.Writer) (*gzip.Writer, error) {
	if gz, ok := p.pool.Get().(*gzip.Writer); ok {
		gz.Reset(w)
		return gz, nil
	}
	// BestSpeed is kube's gzipContentEncodingLevel: a ratio close to the
	// best for much less CPU. klauspost/compress's gzip at that level
	// compresses a JSON list of 10,000 ConfigMaps 1.85 times as fast as
	// compress/gzip's, to 0.61 of its size instead of 0.60, and any gzip
	// reader reads it.
	gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return nil, fmt.Errorf("start gzip: %w", err)
	}
	return gz, nil
}

// put returns a closed writer to the pool.
func (p *gzipPool) put(gz *gzip.Writer) {
	gz.Reset(nil)
	p.pool.Put(gz)
}

// compressSample is how much of a body shrinks reads.
const compressSample = 64 * 1024

// shrinks reports whether gzip shrinks body by a quarter at least, judged
// by compressing its first compressSample bytes, as a list's first items
// stand for the rest. kube-apiserver compresses every body over
// GzipThreshold; but a body that gzip barely shrinks, such as a list in
// protobuf of ConfigMaps or Secrets of random bytes (keys, certificates,
// tokens), shrinks by an eighth, and costs the server about 5 ms of CPU
// per MiB to compress and the client about as much to decompress: more
// time than the bytes it saves take on any link faster than about 100
// Mbit/s. Such a body is sent plain. The sample costs a 200th of
// compressing a 12 MiB list, and less than half of compressing the
// smallest body that is compressed.
func (p *gzipPool) shrinks(body []byte) bool {
	sample := body[:min(len(body), compressSample)]
	var n countingWriter
	gz, err := p.get(&n)
	if err != nil {
		return false
	}
	gz.Write(sample) // a countingWriter never fails
	gz.Close()
	p.put(gz)
	return int(n)*4 <= len(sample)*3
}

// countingWriter counts the bytes written to it, and keeps none.
type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
