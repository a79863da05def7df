package kinds

import corev1 "k8s.io/api/core/v1"

// DefaultSecret sets kube's defaults on a Secret: the type Opaque, and
// stringData, which is write-only, merged into data (its keys winning),
// as kube-apiserver's conversion does, so that it is never stored.
func DefaultSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) == 0 {
		s.StringData = nil
		return
	}
	if s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}
