package pki

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/cloudflare/cfssl/config"
	"github.com/cloudflare/cfssl/csr"
	"github.com/cloudflare/cfssl/signer"
	"github.com/cloudflare/cfssl/signer/local"
)

// Profile is the single use a leaf certificate is issued for.
type Profile int

const (
	// Server certificates authenticate a TLS server only.
	Server Profile = iota + 1
	// Client certificates authenticate a TLS client only.
	Client
	// Peer certificates are both, for etcd members that dial each other.
	Peer
)

func (p Profile) String() string {
	switch p {
	case Server:
		return "server"
	case Client:
		return "client"
	case Peer:
		return "peer"
	}
	return fmt.Sprintf("Profile(%d)", int(p))
}

// usages are cfssl's names for the key usages of each profile. ECDSA keys
// sign; they never encipher keys.
func (p Profile) usages() ([]string, error) {
	switch p {
	case Server:
		return []string{"digital signature", "server auth"}, nil
	case Client:
		return []string{"digital signature", "client auth"}, nil
	case Peer:
		return []string{"digital signature", "server auth", "client auth"}, nil
	}
	return nil, fmt.Errorf("unknown certificate profile %d", int(p))
}

// Request describes a leaf certificate.
type Request struct {
	CommonName    string
	Organizations []string
	// Hosts are the DNS names and IP addresses the certificate is valid
	// for; required for Server and Peer certificates.
	Hosts    []string
	Profile  Profile
	Validity time.Duration
}

func (r Request) validate() error {
	var errs []error
	if r.CommonName == "" {
		errs = append(errs, errors.New("common name is empty"))
	}
	if _, err := r.Profile.usages(); err != nil {
		errs = append(errs, err)
	}
	if (r.Profile == Server || r.Profile == Peer) && len(r.Hosts) == 0 {
		errs = append(errs, fmt.Errorf("a %s certificate needs at least one host", r.Profile))
	}
	if r.Profile == Client && len(r.Hosts) > 0 {
		errs = append(errs, fmt.Errorf("a client certificate names no hosts, got %v", r.Hosts))
	}
	if r.Validity <= 0 {
		errs = append(errs, fmt.Errorf("validity must be positive, got %s", r.Validity))
	}
	return errors.Join(errs...)
}

// Issue creates a key pair and a certificate for it signed by the CA.
func (ca *CA) Issue(r Request) (certPEM, keyPEM []byte, err error) {
	if err := r.validate(); err != nil {
		return nil, nil, fmt.Errorf("issue %q certificate: %w", r.CommonName, err)
	}
	usages, _ := r.Profile.usages()
	// A policy with only the one profile asked for, so no request can be
	// signed with more usages than its link needs.
	policy := &config.Signing{Default: &config.SigningProfile{
		Usage:        usages,
		Expiry:       r.Validity,
		ExpiryString: r.Validity.String(),
	}}
	s, err := local.NewSigner(ca.key, ca.Cert, signer.DefaultSigAlgo(ca.key), policy)
	if err != nil {
		return nil, nil, fmt.Errorf("issue %q certificate: %w", r.CommonName, err)
	}
	names := make([]csr.Name, 0, len(r.Organizations))
	for _, o := range r.Organizations {
		names = append(names, csr.Name{O: o})
	}
	csrPEM, keyPEM, err := csr.ParseRequest(&csr.CertificateRequest{
		CN:         r.CommonName,
		Names:      names,
		Hosts:      r.Hosts,
		KeyRequest: &csr.KeyRequest{A: "ecdsa", S: 256},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("issue %q certificate: %w", r.CommonName, err)
	}
	certPEM, err = s.Sign(signer.SignRequest{Request: string(csrPEM), Hosts: r.Hosts})
	if err != nil {
		return nil, nil, fmt.Errorf("issue %q certificate: %w", r.CommonName, err)
	}
	return certPEM, keyPEM, nil
}

// LocalHosts are the names every loopback-reachable server certificate
// carries.
func LocalHosts() []string {
	return []string{"localhost", "127.0.0.1", "::1"}
}

// SplitHosts separates DNS names from IP addresses.
func SplitHosts(hosts []string) (dns []string, ips []net.IP) {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, h)
		}
	}
	return dns, ips
}

