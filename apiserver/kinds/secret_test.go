package kinds

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestDefaultSecret(t *testing.T) {
	tests := []struct {
		name     string
		in       corev1.Secret
		wantData map[string]string
		wantType corev1.SecretType
	}{
		{"empty", corev1.Secret{}, nil, corev1.SecretTypeOpaque},
		{"stringData alone", corev1.Secret{StringData: map[string]string{"a": "1"}}, map[string]string{"a": "1"}, corev1.SecretTypeOpaque},
		{"stringData wins", corev1.Secret{Data: map[string][]byte{"a": []byte("0"), "b": []byte("2")}, StringData: map[string]string{"a": "1"}}, map[string]string{"a": "1", "b": "2"}, corev1.SecretTypeOpaque},
		{"type kept", corev1.Secret{Type: corev1.SecretTypeTLS}, nil, corev1.SecretTypeTLS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.in.DeepCopy()
			DefaultSecret(s)
			got := map[string]string{}
			for k, v := range s.Data {
				got[k] = string(v)
			}
			if tt.wantData == nil {
				tt.wantData = map[string]string{}
			}
			if !maps.Equal(got, tt.wantData) || s.StringData != nil || s.Type != tt.wantType {
				t.Errorf("got data %v, stringData %v, type %q; want data %v, no stringData, type %q", got, s.StringData, s.Type, tt.wantData, tt.wantType)
			}
		})
	}
}
