package authn

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	k8sserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/trustplane/trustplane/apiserver/authn/serviceaccount"
)

// ObjectGetter reads, live, the objects a ServiceAccount token stands
// for. A missing object is (nil, nil).
type ObjectGetter interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	// Bound returns the uid of the Pod, Secret or Node a token is bound
	// to, "" if it does not exist.
	Bound(ctx context.Context, kind, namespace, name string) (types.UID, error)
}

// Extra keys kube-apiserver puts on ServiceAccount users, so the audit log
// shows what a token was bound to and which token it was.
const (
	extraPodName      = "authentication.kubernetes.io/pod-name"
	extraPodUID       = "authentication.kubernetes.io/pod-uid"
	extraNodeName     = "authentication.kubernetes.io/node-name"
	extraNodeUID      = "authentication.kubernetes.io/node-uid"
	extraCredentialID = "authentication.kubernetes.io/credential-id"
)

// serviceAccountTokens authenticates ServiceAccount JWTs: the signature
// and claims (remembered for tokens seen before), then, on every request,
// that the ServiceAccount and the object the token is bound to still exist
// with the uids in the token.
type serviceAccountTokens struct {
	verifier  *serviceaccount.Verifier
	audiences []string
	objects   ObjectGetter
	cache     *tokenCache
	now       func() time.Time
}

var _ authenticator.Token = (*serviceAccountTokens)(nil)

func (a *serviceAccountTokens) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if !serviceaccount.LooksLikeJWT(token) {
		return nil, false, nil
	}
	now := a.now()
	// A TokenReview may ask for other audiences than the API server's.
	audiences := a.audiences
	if auds, ok := authenticator.AudiencesFrom(ctx); ok && len(auds) > 0 {
		audiences = auds
	}
	key := sha256.Sum256([]byte(token))
	v, ok := a.cache.get(key, now)
	if ok && !sharesAudience(v.claims.Audiences, audiences) {
		ok = false
	}
	if !ok {
		c, err := a.verifier.Verify(token, audiences, now)
		if err != nil {
			return nil, false, fmt.Errorf("service account token: %w", err)
		}
		v = newVerifiedToken(c)
		a.cache.put(key, v)
	}
	claims := v.claims
	sa, err := a.objects.ServiceAccount(ctx, claims.Namespace, claims.Name)
	if err != nil {
		return nil, false, fmt.Errorf("service account token: look up %s/%s: %w", claims.Namespace, claims.Name, err)
	}
	if sa == nil || sa.UID != claims.UID {
		return nil, false, fmt.Errorf("service account token: service account %s/%s no longer exists as the token names it", claims.Namespace, claims.Name)
	}
	if b := claims.Bound; b != nil {
		ns := claims.Namespace
		if b.Kind == serviceaccount.KindNode {
			ns = ""
		}
		uid, err := a.objects.Bound(ctx, b.Kind, ns, b.Name)
		if err != nil {
			return nil, false, fmt.Errorf("service account token: look up bound %s %s: %w", b.Kind, b.Name, err)
		}
		if uid == "" || (b.UID != "" && uid != b.UID) {
			return nil, false, fmt.Errorf("service account token: bound %s %s no longer exists as the token names it", b.Kind, b.Name)
		}
	}
	return v.response, true, nil
}

// verifiedToken is what a verified token says: its claims, and the
// response that authenticates it, built once. The response is shared by
// every request with the token, so nothing may change it.
type verifiedToken struct {
	claims   *serviceaccount.Claims
	response *authenticator.Response
}

func newVerifiedToken(claims *serviceaccount.Claims) *verifiedToken {
	u := &user.DefaultInfo{
		Name:   k8sserviceaccount.MakeUsername(claims.Namespace, claims.Name),
		UID:    string(claims.UID),
		Groups: k8sserviceaccount.MakeGroupNames(claims.Namespace),
		Extra:  map[string][]string{extraCredentialID: {"JTI=" + claims.ID}},
	}
	if b := claims.Bound; b != nil {
		switch b.Kind {
		case serviceaccount.KindPod:
			u.Extra[extraPodName] = []string{b.Name}
			u.Extra[extraPodUID] = []string{string(b.UID)}
		case serviceaccount.KindNode:
			u.Extra[extraNodeName] = []string{b.Name}
			u.Extra[extraNodeUID] = []string{string(b.UID)}
		}
	}
	return &verifiedToken{claims: claims, response: &authenticator.Response{User: u, Audiences: claims.Audiences}}
}

// tokenCache remembers verified tokens, by the SHA-256 of the token, until
// they expire, and at most max of them, dropping the least recently used;
// a dropped token is verified again on its next use.
type tokenCache struct {
	entries *lru.Cache[[32]byte, *verifiedToken]
}

func newTokenCache(max int) (*tokenCache, error) {
	entries, err := lru.New[[32]byte, *verifiedToken](max)
	if err != nil {
		return nil, fmt.Errorf("token cache of %d: %w", max, err)
	}
	return &tokenCache{entries: entries}, nil
}

func (c *tokenCache) get(key [32]byte, now time.Time) (*verifiedToken, bool) {
	v, ok := c.entries.Get(key)
	if !ok {
		return nil, false
	}
	if !now.Before(v.claims.Expiry) || now.Before(v.claims.NotBefore.Add(-time.Minute)) {
		c.entries.Remove(key)
		return nil, false
	}
	return v, true
}

func (c *tokenCache) put(key [32]byte, v *verifiedToken) {
	c.entries.Add(key, v)
}

var errNoVerifier = errors.New("service account tokens: verifier is not set")

func sharesAudience(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}
