package apiserver

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/trustplane/trustplane/apiserver/responses"
	"github.com/trustplane/trustplane/audit"
)

// An object response over 128 KiB is gzip-compressed for a client that
// accepts it, with kube's headers; the same request without gzip gets the
// same bytes plain; a small response and an error are never compressed;
// and the audit log records the object, not the compressed bytes.
func TestResponseCompression(t *testing.T) {
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n"))
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, func(c *Config) { c.AuditPolicy = policy })
	largeConfigMaps(t, ts.clientset(t, admin))
	c := ts.httpClient(t, admin)
	get := func(path, accept, acceptEncoding string) (*http.Response, []byte) {
		t.Helper()
		return fetch(t, c, http.MethodGet, ts.url+path, "Accept", accept, "Accept-Encoding", acceptEncoding)
	}
	const list = "/api/v1/namespaces/default/configmaps"
	tests := []struct {
		name, path, accept string
		code               int
		compressed         bool
	}{
		{"list", list, "application/json", 200, true},
		{"list in protobuf", list, "application/vnd.kubernetes.protobuf", 200, true},
		{"list as a Table", list, "application/json;as=Table;v=v1;g=meta.k8s.io", 200, false}, // names and ages only
		{"one object", list + "/big-0", "application/json", 200, false},
		{"a small object", "/api/v1/namespaces/default", "application/json", 200, false},
		{"an error", list + "/nope", "application/json", 404, false},
		{"discovery, small", "/apis", aggregatedMediaType, 200, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(tt.path, tt.accept, "gzip")
			plainResp, plain := get(tt.path, tt.accept, "identity")
			if resp.StatusCode != tt.code || plainResp.StatusCode != tt.code {
				t.Fatalf("codes %d and %d, want %d", resp.StatusCode, plainResp.StatusCode, tt.code)
			}
			if plainResp.Header.Get("Content-Encoding") != "" || strings.Contains(strings.Join(plainResp.Header.Values("Vary"), ","), "Accept-Encoding") {
				t.Errorf("without gzip accepted: Content-Encoding %q, Vary %q", plainResp.Header.Get("Content-Encoding"), plainResp.Header.Values("Vary"))
			}
			if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tt.compressed {
				t.Fatalf("compressed %v, want %v: %d bytes plain", got, tt.compressed, len(plain))
			}
			if !tt.compressed {
				if !bytes.Equal(body, plain) {
					t.Errorf("the response differs with gzip accepted")
				}
				return
			}
			if !strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Accept-Encoding") {
				t.Errorf("Vary %q, want Accept-Encoding in it", resp.Header.Values("Vary"))
			}
			if resp.Header.Get("Content-Type") != plainResp.Header.Get("Content-Type") {
				t.Errorf("Content-Type %q, plain %q", resp.Header.Get("Content-Type"), plainResp.Header.Get("Content-Type"))
			}
			if got := gunzip(t, body); !bytes.Equal(got, plain) {
				t.Errorf("gunzipped %d bytes differ from the %d plain ones", len(got), len(plain))
			}
			t.Logf("%s: %d bytes, %d compressed", tt.path, len(plain), len(body))
		})
	}

	var listed, failed bool
	for _, ev := range readAuditLog(t, ts.auditLog) {
		// The policy omits no stage: each request's RequestReceived,
		// without a response, comes first.
		if ev.Stage != auditv1.StageResponseComplete {
			continue
		}
		switch {
		case ev.RequestURI == list && ev.Verb == "list":
			var l corev1.ConfigMapList
			if ev.ResponseObject == nil || json.Unmarshal(ev.ResponseObject.Raw, &l) != nil || len(l.Items) != 3 {
				t.Errorf("audited list: %.200q, want a ConfigMapList of 3", ev.ResponseObject)
			}
			listed = true
		case ev.RequestURI == list+"/nope":
			if ev.ResponseStatus == nil || ev.ResponseStatus.Reason != metav1.StatusReasonNotFound {
				t.Errorf("audited error: %+v, want its Status read", ev.ResponseStatus)
			}
			failed = true
		}
	}
	if !listed || !failed {
		t.Errorf("audit events: list %v, error %v", listed, failed)
	}
}

