package apiserver

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReadyzWarnsOfKeyWear: past the threshold of writes under one
// AES-GCM key, /readyz?verbose warns and names the fix, while the server
// stays ready; it names the key, never its material.
func TestReadyzWarnsOfKeyWear(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Encryption.Wear().SetThreshold(3) })
	ts.waitReady(t)
	cs := ts.clientset(t, admin)
	readyz := func() string {
		t.Helper()
		resp, err := ts.httpClient(t, admin).Get(ts.url + "/readyz?verbose")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("/readyz?verbose: %d, want 200 (a worn key is a warning)\n%s", resp.StatusCode, body)
		}
		return string(body)
	}
	if body := readyz(); !strings.Contains(body, "[+]etcd ok") || !strings.Contains(body, "[+]kms-providers ok") || strings.Contains(body, "warning") {
		t.Errorf("/readyz?verbose before any write:\n%s", body)
	}
	for i := range 4 {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i)}, StringData: map[string]string{"v": "wear-secret-value"}}
		if _, err := cs.CoreV1().Secrets("default").Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	body := readyz()
	if !strings.Contains(body, "warning: aesgcm key key1 has encrypted 4 values, past the threshold: rotate it") {
		t.Errorf("/readyz?verbose after 4 writes over a threshold of 3:\n%s", body)
	}
	if strings.Contains(body, "wear-secret-value") {
		t.Errorf("/readyz?verbose holds a value:\n%s", body)
	}
	// The same on /metrics, by the key's name.
	resp, err := ts.httpClient(t, admin).Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`trustplane_encryption_key_writes{key="key1",provider="aesgcm"} 4`,
		`trustplane_encryption_key_worn{key="key1",provider="aesgcm"} 1`,
	} {
		if !strings.Contains(string(metrics), want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, metrics)
		}
	}
	if strings.Contains(string(metrics), "wear-secret-value") {
		t.Error("/metrics holds a value")
	}
	// Without ?verbose, the probe answers as before.
	resp, err = ts.httpClient(t, admin).Get(ts.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(plain) != "ok" {
		t.Errorf("/readyz: %d %q, want 200 ok", resp.StatusCode, plain)
	}
}
