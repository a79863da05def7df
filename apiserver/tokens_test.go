package apiserver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"os"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestServiceAccountTokens(t *testing.T) {
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
	sa, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := func(req *authenticationv1.TokenRequest) (string, error) {
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "builder", req, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		if tr.Status.ExpirationTimestamp.IsZero() {
			t.Error("token request without an expiration")
		}
		return tr.Status.Token, nil
	}
	tok, err := token(&authenticationv1.TokenRequest{})
	if err != nil || tok == "" {
		t.Fatalf("token request: %q %v", tok, err)
	}
	if who, err := whoami(tok); err != nil || who != "system:serviceaccount:default:builder system:serviceaccounts,system:serviceaccounts:default,system:authenticated" {
		t.Errorf("whoami with the token: %q %v", who, err)
	}
	// RBAC applies to service accounts like everyone: no rights yet.
	if _, err := withToken(tok).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("service account listing secrets: %v, want Forbidden", err)
	}
	review, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tok}}, metav1.CreateOptions{})
	if err != nil || !review.Status.Authenticated || review.Status.User.UID != string(sa.UID) || review.Spec.Token != "" {
		t.Errorf("token review: %+v %v", review, err)
	}
	review, err = cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tok + "x"}}, metav1.CreateOptions{})
	if err != nil || review.Status.Authenticated {
		t.Errorf("token review of an altered token: %+v %v", review.Status, err)
	}

	// Refusals of the token request itself.
	short, long := int64(60), int64(100*3600)
	for name, req := range map[string]*authenticationv1.TokenRequest{
		"too short":         {Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &short}},
		"too long":          {Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &long}},
		"bound to a gadget": {Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Gadget", APIVersion: "v1", Name: "g"}}},
	} {
		if _, err := token(req); !apierrors.IsInvalid(err) {
			t.Errorf("token request %s: %v, want Invalid", name, err)
		}
	}
	if _, err := token(&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "nope"}}}); !apierrors.IsNotFound(err) {
		t.Errorf("token bound to a missing pod: %v, want NotFound", err)
	}

	// A token bound to a pod dies with the pod.
	pod, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "runner"}, Spec: corev1.PodSpec{ServiceAccountName: "builder", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podTok, err := token(&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "runner", UID: pod.UID}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := withToken(podTok).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Extra["authentication.kubernetes.io/pod-name"][0] != "runner" {
		t.Fatalf("pod-bound token: %+v %v", r, err)
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, "runner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod-bound token refused after the pod is deleted", func() error {
		if _, err := whoami(podTok); !apierrors.IsUnauthorized(err) {
			return err
		}
		return nil
	})

	// Deleting and recreating the service account under the same name
	// kills its old tokens.
	if err := cs.CoreV1().ServiceAccounts("default").Delete(ctx, "builder", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "token of a recreated service account refused", func() error {
		if _, err := whoami(tok); !apierrors.IsUnauthorized(err) {
			return err
		}
		return nil
	})

	// Forgeries: alg none, and HS256 keyed with the public key.
	seg := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	parts := strings.Split(tok, ".")
	none := seg(`{"alg":"none","typ":"JWT"}`) + "." + parts[1] + "."
	if _, err := whoami(none); !apierrors.IsUnauthorized(err) {
		t.Errorf("alg none: %v, want Unauthorized", err)
	}
	pub, _ := os.ReadFile(ts.etcd.PKI.Dir + "/sa.pub")
	if _, err := whoami(hs256(seg(`{"alg":"HS256","typ":"JWT"}`)+"."+parts[1], pub)); !apierrors.IsUnauthorized(err) {
		t.Errorf("HS256 with the public key: %v, want Unauthorized", err)
	}

	// No token ever reaches the audit log.
	log, _ := os.ReadFile(ts.auditLog)
	for _, secret := range []string{tok, podTok, parts[2]} {
		if strings.Contains(string(log), secret) {
			t.Error("a token is in the audit log")
		}
	}
}

func hs256(signingInput string, key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(signingInput))
	return signingInput + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// A TokenReview for another audience checks the token against it.
func TestTokenReviewForOtherAudiences(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "vault-client"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "vault-client", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	review := func(auds []string) bool {
		r, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token, Audiences: auds}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Authenticated
	}
	if !review([]string{"vault"}) {
		t.Error("a vault token reviewed for vault was refused")
	}
	if review(nil) {
		t.Error("a vault token reviewed for the API server was accepted")
	}
	if review([]string{"other"}) {
		t.Error("a vault token reviewed for another audience was accepted")
	}
	// And it never authenticates to the API server itself.
	cfg := ts.restConfig(t, nil)
	cfg.BearerToken = tr.Status.Token
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("a vault token used on the API server: %v, want Unauthorized", err)
	}
}
