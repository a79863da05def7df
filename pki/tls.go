package pki

import "crypto/tls"

// CipherSuites are the TLS 1.2 suites trustplane accepts: ECDHE key
// exchange with AEAD ciphers only. TLS 1.3 suites are not configurable and
// all qualify.
func CipherSuites() []uint16 {
	return []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}
}

// CipherSuiteNames are CipherSuites by their IANA names, as etcd's
// configuration takes them.
func CipherSuiteNames() []string {
	var names []string
	for _, id := range CipherSuites() {
		names = append(names, tls.CipherSuiteName(id))
	}
	return names
}
