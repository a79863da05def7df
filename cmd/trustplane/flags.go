package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/trustplane/trustplane/apiserver"
	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/pki"
)

// clusterFlags are the flags init and up share: where the data lives and
// what names the certificates must carry.
type clusterFlags struct {
	apiserver        *apiserver.Options
	advertiseAddress string
	extraSANs        []string
	certValidity     time.Duration
	encryption       string
}

func newClusterFlags() *clusterFlags {
	return &clusterFlags{apiserver: apiserver.NewOptions(), certValidity: pki.DefaultLeafValidity, encryption: datadir.EncryptionAESGCM}
}

func (f *clusterFlags) addTo(fs *pflag.FlagSet) {
	fs.StringVar(&f.apiserver.DataDir, "dir", f.apiserver.DataDir, "data directory")
	fs.StringVar(&f.apiserver.BindAddress, "bind-address", f.apiserver.BindAddress, "IP address the API server listens on")
	fs.IntVar(&f.apiserver.SecurePort, "secure-port", f.apiserver.SecurePort, "HTTPS port of the API server")
	fs.StringVar(&f.advertiseAddress, "advertise-address", "", "IP address clients reach the API server at (default: the bind address, or 127.0.0.1 when it binds all addresses)")
	fs.StringSliceVar(&f.extraSANs, "apiserver-cert-extra-sans", nil, "extra DNS names and IP addresses for the serving certificates")
	fs.DurationVar(&f.certValidity, "cert-validity", f.certValidity, "validity of issued leaf certificates")
	fs.StringVar(&f.encryption, "encryption", f.encryption, "provider of a new encryption configuration: aesgcm, or kms for the KMS v2 plugin that up runs (key in DIR/pki/kms.key); an existing configuration is kept")
	fs.StringVar(&f.apiserver.AuthenticationConfig, "authentication-config", "", "AuthenticationConfiguration file with OIDC issuers (default DIR/authentication-config.yaml when it exists)")
	fs.StringVar(&f.apiserver.AdmissionPolicyDir, "admission-policy-dir", "", "directory of the Rego admission policies (default DIR/policies)")
	fs.DurationVar(&f.apiserver.AdmissionPolicyTimeout, "admission-policy-timeout", f.apiserver.AdmissionPolicyTimeout, "time limit of the admission policies' evaluation for one request; beyond it the request is refused")
	fs.StringVar(&f.apiserver.ServiceClusterIPRange, "service-cluster-ip-range", f.apiserver.ServiceClusterIPRange, "CIDR of Services' cluster IPs; its first address is the kubernetes Service's")
	fs.StringVar(&f.apiserver.ServiceNodePortRange, "service-node-port-range", f.apiserver.ServiceNodePortRange, "range of NodePort Services' node ports, both ends included")
	fs.StringSliceVar(&f.apiserver.DisableCompressionForClientIPs, "disable-compression-for-client-ips", f.apiserver.DisableCompressionForClientIPs, "CIDRs of clients never sent a compressed response, whatever they accept (on loopback compression only costs CPU); empty compresses for every client that accepts gzip")
	fs.BoolVar(&f.apiserver.Profiling, "profiling", f.apiserver.Profiling, "serve the Go runtime's profiles at /debug/pprof/ to users allowed to get those paths (cluster-admin)")
	addTolerationFlags(fs, f.apiserver)
}

// addTolerationFlags adds kube-apiserver's flags of the
// DefaultTolerationSeconds admission plugin.
func addTolerationFlags(fs *pflag.FlagSet, o *apiserver.Options) {
	fs.Int64Var(&o.DefaultNotReadyTolerationSeconds, "default-not-ready-toleration-seconds", o.DefaultNotReadyTolerationSeconds,
		"seconds of the toleration of node.kubernetes.io/not-ready:NoExecute given to every pod created without one")
	fs.Int64Var(&o.DefaultUnreachableTolerationSeconds, "default-unreachable-toleration-seconds", o.DefaultUnreachableTolerationSeconds,
		"seconds of the toleration of node.kubernetes.io/unreachable:NoExecute given to every pod created without one")
}

func (f *clusterFlags) validate() error {
	var errs []error
	if f.advertiseAddress != "" && net.ParseIP(f.advertiseAddress) == nil {
		errs = append(errs, fmt.Errorf("--advertise-address %q is not an IP address", f.advertiseAddress))
	}
	if f.encryption != datadir.EncryptionAESGCM && f.encryption != datadir.EncryptionKMS {
		errs = append(errs, fmt.Errorf("--encryption %q: want aesgcm or kms", f.encryption))
	}
	if f.certValidity <= 0 {
		errs = append(errs, fmt.Errorf("--cert-validity %s must be positive", f.certValidity))
	}
	return errors.Join(append(errs, f.apiserver.Validate())...)
}

// serverHost is the address clients use.
func (f *clusterFlags) serverHost() string {
	if f.advertiseAddress != "" {
		return f.advertiseAddress
	}
	if ip := net.ParseIP(f.apiserver.BindAddress); ip != nil && !ip.IsUnspecified() {
		return f.apiserver.BindAddress
	}
	return "127.0.0.1"
}

func (f *clusterFlags) serverURL() string {
	return (&url.URL{Scheme: "https", Host: net.JoinHostPort(f.serverHost(), strconv.Itoa(f.apiserver.SecurePort))}).String()
}

func (f *clusterFlags) initOptions() datadir.Options {
	hosts := append([]string{f.serverHost()}, f.extraSANs...)
	return datadir.Options{
		Dir:          f.apiserver.DataDir,
		Hosts:        hosts,
		APIServerURL: f.serverURL(),
		LeafValidity: f.certValidity,
		Encryption:   f.encryption,
	}
}