// clientUsages are the only usages SignClientCSR issues: cfssl's names,
// which are also kube's KeyUsage values.
var clientUsages = []string{"digital signature", "key encipherment", "client auth"}

// SignClientCSR signs a PEM certificate request as a client certificate
// with usages, a subset of digital signature, key encipherment and client
// auth that holds client auth, valid until notAfter or the CA's own
// expiry, whichever is first. The subject is the request's; it carries no
// hosts, and a request for a CA certificate is refused (the signing
// profile allows none). The caller decides whether the request deserves
// it.
func (ca *CA) SignClientCSR(csrPEM []byte, usages []string, notAfter time.Time) ([]byte, error) {
	if !slices.Contains(usages, "client auth") {
		return nil, errors.New("sign client certificate: usages lack client auth")
	}
	for _, u := range usages {
		if !slices.Contains(clientUsages, u) {
			return nil, fmt.Errorf("sign client certificate: usage %q is not a client's", u)
		}
	}
	if err := refuseCARequest(csrPEM); err != nil {
		return nil, fmt.Errorf("sign client certificate: %w", err)
	}
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	validity := time.Until(notAfter)
	if validity <= 0 {
		return nil, fmt.Errorf("sign client certificate: no validity left before %s", notAfter.Format(time.RFC3339))
	}
	policy := &config.Signing{Default: &config.SigningProfile{
		Usage:        usages,
		Expiry:       validity,
		ExpiryString: validity.String(),
		// Only the subject and the key come from the request: without
		// a list, cfssl also copies its TLS delegation extension.
		CSRWhitelist: &config.CSRWhitelist{Subject: true, PublicKey: true, PublicKeyAlgorithm: true, SignatureAlgorithm: true},
	}}
	s, err := local.NewSigner(ca.key, ca.Cert, signer.DefaultSigAlgo(ca.key), policy)
	if err != nil {
		return nil, fmt.Errorf("sign client certificate: %w", err)
	}
	// An empty Hosts list, not nil: nil would copy the request's SANs.
	certPEM, err := s.Sign(signer.SignRequest{Request: string(csrPEM), Hosts: []string{}, NotAfter: notAfter})
	if err != nil {
		return nil, fmt.Errorf("sign client certificate: %w", err)
	}
	return certPEM, nil
}

// refuseCARequest refuses a request that asks to be a CA, or that cannot
// be read. The signer takes nothing but the subject and the key from a
// request, so it would not sign a CA; a client that asks for one is
// refused all the same.
func refuseCARequest(csrPEM []byte) error {
	block, _ := pem.Decode(csrPEM)
	if block == nil {
		return errors.New("the request is not PEM")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return err
	}
	if AsksForCA(req) {
		return errors.New("the request asks to be a CA")
	}
	return nil
}

// oidBasicConstraints is the X.509 extension that makes a certificate a CA.
var oidBasicConstraints = asn1.ObjectIdentifier{2, 5, 29, 19}

// AsksForCA reports whether a certificate request carries basic
// constraints saying CA, or ones that do not parse: what neither the
// signer nor the CSR approver accepts.
func AsksForCA(req *x509.CertificateRequest) bool {
	for _, ext := range req.Extensions {
		if !ext.Id.Equal(oidBasicConstraints) {
			continue
		}
		var bc struct {
			IsCA       bool `asn1:"optional"`
			MaxPathLen int  `asn1:"optional,default:-1"`
		}
		if rest, err := asn1.Unmarshal(ext.Value, &bc); err != nil || len(rest) > 0 || bc.IsCA {
			return true
		}
	}
	return false
}
