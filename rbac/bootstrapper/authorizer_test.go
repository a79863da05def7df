package bootstrapper

import (
	"context"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// csrMap is a CSRGetter over fixed CSRs, by name; test-only.
type csrMap map[string]string // name → spec.username

var _ CSRGetter = csrMap(nil)

func (m csrMap) CertificateSigningRequest(_ context.Context, name string) (*certificatesv1.CertificateSigningRequest, error) {
	u, ok := m[name]
	if !ok {
		return nil, nil
	}
	return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.CertificateSigningRequestSpec{Username: u}}, nil
}

func TestAuthorize(t *testing.T) {
	a, err := New(csrMap{"mine": "system:bootstrap:abcdef", "theirs": "system:bootstrap:zzzzzz", "admins": "admin"})
	if err != nil {
		t.Fatal(err)
	}
	token := &user.DefaultInfo{Name: "system:bootstrap:abcdef", Groups: []string{"system:bootstrappers", user.AllAuthenticated}}
	impostor := &user.DefaultInfo{Name: "system:bootstrap:abcdef"} // not in the group
	csr := func(u user.Info, verb, name, sub string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: sub, Name: name, ResourceRequest: true}
	}
	for _, tt := range []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"get its own", csr(token, "get", "mine", ""), true},
		{"watch its own by name", csr(token, "watch", "mine", ""), true},
		{"list its own by name", csr(token, "list", "mine", ""), true},
		{"get another token's", csr(token, "get", "theirs", ""), false},
		{"get an admin's", csr(token, "get", "admins", ""), false},
		{"get one that does not exist", csr(token, "get", "none", ""), false},
		{"list them all", csr(token, "list", "", ""), false},
		{"update its own", csr(token, "update", "mine", ""), false},
		{"delete its own", csr(token, "delete", "mine", ""), false},
		{"approve its own", csr(token, "update", "mine", "approval"), false},
		{"get its own's approval", csr(token, "get", "mine", "approval"), false},
		{"get its own, not in the group", csr(impostor, "get", "mine", ""), false},
		{"a secret of the same name", authorizer.AttributesRecord{User: token, Verb: "get", Resource: "secrets", Namespace: "kube-system", Name: "mine", ResourceRequest: true}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, err := a.Authorize(t.Context(), tt.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if (d == authorizer.DecisionAllow) != tt.allow || d == authorizer.DecisionDeny {
				t.Errorf("decision %v (%s), want allow %v and never deny", d, reason, tt.allow)
			}
		})
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil): no error")
	}
}
