package authn

import (
	"crypto/sha256"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// cachedCerts remembers, by the SHA-256 of the presented chain, the users
// of client certificates that verified, until the first certificate of the
// chain expires, so that a connection's later requests skip the chain's
// signature checks. Only successes are remembered: a certificate that
// failed is checked again each time. It holds at most max chains.
type cachedCerts struct {
	inner authenticator.Request
	max   int
	now   func() time.Time

	mu      sync.Mutex // guards entries
	entries map[[32]byte]certEntry
}

type certEntry struct {
	resp    *authenticator.Response
	expires time.Time
}

var _ authenticator.Request = (*cachedCerts)(nil)

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
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.resp, true, nil
	}
	resp, ok, err := c.inner.AuthenticateRequest(r)
	if err != nil || !ok {
		return resp, ok, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = certEntry{resp: resp, expires: expires}
	return resp, true, nil
}
