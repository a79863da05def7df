package authn

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// secretMap is a SecretGetter over fixed Secrets, by namespace/name;
// test-only.
type secretMap map[string]*corev1.Secret

var _ SecretGetter = secretMap(nil)

func (m secretMap) Secret(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	return m[namespace+"/"+name], nil
}

func TestBootstrapTokensAuthenticate(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	secret := func(change func(s *corev1.Secret)) secretMap {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-abcdef"},
			Type:       "bootstrap.kubernetes.io/token",
			Data: map[string][]byte{
				"token-id": []byte("abcdef"), "token-secret": []byte("0123456789abcdef"),
				"usage-bootstrap-authentication": []byte("true"), "expiration": []byte(now.Add(time.Second).Format(time.RFC3339)),
			},
		}
		if change != nil {
			change(s)
		}
		return secretMap{"kube-system/bootstrap-token-abcdef": s}
	}
	const token = "abcdef.0123456789abcdef"
	for _, tt := range []struct {
		name    string
		secrets secretMap
		token   string
		want    string // user and groups; "" refused
		handled bool   // an error, not (nil, false, nil)
	}{
		{"a token", secret(nil), token, "system:bootstrap:abcdef system:bootstrappers", true},
		{"extra groups, each once", secret(func(s *corev1.Secret) {
			s.Data["auth-extra-groups"] = []byte("system:bootstrappers:a,system:bootstrappers:a")
		}), token, "system:bootstrap:abcdef system:bootstrappers,system:bootstrappers:a", true},
		{"no expiration", secret(func(s *corev1.Secret) { delete(s.Data, "expiration") }), token, "system:bootstrap:abcdef system:bootstrappers", true},
		{"expired this second", secret(func(s *corev1.Secret) { s.Data["expiration"] = []byte(now.Format(time.RFC3339)) }), token, "", true},
		{"being deleted", secret(func(s *corev1.Secret) { s.DeletionTimestamp = &metav1.Time{Time: now} }), token, "", true},
		{"another type", secret(func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }), token, "", true},
		{"a group elsewhere", secret(func(s *corev1.Secret) { s.Data["auth-extra-groups"] = []byte("system:nodes") }), token, "", true},
		{"a shorter secret", secret(func(s *corev1.Secret) { s.Data["token-secret"] = []byte("0123456789abcde") }), token, "", true},
		{"no secret", secretMap{}, token, "", true},
		{"not a bootstrap token", secret(nil), "eyJhbGciOiJFUzI1NiJ9.e30.sig", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &bootstrapTokens{secrets: tt.secrets, now: func() time.Time { return now }}
			resp, ok, err := a.AuthenticateToken(t.Context(), tt.token)
			got := ""
			if ok {
				got = resp.User.GetName() + " " + strings.Join(resp.User.GetGroups(), ",")
			}
			if got != tt.want || (tt.want == "" && (err != nil) != tt.handled) {
				t.Errorf("got %q, %v, %v; want %q", got, ok, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "0123456789abcdef") {
				t.Errorf("the error names the token's secret: %v", err)
			}
		})
	}
}
