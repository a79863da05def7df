package serviceaccount

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"k8s.io/apimachinery/pkg/types"
	sauser "k8s.io/apiserver/pkg/authentication/serviceaccount"
)

const (
	// maxTokenSize bounds the work an unauthenticated client can cause:
	// longer tokens are refused before anything is decoded. Real tokens are
	// well under 2 KiB.
	maxTokenSize = 64 << 10
	// maxLeeway is the clock skew tolerated on exp, nbf and iat.
	maxLeeway = 60 * time.Second
	// maxErrorText bounds an error message, since parts of it (a JSON
	// number that does not parse, say) can come from the token's payload.
	maxErrorText = 1024
)

// Reasons a token is refused before it is parsed. They are matched in tests
// with errors.Is; callers need not tell them apart.
var (
	errEmpty    = errors.New("token is empty")
	errTooLarge = errors.New("token is too large")
	errShape    = errors.New("token is not three base64url segments")
)

// Verifier checks service account tokens. It is immutable after
// LoadVerifier and safe for concurrent use.
type Verifier struct {
	issuer    string
	audiences []string // used when Verify is given none
	byKID     map[string]*ecdsa.PublicKey
	// anyKey is every key, tried in turn for a token without a kid.
	anyKey jwt.VerificationKeySet
}

// LoadVerifier returns a Verifier that accepts tokens from issuer signed by
// any of the public keys in publicKeysPEM (each a PKIX "PUBLIC KEY" PEM such
// as DIR/pki/sa.pub, possibly with several blocks). Several keys let a key
// rotate out: tokens signed with the old key keep verifying until it is
// removed. Every key must be ECDSA P-256. defaultAudiences, used when Verify
// is given no audiences, must not be empty: a verifier that accepted any
// audience would accept tokens minted for other services.
func LoadVerifier(publicKeysPEM [][]byte, issuer string, defaultAudiences []string) (*Verifier, error) {
	var errs []error
	if issuer == "" {
		errs = append(errs, errors.New("issuer is empty"))
	}
	if len(defaultAudiences) == 0 {
		errs = append(errs, errors.New("no default audiences"))
	}
	if slices.Contains(defaultAudiences, "") {
		errs = append(errs, errors.New("empty default audience"))
	}
	if len(publicKeysPEM) == 0 {
		errs = append(errs, errors.New("no public keys"))
	}
	v := &Verifier{
		issuer:    issuer,
		audiences: slices.Clone(defaultAudiences),
		byKID:     make(map[string]*ecdsa.PublicKey),
	}
	for n, p := range publicKeysPEM {
		keys, err := parsePublicKeys(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("public keys %d: %w", n, err))
			continue
		}
		for _, k := range keys {
			kid, err := keyID(k)
			if err != nil {
				errs = append(errs, fmt.Errorf("public keys %d: %w", n, err))
				continue
			}
			if _, dup := v.byKID[kid]; dup {
				continue // the same key listed twice; harmless
			}
			v.byKID[kid] = k
			v.anyKey.Keys = append(v.anyKey.Keys, k)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("load service account token verifier: %w", errors.Join(errs...))
	}
	return v, nil
}

// HasKey reports whether the verifier accepts the key with key id kid.
func (v *Verifier) HasKey(kid string) bool {
	_, ok := v.byKID[kid]
	return ok
}

// LooksLikeJWT reports whether token has the shape Verify accepts: at most
// 64 KiB of three non-empty base64url segments separated by dots. It reads
// the string once, allocates nothing and verifies nothing, so an
// authenticator can use it to tell a JWT from other bearer tokens.
func LooksLikeJWT(token string) bool {
	if len(token) == 0 || len(token) > maxTokenSize {
		return false
	}
	dots, segLen := 0, 0
	for i := 0; i < len(token); i++ {
		switch c := token[i]; {
		case c == '.':
			if segLen == 0 {
				return false
			}
			dots++
			segLen = 0
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
			segLen++
		default:
			return false
		}
	}
	return dots == 2 && segLen > 0
}