// client-go accepts gzip unless DisableCompression is set, and reads the
// list either way.
func TestClientGoCompression(t *testing.T) {
	ts := startServer(t)
	total := largeConfigMaps(t, ts.clientset(t, admin))
	for _, disable := range []bool{false, true} {
		t.Run("DisableCompression="+strconv.FormatBool(disable), func(t *testing.T) {
			cfg := ts.restConfig(t, admin)
			cfg.DisableCompression = disable
			var mu sync.Mutex
			var uncompressed []bool
			cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(r *http.Request) (*http.Response, error) {
					resp, err := rt.RoundTrip(r)
					if err == nil {
						mu.Lock()
						// The transport unpacked a gzip body.
						uncompressed = append(uncompressed, resp.Uncompressed)
						mu.Unlock()
					}
					return resp, err
				})
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			l, err := cs.CoreV1().ConfigMaps("default").List(testContext(t), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for _, cm := range l.Items {
				got += len(cm.Data["data"])
			}
			if len(l.Items) != 3 || got != total {
				t.Errorf("listed %d configmaps holding %d bytes, want 3 holding %d", len(l.Items), got, total)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(uncompressed) != 1 || uncompressed[0] == disable {
				t.Errorf("responses unpacked by the transport: %v, want [%v]", uncompressed, !disable)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The OpenAPI documents over 128 KiB are compressed in every form; the
// ETag is the same, and answers If-None-Match with an uncompressed 304; a
// range is of the plain document.
func TestOpenAPICompression(t *testing.T) {
	ts := startServer(t)
	c := ts.httpClient(t, admin)
	do := func(method, path, accept, acceptEncoding string, header ...string) (*http.Response, []byte) {
		t.Helper()
		return fetch(t, c, method, ts.url+path, append([]string{"Accept", accept, "Accept-Encoding", acceptEncoding}, header...)...)
	}
	_, index := do("GET", "/openapi/v3", "application/json", "identity")
	var idx struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(index, &idx); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path, accept string }{
		{"v3 api/v1", strings.Split(idx.Paths["api/v1"].URL, "?")[0], "application/json"},
		{"v3 api/v1 by hash", idx.Paths["api/v1"].URL, "application/json"},
		{"v2", "/openapi/v2", "application/json"},
		{"v2 protobuf", "/openapi/v2", mediaOpenAPIV2ProtobufDeprecated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plainResp, plain := do("GET", tt.path, tt.accept, "identity")
			resp, body := do("GET", tt.path, tt.accept, "gzip")
			if plainResp.StatusCode != 200 || resp.StatusCode != 200 {
				t.Fatalf("codes %d and %d", plainResp.StatusCode, resp.StatusCode)
			}
			if len(plain) <= responses.GzipThreshold {
				t.Fatalf("the document has %d bytes: not over the threshold, the test checks nothing", len(plain))
			}
			if plainResp.Header.Get("Content-Encoding") != "" || plainResp.Header.Get("Content-Length") != strconv.Itoa(len(plain)) {
				t.Errorf("plain: Content-Encoding %q, Content-Length %q", plainResp.Header.Get("Content-Encoding"), plainResp.Header.Get("Content-Length"))
			}
			vary := strings.Join(resp.Header.Values("Vary"), ",")
			if resp.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(vary, "Accept-Encoding") || !strings.Contains(vary, "Accept") {
				t.Fatalf("Content-Encoding %q, Vary %q", resp.Header.Get("Content-Encoding"), vary)
			}
			if got := gunzip(t, body); !bytes.Equal(got, plain) {
				t.Errorf("gunzipped %d bytes differ from the %d plain ones", len(got), len(plain))
			}
			etag := resp.Header.Get("Etag")
			if etag == "" || etag != plainResp.Header.Get("Etag") || resp.Header.Get("Content-Type") != plainResp.Header.Get("Content-Type") {
				t.Errorf("Etag %q and Content-Type %q, plain %q and %q", etag, resp.Header.Get("Content-Type"), plainResp.Header.Get("Etag"), plainResp.Header.Get("Content-Type"))
			}
			notModified, rest := do("GET", tt.path, tt.accept, "gzip", "If-None-Match", etag)
			if notModified.StatusCode != http.StatusNotModified || len(rest) != 0 || notModified.Header.Get("Content-Encoding") != "" {
				t.Errorf("If-None-Match: %d, %d bytes, Content-Encoding %q; want an empty 304", notModified.StatusCode, len(rest), notModified.Header.Get("Content-Encoding"))
			}
			part, rest := do("GET", tt.path, tt.accept, "gzip", "Range", "bytes=0-99")
			if part.StatusCode != http.StatusPartialContent || !bytes.Equal(rest, plain[:100]) || part.Header.Get("Content-Encoding") != "" {
				t.Errorf("a range: %d, %q, Content-Encoding %q; want the plain first 100 bytes", part.StatusCode, rest, part.Header.Get("Content-Encoding"))
			}
			head, rest := do("HEAD", tt.path, tt.accept, "gzip")
			if head.StatusCode != 200 || len(rest) != 0 || head.Header.Get("Content-Encoding") != "gzip" {
				t.Errorf("HEAD: %d, %d bytes, Content-Encoding %q", head.StatusCode, len(rest), head.Header.Get("Content-Encoding"))
			}
			t.Logf("%s: %d bytes, %d compressed", tt.path, len(plain), len(body))
		})
	}
	// The index is small.
	if resp, _ := do("GET", "/openapi/v3", "application/json", "gzip"); resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("the v3 index compressed at %d bytes", len(index))
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

// fetch sends a request with the headers given as name-value pairs and
// reads the whole response. An Accept-Encoding set by hand keeps the
// transport from adding gzip and from unpacking it.
func fetch(t *testing.T, c *http.Client, method, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return fetchWithBody(t, c, method, url, nil, header...)
}

// fetchWithBody is fetch with a request body.
func fetchWithBody(t *testing.T, c *http.Client, method, url string, body io.Reader, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, got
}

// largeConfigMaps creates configmaps in default whose list is well over
// responses.GzipThreshold, and returns their total data.
func largeConfigMaps(t *testing.T, cs kubernetes.Interface) int {
	t.Helper()
	ctx := testContext(t)
	total := 0
	for i := range 3 {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "big-" + strconv.Itoa(i)},
			Data:       map[string]string{"data": strings.Repeat(strconv.Itoa(i)+" configuration line\n", 3000)},
		}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		total += len(cm.Data["data"])
	}
	if total <= responses.GzipThreshold {
		t.Fatalf("the configmaps hold %d bytes, not over %d", total, responses.GzipThreshold)
	}
	return total
}
