package authn

import (
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"

	"github.com/trustplane/trustplane/apiserver/authn/serviceaccount"
)

// Config lists the accepted credentials.
type Config struct {
	// ClientCA verifies client certificates; required.
	ClientCA *x509.CertPool
	// ServiceAccounts verifies ServiceAccount tokens; required, with
	// Objects for the live lookups.
	ServiceAccounts *serviceaccount.Verifier
	// Audiences a token must be for; required.
	Audiences []string
	Objects   ObjectGetter
	// Secrets reads bootstrap token Secrets live; required.
	Secrets SecretGetter
	// TokenCacheSize bounds the verified tokens remembered.
	TokenCacheSize int
	// OIDC authenticates ID tokens of the configured issuers; optional.
	OIDC authenticator.Token
}

// Authenticators are the request authenticator and, for TokenReview, the
// bearer token authenticator within it.
type Authenticators struct {
	Request authenticator.Request
	Token   authenticator.Token
}

// New returns the authenticators for c.
func New(c Config) (*Authenticators, error) {
	var errs []error
	if c.ClientCA == nil {
		errs = append(errs, errors.New("client CA is not set"))
	}
	if c.ServiceAccounts == nil {
		errs = append(errs, errNoVerifier)
	}
	if len(c.Audiences) == 0 {
		errs = append(errs, errors.New("API audiences are not set"))
	}
	if c.Objects == nil {
		errs = append(errs, errors.New("object getter for token lookups is not set"))
	}
	if c.Secrets == nil {
		errs = append(errs, errors.New("secret getter for bootstrap tokens is not set"))
	}
	if c.TokenCacheSize <= 0 {
		c.TokenCacheSize = 10000
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	certs, err := newCachedCerts(x509request.New(x509.VerifyOptions{
		Roots:     c.ClientCA,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, x509request.CommonNameUserConversion), c.TokenCacheSize, time.Now)
	if err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	cache, err := newTokenCache(c.TokenCacheSize)
	if err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	// Each refuses nothing it does not recognise: a JWT is not of the
	// bootstrap form, nor a bootstrap token a JWT.
	var tokens authenticator.Token = tokenunion.New(
		&serviceAccountTokens{verifier: c.ServiceAccounts, audiences: c.Audiences, objects: c.Objects, cache: cache, now: time.Now},
		&bootstrapTokens{secrets: c.Secrets, now: time.Now},
	)
	if c.OIDC != nil {
		// A JWT the service account authenticator refuses goes on to
		// the OIDC issuers.
		tokens = tokenunion.New(tokens, authenticator.WrapAudienceAgnosticToken(c.Audiences, c.OIDC))
	}
	return &Authenticators{
		// A present bearer token that no authenticator accepts is an
		// error, never anonymous.
		Request: group.NewAuthenticatedGroupAdder(union.New(certs, bearertoken.New(tokens))),
		Token:   tokens,
	}, nil
}
