package serviceaccount

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	sauser "k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// Issuer signs service account tokens with an ECDSA P-256 key (ES256). It is
// immutable after LoadIssuer and safe for concurrent use.
type Issuer struct {
	issuer string
	key    *ecdsa.PrivateKey
	kid    string
}

// LoadIssuer returns an Issuer that signs with the PKCS#8 "PRIVATE KEY" PEM
// keyPEM (DIR/pki/sa.key) and names issuer in the "iss" claim. The key must
// be ECDSA on P-256 and issuer must not be empty.
func LoadIssuer(keyPEM []byte, issuer string) (*Issuer, error) {
	var errs []error
	if issuer == "" {
		errs = append(errs, errors.New("issuer is empty"))
	}
	key, err := parsePrivateKey(keyPEM)
	if err != nil {
		errs = append(errs, fmt.Errorf("signing key: %w", err))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("load service account token issuer: %w", errors.Join(errs...))
	}
	kid, err := keyID(&key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("load service account token issuer: %w", err)
	}
	return &Issuer{issuer: issuer, key: key, kid: kid}, nil
}

// KeyID is the key id ("kid") of the signing key.
func (i *Issuer) KeyID() string { return i.kid }

// Issue signs a token for c at time now. It sets "iss" to the issuer, "iat"
// and "nbf" to now, "exp" to c.Expiry, "jti" to c.ID (a new UUID when c.ID
// is empty) and "sub" to system:serviceaccount:<namespace>:<name>; the
// header names the signing key in "kid". c.IssuedAt and c.NotBefore are
// ignored.
//
// The claims must be complete: a valid namespace and name, a UID, at least
// one audience, an expiry after now and, when c.Bound is set, a known kind
// with a name and a UID. Issue does not cap the lifetime; the TokenRequest
// handler does.
func (i *Issuer) Issue(c Claims, now time.Time) (string, error) {
	if err := checkIssue(c, now); err != nil {
		return "", fmt.Errorf("issue service account token: %w", err)
	}
	id := c.ID
	if id == "" {
		id = uuid.NewString()
	}
	kc := &kubernetesClaim{
		Namespace:      c.Namespace,
		ServiceAccount: &objectRef{Name: c.Name, UID: string(c.UID)},
	}
	if b := c.Bound; b != nil {
		ref := &objectRef{Name: b.Name, UID: string(b.UID)}
		switch b.Kind {
		case KindPod:
			kc.Pod = ref
		case KindSecret:
			kc.Secret = ref
		case KindNode:
			kc.Node = ref
		}
	}
	claims := tokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    i.issuer,
			Subject:   sauser.MakeUsername(c.Namespace, c.Name),
			Audience:  jwt.ClaimStrings(c.Audiences),
			ExpiresAt: jwt.NewNumericDate(c.Expiry),
			NotBefore: jwt.NewNumericDate(now),
			IssuedAt:  jwt.NewNumericDate(now),
			ID:        id,
		},
		Kubernetes: kc,
	}
	t := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	// kube's header is {"alg":...,"kid":...}; keep ours the same shape.
	delete(t.Header, "typ")
	t.Header["kid"] = i.kid
	s, err := t.SignedString(i.key)
	if err != nil {
		return "", fmt.Errorf("issue service account token: sign: %w", err)
	}
	return s, nil
}

// checkIssue refuses claims that Verify would refuse, so that a token is
// never handed out that cannot be used.
func checkIssue(c Claims, now time.Time) error {
	var errs []error
	if _, _, err := sauser.SplitUsername(sauser.MakeUsername(c.Namespace, c.Name)); err != nil {
		errs = append(errs, fmt.Errorf("service account %q/%q: not a valid namespace and name", c.Namespace, c.Name))
	}
	if c.UID == "" {
		errs = append(errs, errors.New("service account UID is empty"))
	}
	if len(c.Audiences) == 0 {
		errs = append(errs, errors.New("no audiences"))
	}
	for _, a := range c.Audiences {
		if a == "" {
			errs = append(errs, errors.New("empty audience"))
			break
		}
	}
	if exp, iat := c.Expiry.Truncate(time.Second), now.Truncate(time.Second); !exp.After(iat) {
		errs = append(errs, fmt.Errorf("expiry %s is not after issue time %s", exp.UTC().Format(time.RFC3339), iat.UTC().Format(time.RFC3339)))
	}
	if b := c.Bound; b != nil {
		switch b.Kind {
		case KindPod, KindSecret, KindNode:
		default:
			errs = append(errs, fmt.Errorf("bound object kind %q, want %s, %s or %s", b.Kind, KindPod, KindSecret, KindNode))
		}
		if b.Name == "" || b.UID == "" {
			errs = append(errs, fmt.Errorf("bound %s needs a name and a UID", b.Kind))
		}
	}
	return errors.Join(errs...)
}