// Verify checks token and returns its claims. audiences are the audiences
// the caller accepts (the verifier's default audiences when empty); the
// token must name at least one of them. now is the time to check exp, nbf
// and iat against, with up to 60s of leeway for clock skew.
//
// The checks, in order:
//  1. shape: non-empty, at most 64 KiB, three base64url segments; nothing
//     is decoded before this passes;
//  2. header: alg is ES256 (never "none", HMAC or RSA), no "crit"; the kid,
//     when present, names one of the keys, else every key is tried;
//  3. signature, over the canonical (strict) base64url encoding;
//  4. exp and nbf present and current, iat present and not in the future;
//  5. iss equals the issuer exactly; aud intersects audiences;
//  6. the "kubernetes.io" claim names a namespace and a service account
//     with a name and a UID, and sub is system:serviceaccount:<ns>:<name>
//     for that same namespace and name; a bound object has a name and UID.
//
// Any failure is an error saying why, for the log; the client must get a
// bare 401. The error never contains the token.
func (v *Verifier) Verify(token string, audiences []string, now time.Time) (*Claims, error) {
	c, err := v.verify(token, audiences, now)
	if err != nil {
		return nil, &refusal{cause: err}
	}
	return c, nil
}

func (v *Verifier) verify(token string, audiences []string, now time.Time) (*Claims, error) {
	switch {
	case token == "":
		return nil, errEmpty
	case len(token) > maxTokenSize:
		return nil, fmt.Errorf("%w: %d bytes, limit %d", errTooLarge, len(token), maxTokenSize)
	case !LooksLikeJWT(token):
		return nil, errShape
	}
	if len(audiences) == 0 {
		audiences = v.audiences
	} else if slices.Contains(audiences, "") {
		// An empty audience would match a token with an empty "aud" entry.
		return nil, errors.New("caller asked for an empty audience")
	}

	var tc tokenClaims
	_, err := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}),
		jwt.WithStrictDecoding(),
		jwt.WithLeeway(maxLeeway),
		jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithExpirationRequired(),
		jwt.WithNotBeforeRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(v.issuer),
		jwt.WithAudience(audiences...),
	).ParseWithClaims(token, &tc, v.key)
	if err != nil {
		return nil, v.explain(err, &tc, audiences, now)
	}
	// From here on the claims are signed by one of our keys.
	if tc.IssuedAt == nil {
		return nil, errors.New("iat claim is required")
	}
	return claimsFrom(&tc)
}

// key picks the verification key for t: the one its kid names, or all of
// them when it has no kid (tokens from issuers that do not set one). It
// runs after the alg check and before the signature check.
func (v *Verifier) key(t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		// RFC 7515 4.1.11: extensions we do not understand must be refused.
		return nil, errors.New("crit header is not supported")
	}
	raw, ok := t.Header["kid"]
	if !ok {
		return v.anyKey, nil
	}
	kid, ok := raw.(string)
	if !ok || kid == "" {
		return nil, errors.New("kid header is not a non-empty string")
	}
	k, ok := v.byKID[kid]
	if !ok {
		return nil, fmt.Errorf("no key has kid %s", short(kid))
	}
	return k, nil
}

// explain adds to a jwt error the values that make it useful in a log.
// The values are only shown when the signature was good (the error is one
// of invalid claims), so they are ours, not an attacker's.
func (v *Verifier) explain(err error, tc *tokenClaims, audiences []string, now time.Time) error {
	if !errors.Is(err, jwt.ErrTokenInvalidClaims) {
		return err
	}
	var details []string
	if errors.Is(err, jwt.ErrTokenExpired) && tc.ExpiresAt != nil {
		details = append(details, fmt.Sprintf("expired at %s, %s before %s, beyond the %s leeway",
			stamp(tc.ExpiresAt.Time), now.Sub(tc.ExpiresAt.Time).Truncate(time.Second), stamp(now), maxLeeway))
	}
	if errors.Is(err, jwt.ErrTokenNotValidYet) && tc.NotBefore != nil {
		details = append(details, fmt.Sprintf("not valid before %s, %s after %s, beyond the %s leeway",
			stamp(tc.NotBefore.Time), tc.NotBefore.Sub(now).Truncate(time.Second), stamp(now), maxLeeway))
	}
	if errors.Is(err, jwt.ErrTokenUsedBeforeIssued) && tc.IssuedAt != nil {
		details = append(details, fmt.Sprintf("issued at %s, after %s", stamp(tc.IssuedAt.Time), stamp(now)))
	}
	if errors.Is(err, jwt.ErrTokenInvalidIssuer) {
		details = append(details, fmt.Sprintf("issuer %q, want %q", tc.Issuer, v.issuer))
	}
	if errors.Is(err, jwt.ErrTokenInvalidAudience) {
		details = append(details, fmt.Sprintf("audiences %q, want one of %q", []string(tc.Audience), audiences))
	}
	if len(details) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(details, "; "))
}

