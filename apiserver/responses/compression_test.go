package responses

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	tests := []struct {
		acceptEncoding string
		want           bool
	}{
		{"", false},
		{"gzip", true},
		{"deflate, gzip", true},
		{"gzip , br", true},
		{"br,gzip", true},
		{"identity", false},
		{"x-gzip", false},
		// kube reads bare tokens alone: parameters make a token unknown.
		{"gzip;q=0", false},
		{"gzip;q=1.0", false},
		{"GZIP", false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if tt.acceptEncoding != "" {
			r.Header.Set("Accept-Encoding", tt.acceptEncoding)
		}
		if got := acceptsGzip(r); got != tt.want {
			t.Errorf("Accept-Encoding %q: %v, want %v", tt.acceptEncoding, got, tt.want)
		}
	}
}

func TestGzipResponse(t *testing.T) {
	large := bytes.Repeat([]byte("trustplane "), GzipThreshold/10)
	tests := []struct {
		name     string
		accepts  bool
		code     int
		length   int  // the Content-Length set before WriteHeader; -1: none
		encoding bool // a Content-Encoding set before WriteHeader
		want     bool // compressed
	}{
		{name: "over the threshold", accepts: true, code: 200, length: GzipThreshold + 1, want: true},
		{name: "created, over the threshold", accepts: true, code: 201, length: GzipThreshold + 1, want: true},
		{name: "at the threshold", accepts: true, code: 200, length: GzipThreshold},
		{name: "not accepted", code: 200, length: GzipThreshold + 1},
		{name: "no length", accepts: true, code: 200, length: -1},
		{name: "a range", accepts: true, code: http.StatusPartialContent, length: GzipThreshold + 1},
		{name: "already encoded", accepts: true, code: 200, length: GzipThreshold + 1, encoding: true},
	}
	var pool gzipPool
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := large[:max(tt.length, 100)]
			rec := httptest.NewRecorder()
			rec.Header().Set("Vary", "Accept")
			rec.Header().Set("Accept-Ranges", "bytes")
			if tt.length >= 0 {
				rec.Header().Set("Content-Length", strconv.Itoa(tt.length))
			}
			if tt.encoding {
				rec.Header().Set("Content-Encoding", "br")
			}
			gw := pool.writer(rec, tt.accepts)
			gw.WriteHeader(tt.code)
			// In pieces, as http.ServeContent writes.
			for rest := body; len(rest) > 0; {
				n := min(len(rest), 32*1024)
				if _, err := gw.Write(rest[:n]); err != nil {
					t.Fatal(err)
				}
				rest = rest[n:]
			}
			if err := gw.Close(); err != nil {
				t.Fatal(err)
			}
			h := rec.Result().Header
			if got := h.Get("Content-Encoding") == "gzip"; got != tt.want {
				t.Fatalf("compressed: %v, want %v (headers %v)", got, tt.want, h)
			}
			if rec.Code != tt.code {
				t.Errorf("code %d, want %d", rec.Code, tt.code)
			}
			got := rec.Body.Bytes()
			if !tt.want {
				if !bytes.Equal(got, body) || h.Values("Vary")[len(h.Values("Vary"))-1] != "Accept" {
					t.Errorf("plain response changed: %d bytes, Vary %q", len(got), h.Values("Vary"))
				}
				return
			}
			if want := []string{"Accept", "Accept-Encoding"}; strings.Join(h.Values("Vary"), ",") != strings.Join(want, ",") {
				t.Errorf("Vary %q, want %q", h.Values("Vary"), want)
			}
			if h.Get("Content-Length") != "" || h.Get("Accept-Ranges") != "" {
				t.Errorf("Content-Length %q, Accept-Ranges %q kept on a compressed body", h.Get("Content-Length"), h.Get("Accept-Ranges"))
			}
			if plain := gunzip(t, got); !bytes.Equal(plain, body) {
				t.Errorf("gunzipped %d bytes, want the %d written", len(plain), len(body))
			}
			if len(got) >= len(body)/4 {
				t.Errorf("compressed to %d bytes of %d", len(got), len(body))
			}
		})
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	return plain
}
