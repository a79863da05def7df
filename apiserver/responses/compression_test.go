package responses

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
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

// Send compresses a long body that gzip shrinks by a quarter or more, for
// a client that accepts gzip, and sends plain one that it barely shrinks
// (random bytes, as in a protobuf list of keys and certificates), since
// compressing that would cost both ends more than it saves the wire.
func TestSendCompressesWhatShrinks(t *testing.T) {
	random := make([]byte, 4*GzipThreshold)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	text := bytes.Repeat([]byte("trustplane "), len(random)/10)
	// Random bytes in base64 shrink by a quarter at best; with as many
	// bytes of text among them, by more.
	mixed := make([]byte, 0, 2*len(random))
	for i := 0; i+72 <= len(random); i += 96 {
		mixed = base64.StdEncoding.AppendEncode(mixed, random[i:i+72])
		mixed = append(mixed, `"metadata":{"name":"name-0001","namespace":"default"}`...)
	}
	tests := []struct {
		name    string
		body    []byte
		accepts bool
		want    bool // compressed
	}{
		{"text", text, true, true},
		{"text, gzip not accepted", text, false, false},
		{"random bytes", random, true, false},
		{"base64 among text", mixed, true, true},
		{"text after random bytes", append(random[:compressSample:compressSample], text...), true, false},
	}
	rs := New(nil, nil, nil, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			if tt.accepts {
				r.Header.Set("Accept-Encoding", "gzip")
			}
			rec := httptest.NewRecorder()
			rs.Send(rec, r, http.StatusOK, "application/json", tt.body)
			got := rec.Body.Bytes()
			compressed := rec.Header().Get("Content-Encoding") == "gzip"
			if compressed != tt.want {
				t.Fatalf("compressed %v, want %v", compressed, tt.want)
			}
			if compressed {
				got = gunzip(t, got)
			} else if rec.Header().Get("Content-Length") != strconv.Itoa(len(tt.body)) {
				t.Errorf("Content-Length %q, want %d", rec.Header().Get("Content-Length"), len(tt.body))
			}
			if !bytes.Equal(got, tt.body) {
				t.Errorf("received %d bytes, not the %d sent", len(got), len(tt.body))
			}
		})
	}
}

// A client in one of the ranges the Writer sends plain to gets a plain
// body, whatever it accepts; the range is judged by the address the
// connection comes from, never by a header the client writes.
func TestSendPlainToClients(t *testing.T) {
	loopback, err := netip.ParsePrefix("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	v6, err := netip.ParsePrefix("::1/128")
	if err != nil {
		t.Fatal(err)
	}
	linkLocal, err := netip.ParsePrefix("fe80::/10")
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("trustplane "), GzipThreshold/10+1)
	tests := []struct {
		name       string
		remoteAddr string
		forwarded  string
		plainTo    []netip.Prefix
		want       bool // compressed
	}{
		{name: "loopback", remoteAddr: "127.0.0.1:40000", plainTo: []netip.Prefix{loopback, v6}},
		{name: "loopback, another address", remoteAddr: "127.1.2.3:40000", plainTo: []netip.Prefix{loopback, v6}},
		{name: "IPv6 loopback", remoteAddr: "[::1]:40000", plainTo: []netip.Prefix{loopback, v6}},
		{name: "IPv4 loopback mapped to IPv6", remoteAddr: "[::ffff:127.0.0.1]:40000", plainTo: []netip.Prefix{loopback, v6}},
		// Go names a link-local peer with its interface, which is no part
		// of the address a range holds.
		{name: "link-local, with its zone", remoteAddr: "[fe80::1%eth0]:40000", plainTo: []netip.Prefix{linkLocal}},
		{name: "another network", remoteAddr: "192.0.2.1:40000", plainTo: []netip.Prefix{loopback, v6}, want: true},
		{name: "another network forwarded for loopback", remoteAddr: "192.0.2.1:40000", forwarded: "127.0.0.1", plainTo: []netip.Prefix{loopback, v6}, want: true},
		{name: "no ranges", remoteAddr: "127.0.0.1:40000", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := New(nil, nil, nil, tt.plainTo)
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remoteAddr
			r.Header.Set("Accept-Encoding", "gzip")
			if tt.forwarded != "" {
				r.Header.Set("X-Forwarded-For", tt.forwarded)
			}
			rec := httptest.NewRecorder()
			rs.Send(rec, r, http.StatusOK, "application/json", body)
			if compressed := rec.Header().Get("Content-Encoding") == "gzip"; compressed != tt.want {
				t.Errorf("Send: compressed %v, want %v", compressed, tt.want)
			}
			rec = httptest.NewRecorder()
			rs.Document(rec, r, "application/json", body, "h", time.Time{})
			if compressed := rec.Header().Get("Content-Encoding") == "gzip"; compressed != tt.want {
				t.Errorf("Document: compressed %v, want %v", compressed, tt.want)
			}
		})
	}
}
