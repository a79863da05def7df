package oidc

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// refuseReserved refuses an identity from an OIDC issuer whose username or
// one of whose groups starts with "system:". Such a name can come from a
// claim mapped without a prefix or from a CEL expression, whatever Load
// could check. The whole token is refused: dropping the offending group
// and allowing the rest would let the issuer decide which of our groups a
// user is not in, and a user named system:* has no safe rename.
type refuseReserved struct {
	issuer string
	next   authenticator.Token
}

var _ authenticator.Token = (*refuseReserved)(nil)

func (r *refuseReserved) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	resp, ok, err := r.next.AuthenticateToken(ctx, token)
	if err != nil || !ok {
		return nil, false, err
	}
	if resp == nil || resp.User == nil {
		return nil, false, fmt.Errorf("oidc: issuer %q: authenticated a token without a user", r.issuer)
	}
	u := resp.User
	if strings.HasPrefix(u.GetName(), reservedPrefix) {
		return nil, false, fmt.Errorf("oidc: issuer %q: username %q is reserved: OIDC identities can never be %s*", r.issuer, u.GetName(), reservedPrefix)
	}
	for _, g := range u.GetGroups() {
		if strings.HasPrefix(g, reservedPrefix) {
			return nil, false, fmt.Errorf("oidc: issuer %q: user %q: group %q is reserved: OIDC identities can never be in %s* groups", r.issuer, u.GetName(), g, reservedPrefix)
		}
	}
	return resp, true, nil
}
