package authn

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// SecretGetter reads, live, the Secret a bootstrap token names. A missing
// Secret is (nil, nil).
type SecretGetter interface {
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// bootstrapTokenRe is kube's token form, <id>.<secret>.
var bootstrapTokenRe = regexp.MustCompile(bootstrapapi.BootstrapTokenPattern)

// errBootstrapToken is every refusal of a token of the bootstrap form: the
// cause is the same to the client whether the id is unknown, the secret
// wrong or the token expired, so that none of them can be probed.
var errBootstrapToken = errors.New("bootstrap token: invalid or expired")

// bootstrapTokens authenticates kube's bootstrap tokens, <id>.<secret>,
// against the Secret kube-system/bootstrap-token-<id> of type
// bootstrap.kubernetes.io/token, read on every request, so that a token
// deleted or expired is refused at once. A token is never cached and never
// appears in an error: only its id, which is also its user name, may.
type bootstrapTokens struct {
	secrets SecretGetter
	now     func() time.Time
}

var _ authenticator.Token = (*bootstrapTokens)(nil)

func (a *bootstrapTokens) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	m := bootstrapTokenRe.FindStringSubmatch(token)
	if m == nil {
		return nil, false, nil
	}
	id, secret := m[1], m[2]
	s, err := a.secrets.Secret(ctx, metav1.NamespaceSystem, bootstraputil.BootstrapTokenSecretName(id))
	if err != nil {
		return nil, false, fmt.Errorf("bootstrap token %s: look up its secret: %w", id, err)
	}
	u, err := bootstrapUser(s, id, secret, a.now())
	if err != nil {
		return nil, false, err
	}
	return &authenticator.Response{User: u}, true, nil
}

// bootstrapUser checks the token id.secret against its Secret s, as kube's
// bootstrap authenticator does, and returns the user it is.
func bootstrapUser(s *corev1.Secret, id, secret string, now time.Time) (user.Info, error) {
	if s == nil || s.DeletionTimestamp != nil || s.Type != bootstrapapi.SecretTypeBootstrapToken {
		return nil, errBootstrapToken
	}
	// The secret part is compared in constant time, so that its bytes
	// cannot be found one by one from the time a refusal takes.
	want := s.Data[bootstrapapi.BootstrapTokenSecretKey]
	if subtle.ConstantTimeCompare(want, []byte(secret)) != 1 {
		return nil, errBootstrapToken
	}
	if string(s.Data[bootstrapapi.BootstrapTokenIDKey]) != id {
		return nil, errBootstrapToken
	}
	if string(s.Data[bootstrapapi.BootstrapTokenUsageAuthentication]) != "true" {
		return nil, errBootstrapToken
	}
	// A token without an expiration never expires, as on kube; one whose
	// expiration does not parse has expired.
	if exp, ok := s.Data[bootstrapapi.BootstrapTokenExpirationKey]; ok {
		t, err := time.Parse(time.RFC3339, string(exp))
		if err != nil || !now.Before(t) {
			return nil, errBootstrapToken
		}
	}
	groups := []string{bootstrapapi.BootstrapDefaultGroup}
	if extra := string(s.Data[bootstrapapi.BootstrapTokenExtraGroupsKey]); extra != "" {
		for _, g := range strings.Split(extra, ",") {
			// Only groups under system:bootstrappers: a token Secret
			// cannot make its holder a member of any other group.
			if err := bootstraputil.ValidateBootstrapGroupName(g); err != nil {
				return nil, fmt.Errorf("bootstrap token %s: its secret names a group that is not a bootstrap group", id)
			}
			if !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
	}
	return &user.DefaultInfo{Name: bootstrapapi.BootstrapUserPrefix + id, Groups: groups}, nil
}
