package authn

import (
	"crypto/x509"
	"errors"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
)

// Config lists the accepted credentials.
type Config struct {
	// ClientCA verifies client certificates; required.
	ClientCA *x509.CertPool
}

// New returns the authenticator for c.
func New(c Config) (authenticator.Request, error) {
	if c.ClientCA == nil {
		return nil, errors.New("authentication: client CA is not set")
	}
	certs := x509request.New(x509.VerifyOptions{
		Roots:     c.ClientCA,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, x509request.CommonNameUserConversion)
	return group.NewAuthenticatedGroupAdder(certs), nil
}
