package oidc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/token/union"
	kubeoidc "k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
)

// readyTimeout bounds how long Authenticator waits for the issuers'
// discovery documents. kube's authenticator retries discovery every ten
// seconds, so this leaves room for three retries.
const readyTimeout = 30 * time.Second

// readyPoll is how often Authenticator checks whether every issuer is
// ready; kube's authenticator offers a health check, not a channel.
const readyPoll = 50 * time.Millisecond

// Authenticator builds the token authenticator for all issuers: the
// issuers are tried in file order, and a token is checked only by the one
// whose URL equals its iss claim. A token from no configured issuer is
// not authenticated (false, no error), so that other authenticators may
// try it; a token from a configured issuer that fails any check is an
// error. With no issuers, the authenticator authenticates nobody.
//
// ctx is the authenticator's lifetime: it bounds its background work
// (discovery, key set fetches) and the authenticator must not be used
// once ctx is done. Pass the server's run context.
//
// Authenticator returns once every issuer's discovery document has been
// read, or an error naming the first issuer that is not ready when ctx is
// done or readyTimeout (30s) has passed, whichever comes first. On error
// the background work is stopped. kube's authenticator initializes
// lazily; waiting here means the server never starts with an issuer whose
// tokens it would refuse (kube refuses them with "authenticator not
// initialized", never allows them). The price is that an issuer served by
// the cluster itself cannot be used.
func (c *Config) Authenticator(ctx context.Context) (authenticator.Token, error) {
	if c == nil {
		return nil, errors.New("oidc: config is nil")
	}
	if len(c.jwt) == 0 {
		return union.New(), nil
	}
	compiler := c.compiler
	if compiler == nil {
		return nil, errors.New("oidc: config was not loaded with Load")
	}

	lifeCtx, cancel := context.WithCancel(ctx)
	ready := false
	defer func() {
		if !ready {
			cancel()
		}
	}()

	issuers := make([]issuer, 0, len(c.jwt))
	for i, j := range c.jwt {
		opts := kubeoidc.Options{
			JWTAuthenticator: j,
			Compiler:         compiler,
			// Every algorithm kube allows is asymmetric (RS, ES, PS);
			// "none" and HMAC never are.
			SupportedSigningAlgs: kubeoidc.AllValidSigningAlgorithms(),
			DisallowedIssuers:    c.serviceAccountIssuers,
		}
		if ca := j.Issuer.CertificateAuthority; ca != "" {
			opts.CAContentProvider = caBundle(ca)
		}
		a, err := kubeoidc.New(lifeCtx, opts)
		if err != nil {
			return nil, fmt.Errorf("oidc: jwt[%d] issuer %q: %w", i, j.Issuer.URL, err)
		}
		issuers = append(issuers, issuer{url: j.Issuer.URL, token: a})
	}

	if err := waitReady(lifeCtx, issuers); err != nil {
		return nil, err
	}

	tokens := make([]authenticator.Token, 0, len(issuers))
	for _, is := range issuers {
		tokens = append(tokens, &refuseReserved{issuer: is.url, next: is.token})
	}
	ready = true
	// Issuer URLs are unique, so at most one authenticator claims a
	// token; its error is the answer, there is no one else to ask.
	return union.NewFailOnError(tokens...), nil
}

// issuer is one jwt entry's authenticator.
type issuer struct {
	url   string
	token kubeoidc.AuthenticatorTokenWithHealthCheck
}

// waitReady returns when every issuer's authenticator is healthy (its
// discovery document read and its key set set up), or an error naming
// the first one that is not, with its last discovery error, once ctx is
// done or readyTimeout has passed.
func waitReady(ctx context.Context, issuers []issuer) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		var notReady *issuer
		var cause error
		for i := range issuers {
			if err := issuers[i].token.HealthCheck(); err != nil {
				notReady, cause = &issuers[i], err
				break
			}
		}
		if notReady == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("oidc: issuer %q not ready: %w (%w)", notReady.url, ctx.Err(), cause)
		case <-tick.C:
		}
	}
}

// caBundle is the PEM CA bundle of an issuer, from its
// certificateAuthority field.
type caBundle string

func (b caBundle) CurrentCABundleContent() []byte { return []byte(b) }

var _ kubeoidc.CAContentProvider = caBundle("")
