package encryption

import (
	"testing"

	"google.golang.org/protobuf/proto"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"
)

func TestKeyOf(t *testing.T) {
	tests := []struct {
		value string
		want  Key
	}{
		{"k8s:enc:aesgcm:v1:key1:\x00\x01ciphertext", Key{Provider: AESGCM, Name: "key1"}},
		{"k8s:enc:aescbc:v1:old:xyz", Key{Provider: AESCBC, Name: "old"}},
		{"k8s:enc:secretbox:v1:box:xyz", Key{Provider: Secretbox, Name: "box"}},
		{"k8s:enc:kms:v2:vault:xyz", Key{Provider: KMS, Name: "vault"}},
		{"k8s:enc:kms:v1:legacy:xyz", Key{Provider: KMS, Name: "legacy"}},
		{"k8s:enc:kms:v2:trustplane:" + encryptedObject(t, "trustplane-0123"), Key{Provider: KMS, Name: "trustplane", KeyID: "trustplane-0123"}},
		// A key id is read under the value's own provider name only.
		{"k8s:enc:kms:v2:vault:" + encryptedObject(t, "vault-key-7"), Key{Provider: KMS, Name: "vault", KeyID: "vault-key-7"}},
		{"k8s\x00\n\x0c\n\x02v1\x12\x06Secret", Plain},
		{`{"kind":"Secret"}`, Plain},
		{"", Plain},
		{"k8s:enc:aesgcm:v1:key1", Key{Provider: Unknown}},
		{"k8s:enc:rot13:v1:k:xyz", Key{Provider: Unknown}},
		{"k8s:enc:aesgcm:v9:k:xyz", Key{Provider: Unknown}},
	}
	for _, tt := range tests {
		if got := KeyOf([]byte(tt.value)); got != tt.want {
			t.Errorf("KeyOf(%q) = %v, want %v", tt.value, got, tt.want)
		}
	}
}

// encryptedObject is kube's KMS v2 EncryptedObject sealed under keyID.
func encryptedObject(t *testing.T, keyID string) string {
	t.Helper()
	b, err := proto.Marshal(&kmstypes.EncryptedObject{EncryptedData: []byte("sealed"), KeyID: keyID, EncryptedDEKSource: []byte("dek"), EncryptedDEKSourceType: kmstypes.EncryptedDEKSourceType_AES_GCM_KEY})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRuleHasIgnoresKMSKeyIDs(t *testing.T) {
	r := Rule{Keys: []Key{{Provider: KMS, Name: "trustplane"}, Plain}}
	if !r.Has(Key{Provider: KMS, Name: "trustplane", KeyID: "trustplane-0123"}) {
		t.Error("a value of the rule's KMS key, under a key id, is not the rule's")
	}
	if r.Has(Key{Provider: KMS, Name: "vault", KeyID: "trustplane-0123"}) {
		t.Error("another KMS provider's value is the rule's")
	}
}
