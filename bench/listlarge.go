package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Media types of the large-list phase's clients.
const (
	FormatProtobuf = "protobuf"
	FormatJSON     = "json"
)

// listVariant is one way the large-list phase lists: a format, a
// resourceVersion and whether the client accepts gzip.
type listVariant struct {
	format string
	rv     string
	gzip   bool
}

// listVariants are every combination, in the order the table shows them.
var listVariants = func() []listVariant {
	var vs []listVariant
	for _, format := range []string{FormatProtobuf, FormatJSON} {
		for _, rv := range []string{"", "0"} {
			for _, gzip := range []bool{true, false} {
				vs = append(vs, listVariant{format, rv, gzip})
			}
		}
	}
	return vs
}()

// listClient is a client of one variant, and what its connections and
// responses carried.
type listClient struct {
	listVariant
	client kubernetes.Interface
	// wire counts the bytes read from the client's connections: the
	// responses as sent, TLS and HTTP/2 framing included.
	wire atomic.Int64
	// body counts the bytes of the response bodies as decoded, after
	// any gzip.
	body atomic.Int64
	// gzipped counts the responses the server compressed.
	gzipped atomic.Int64
	samples []time.Duration
}

// newListClient makes a client of v from the cluster's client config:
// a transport of its own (its own connection), its format, and gzip
// accepted (client-go's default) or not.
func newListClient(base *rest.Config, v listVariant) (*listClient, error) {
	lc := &listClient{listVariant: v}
	cfg := rest.CopyConfig(base)
	cfg.QPS = -1
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	if v.format == FormatProtobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	}
	cfg.DisableCompression = !v.gzip
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	// A Dial of its own also keeps client-go from sharing a cached
	// transport between the variants.
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: conn, n: &lc.wire}, nil
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, lc} })
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	lc.client = client
	return lc, nil
}

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// countingTransport records, for each response, whether the server
// compressed it (net/http then decompresses it and says so) and the bytes
// of its body.
type countingTransport struct {
	rt http.RoundTripper
	lc *listClient
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.Uncompressed {
		t.lc.gzipped.Add(1)
	}
	resp.Body = &countingBody{ReadCloser: resp.Body, n: &t.lc.body}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// listLarge creates ListObjects ConfigMaps of ObjectBytes each, then lists
// them ListRequests times in each variant, one list at a time, the
// variants taking turns so that the machine's other load falls on each
// alike. It returns one Result per variant.
func (r *run) listLarge(ctx context.Context) ([]Result, error) {
	cms := r.Client.CoreV1().ConfigMaps(r.Namespace)
	_, elapsed, err := runOps(ctx, r.ListObjects, r.Concurrency, r.Timeout, func(ctx context.Context, i int) error {
		// A payload of its own: one shared by every ConfigMap would
		// let gzip compress a list to a twentieth of its size, which
		// no real list allows.
		payload := make([]byte, r.ObjectBytes)
		rand.Read(payload)
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: listName(i)},
			BinaryData: map[string][]byte{"payload": payload},
		}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create config map %s/%s: %w", r.Namespace, cm.Name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.Logger.Info("bench list: config maps created", "count", r.ListObjects, "seconds", elapsed.Seconds())

	clients := make([]*listClient, len(listVariants))
	for i, v := range listVariants {
		if clients[i], err = newListClient(r.REST, v); err != nil {
			return nil, err
		}
	}
	// One list each first, not measured: each client's connection and
	// TLS handshake, and the first decoding of the kind, are not what is
	// measured.
	for _, lc := range clients {
		if _, err := r.listOnce(ctx, lc); err != nil {
			return nil, err
		}
		lc.wire.Store(0)
		lc.body.Store(0)
		lc.gzipped.Store(0)
	}
	for range r.ListRequests {
		for _, lc := range clients {
			d, err := r.listOnce(ctx, lc)
			if err != nil {
				return nil, err
			}
			lc.samples = append(lc.samples, d)
		}
	}
	results := make([]Result, len(clients))
	for i, lc := range clients {
		var total time.Duration
		for _, d := range lc.samples {
			total += d
		}
		res := summarize(PhaseListLarge, len(lc.samples), total, lc.samples)
		res.Items = r.ListObjects
		res.Format = lc.format
		res.ResourceVersion = new(lc.rv)
		res.AcceptGzip = lc.gzip
		n := int64(len(lc.samples))
		res.Gzipped = int(lc.gzipped.Load())
		res.WireBytes = lc.wire.Load() / n
		res.BodyBytes = lc.body.Load() / n
		results[i] = res
	}
	return results, nil
}

// listOnce lists the namespace's ConfigMaps with lc and returns how long it
// took. A list without every ConfigMap the phase created is an error.
func (r *run) listOnce(ctx context.Context, lc *listClient) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	start := time.Now()
	l, err := lc.client.CoreV1().ConfigMaps(r.Namespace).List(ctx, metav1.ListOptions{ResourceVersion: lc.rv})
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("list config maps in %s (%s, resourceVersion %q): %w", r.Namespace, lc.format, lc.rv, err)
	}
	if len(l.Items) < r.ListObjects {
		return 0, fmt.Errorf("list config maps in %s (%s, resourceVersion %q): got %d, want at least the %d created", r.Namespace, lc.format, lc.rv, len(l.Items), r.ListObjects)
	}
	return d, nil
}
