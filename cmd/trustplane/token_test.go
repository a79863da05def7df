package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// token list shows each token's id and state, and never its secret part.
func TestWriteTokens(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	token := func(id string, data map[string]string) corev1.Secret {
		s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id}, Data: map[string][]byte{
			"token-id": []byte(id), "token-secret": []byte("0123456789abcdef"), "usage-bootstrap-authentication": []byte("true"),
		}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	var out bytes.Buffer
	err := writeTokens(&out, []corev1.Secret{
		token("cccccc", map[string]string{"expiration": "tomorrow"}),
		token("aaaaaa", map[string]string{"expiration": now.Add(time.Hour).Format(time.RFC3339), "description": "rack 4", "auth-extra-groups": "system:bootstrappers:workers"}),
		token("bbbbbb", map[string]string{"expiration": now.Add(-time.Second).Format(time.RFC3339), "usage-bootstrap-signing": "true"}),
		token("dddddd", nil),
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := `ID       TTL         EXPIRES                USAGES                   DESCRIPTION   EXTRA GROUPS
aaaaaa   1h0m0s      2026-01-02T04:04:05Z   authentication           rack 4        system:bootstrappers:workers
bbbbbb   <expired>   2026-01-02T03:04:04Z   authentication,signing   <none>        <none>
cccccc   <invalid>   tomorrow               authentication           <none>        <none>
dddddd   <forever>   <never>                authentication           <none>        <none>
`
	if got := out.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(out.String(), "0123456789abcdef") {
		t.Error("token list shows a token's secret")
	}
}

func TestTokenIDNeverTheSecret(t *testing.T) {
	for arg, want := range map[string]string{"abcdef.0123456789abcdef": "abcdef", "abcdef": "abcdef"} {
		if got := tokenID(arg); got != want {
			t.Errorf("tokenID(%q) = %q, want %q", arg, got, want)
		}
	}
}
