package apiserver

import (
	"os"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A bootstrap token is the user system:bootstrap:<id> while its Secret in
// kube-system says so, read live: altered, expired, deleted, or not meant
// for authentication, it is 401 at once, and it never reaches the audit
// log.
func TestBootstrapTokens(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	withToken := func(token string) *kubernetes.Clientset {
		cfg := ts.restConfig(t, nil)
		cfg.BearerToken = token
		return kubernetes.NewForConfigOrDie(cfg)
	}
	whoami := func(token string) (string, error) {
		r, err := withToken(token).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return r.Status.UserInfo.Username + " " + strings.Join(r.Status.UserInfo.Groups, ","), nil
	}
	secrets := cs.CoreV1().Secrets("kube-system")
	const token = "abcdef.0123456789abcdef"
	tokenSecret := func(data map[string]string) *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef"},
			Type:       "bootstrap.kubernetes.io/token",
			StringData: map[string]string{
				"token-id":                       "abcdef",
				"token-secret":                   "0123456789abcdef",
				"usage-bootstrap-authentication": "true",
				"expiration":                     time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
			},
		}
		for k, v := range data {
			if v == "" {
				delete(s.StringData, k)
			} else {
				s.StringData[k] = v
			}
		}
		return s
	}
	put := func(data map[string]string) {
		t.Helper()
		_ = secrets.Delete(ctx, "bootstrap-token-abcdef", metav1.DeleteOptions{})
		if _, err := secrets.Create(ctx, tokenSecret(data), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := whoami(token); !apierrors.IsUnauthorized(err) {
		t.Errorf("token without its secret: %v, want Unauthorized", err)
	}
	put(nil)
	if who, err := whoami(token); err != nil || who != "system:bootstrap:abcdef system:bootstrappers,system:authenticated" {
		t.Errorf("whoami with the token: %q %v", who, err)
	}
	for _, bad := range []string{
		"abcdef.0123456789abcdee", // another secret
		"abcdeg.0123456789abcdef", // another id
		"ABCDEF.0123456789ABCDEF", // not kube's form, nor a JWT
	} {
		if _, err := whoami(bad); !apierrors.IsUnauthorized(err) {
			t.Errorf("token %s: %v, want Unauthorized", bad, err)
		}
	}

	put(map[string]string{"auth-extra-groups": "system:bootstrappers:workers"})
	if who, err := whoami(token); err != nil || who != "system:bootstrap:abcdef system:bootstrappers,system:bootstrappers:workers,system:authenticated" {
		t.Errorf("whoami with an extra group: %q %v", who, err)
	}
	for name, data := range map[string]map[string]string{
		// A token Secret cannot name any group outside system:bootstrappers.
		"a group outside system:bootstrappers": {"auth-extra-groups": "system:bootstrappers:workers,system:masters"},
		"expired":                              {"expiration": time.Now().Add(-time.Second).UTC().Format(time.RFC3339)},
		"an expiration that does not parse":    {"expiration": "tomorrow"},
		"not for authentication":               {"usage-bootstrap-authentication": ""},
		"a token-id that is not its name's":    {"token-id": "bcdefa"},
	} {
		put(data)
		if _, err := whoami(token); !apierrors.IsUnauthorized(err) {
			t.Errorf("token whose secret has %s: %v, want Unauthorized", name, err)
		}
	}
	// Another type of Secret with the right name and data is not a token.
	_ = secrets.Delete(ctx, "bootstrap-token-abcdef", metav1.DeleteOptions{})
	opaque := tokenSecret(nil)
	opaque.Type = corev1.SecretTypeOpaque
	if _, err := secrets.Create(ctx, opaque, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(token); !apierrors.IsUnauthorized(err) {
		t.Errorf("token whose secret is Opaque: %v, want Unauthorized", err)
	}

	// Deleted: refused with the next request, nothing remembered.
	put(nil)
	if _, err := whoami(token); err != nil {
		t.Fatalf("token: %v", err)
	}
	if err := secrets.Delete(ctx, "bootstrap-token-abcdef", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(token); !apierrors.IsUnauthorized(err) {
		t.Errorf("deleted token: %v, want Unauthorized", err)
	}

	// TokenReview knows them too, and does not echo them.
	put(nil)
	review, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil || !review.Status.Authenticated || review.Status.User.Username != "system:bootstrap:abcdef" || review.Spec.Token != "" {
		t.Errorf("token review: %+v %v", review, err)
	}

	audit, err := os.ReadFile(ts.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(audit), "0123456789abcde") {
		t.Error("the audit log holds a token's secret")
	}
}