// claimsFrom checks the "kubernetes.io" claim against sub and converts.
func claimsFrom(tc *tokenClaims) (*Claims, error) {
	kc := tc.Kubernetes
	switch {
	case kc == nil:
		return nil, errors.New("kubernetes.io claim is missing")
	case kc.Namespace == "":
		return nil, errors.New("kubernetes.io claim has no namespace")
	case kc.ServiceAccount == nil || kc.ServiceAccount.Name == "":
		return nil, errors.New("kubernetes.io claim has no service account name")
	case kc.ServiceAccount.UID == "":
		return nil, errors.New("kubernetes.io claim has no service account uid")
	}
	ns, name, err := sauser.SplitUsername(tc.Subject)
	if err != nil {
		return nil, fmt.Errorf("sub %s is not %s<namespace>:<name>", short(tc.Subject), sauser.ServiceAccountUsernamePrefix)
	}
	if ns != kc.Namespace || name != kc.ServiceAccount.Name {
		return nil, fmt.Errorf("sub %s does not match kubernetes.io service account %s/%s",
			short(tc.Subject), short(kc.Namespace), short(kc.ServiceAccount.Name))
	}
	bound, err := boundObject(kc)
	if err != nil {
		return nil, err
	}
	return &Claims{
		Namespace: kc.Namespace,
		Name:      kc.ServiceAccount.Name,
		UID:       types.UID(kc.ServiceAccount.UID),
		Bound:     bound,
		Audiences: slices.Clone([]string(tc.Audience)),
		ID:        tc.ID,
		IssuedAt:  tc.IssuedAt.UTC(),
		NotBefore: tc.NotBefore.UTC(),
		Expiry:    tc.ExpiresAt.UTC(),
	}, nil
}

// boundObject reads the object the token is bound to. A Pod-bound token may
// also name the Pod's Node (kube 1.30+ adds it for node-aware authorizers);
// the binding is then to the Pod. Any other combination is refused rather
// than guessed at.
func boundObject(kc *kubernetesClaim) (*BoundObject, error) {
	var kind string
	var ref *objectRef
	switch {
	case kc.Pod != nil && kc.Secret != nil:
		return nil, errors.New("kubernetes.io claim binds both a pod and a secret")
	case kc.Secret != nil && kc.Node != nil:
		return nil, errors.New("kubernetes.io claim binds both a secret and a node")
	case kc.Pod != nil:
		kind, ref = KindPod, kc.Pod
		if kc.Node != nil && (kc.Node.Name == "" || kc.Node.UID == "") {
			return nil, errors.New("kubernetes.io claim has a node without a name or uid")
		}
	case kc.Secret != nil:
		kind, ref = KindSecret, kc.Secret
	case kc.Node != nil:
		kind, ref = KindNode, kc.Node
	default:
		return nil, nil
	}
	if ref.Name == "" || ref.UID == "" {
		return nil, fmt.Errorf("kubernetes.io claim has a %s without a name or uid", strings.ToLower(kind))
	}
	return &BoundObject{Kind: kind, Name: ref.Name, UID: types.UID(ref.UID)}, nil
}

// refusal is the error Verify returns. Its text is bounded in length; the
// full cause stays reachable through Unwrap.
type refusal struct{ cause error }

func (r *refusal) Error() string {
	msg := r.cause.Error()
	if len(msg) > maxErrorText {
		msg = msg[:maxErrorText] + "...(truncated)"
	}
	return "invalid service account token: " + msg
}

func (r *refusal) Unwrap() error { return r.cause }

// short quotes a value taken from a token for an error message, cut to a
// length that is enough to recognise it.
func short(s string) string {
	const limit = 128
	if len(s) > limit {
		return fmt.Sprintf("%q...(%d bytes)", s[:limit], len(s))
	}
	return fmt.Sprintf("%q", s)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
