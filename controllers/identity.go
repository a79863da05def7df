package controllers

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/oauth2"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/trustplane/trustplane/rbac"
)

// tokenLifetime is how long a controller's token lives; it is renewed
// once four fifths of that have passed.
const tokenLifetime = time.Hour

// tokenSource obtains a ServiceAccount's token through TokenRequest, as
// the controller manager's own identity.
type tokenSource struct {
	manager        kubernetes.Interface
	serviceAccount string
}

func (ts *tokenSource) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	secs := int64(tokenLifetime / time.Second)
	tr, err := ts.manager.CoreV1().ServiceAccounts(rbac.ControllersNamespace).CreateToken(ctx, ts.serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		// The error names the account, never a token.
		return nil, fmt.Errorf("token for %s/%s: %w", rbac.ControllersNamespace, ts.serviceAccount, err)
	}
	issued := time.Now()
	lifetime := tr.Status.ExpirationTimestamp.Sub(issued)
	return &oauth2.Token{AccessToken: tr.Status.Token, TokenType: "Bearer", Expiry: issued.Add(lifetime * 4 / 5)}, nil
}

// configAs is base (the controller manager's configuration) made to
// authenticate with the token of serviceAccount instead of base's
// credential: the server's CA is kept, the client certificate dropped.
func configAs(base *rest.Config, manager kubernetes.Interface, serviceAccount string) *rest.Config {
	cfg := rest.AnonymousClientConfig(base)
	ts := transport.NewCachedTokenSource(&tokenSource{manager: manager, serviceAccount: serviceAccount})
	cfg.WrapTransport = transport.TokenSourceWrapTransport(ts)
	cfg.UserAgent = "trustplane-controller-manager/" + serviceAccount
	cfg.QPS, cfg.Burst = base.QPS, base.Burst
	return cfg
}
