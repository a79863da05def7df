package encryption

import "testing"

func TestKeyOf(t *testing.T) {
	tests := []struct {
		value string
		want  Key
	}{
		{"k8s:enc:aesgcm:v1:key1:\x00\x01ciphertext", Key{AESGCM, "key1"}},
		{"k8s:enc:aescbc:v1:old:xyz", Key{AESCBC, "old"}},
		{"k8s:enc:secretbox:v1:box:xyz", Key{Secretbox, "box"}},
		{"k8s:enc:kms:v2:vault:xyz", Key{KMS, "vault"}},
		{"k8s:enc:kms:v1:legacy:xyz", Key{KMS, "legacy"}},
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
