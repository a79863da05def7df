package authn

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// cachedCerts remembers, by the SHA-256 of the presented chain, the users
// of client certificates that verified, until the first certificate of the
// chain expires, so that a connection's later requests skip the chain's
// signature checks. Only successes are remembered: a certificate that
// failed is checked again each time. It holds at most max chains,
// dropping the least recently used.
type cachedCerts struct {
	inner   authenticator.Request
	now     func() time.Time
	entries *lru.Cache[[32]byte, certEntry]
}

type certEntry struct {
	resp    *authenticator.Response
	expires time.Time
}

var _ authenticator.Request = (*cachedCerts)(nil)

func newCachedCerts(inner authenticator.Request, max int, now func() time.Time) (*cachedCerts, error) {
	entries, err := lru.New[[32]byte, certEntry](max)
	if err != nil {
		return nil, fmt.Errorf("client certificate cache of %d: %w", max, err)
	}
	return &cachedCerts{inner: inner, now: now, entries: entries}, nil
}

func (c *cachedCerts) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return c.inner.AuthenticateRequest(r)
	}
	h := sha256.New()
	expires := r.TLS.PeerCertificates[0].NotAfter
	for _, cert := range r.TLS.PeerCertificates {
		h.Write(cert.Raw)
		if cert.NotAfter.Before(expires) {
			expires = cert.NotAfter
		}
	}
	var key [32]byte
	h.Sum(key[:0])
	if e, ok := c.entries.Get(key); ok {
		if c.now().Before(e.expires) {
			return e.resp, true, nil
		}
		// The same chain always expires at the same time: it is of no
		// more use.
		c.entries.Remove(key)
	}
	resp, ok, err := c.inner.AuthenticateRequest(r)
	if err != nil || !ok {
		return resp, ok, err
	}
	c.entries.Add(key, certEntry{resp: resp, expires: expires})
	return resp, true, nil
}
