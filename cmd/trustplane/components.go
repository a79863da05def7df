package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trustplane/trustplane/apiserver"
	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/etcd"
)

// etcdFlags configure the embedded etcd member.
type etcdFlags struct {
	listenAddress string
	clientPort    int
	peerPort      int
	httpPort      int
}

func (f *etcdFlags) addTo(fs *pflag.FlagSet) {
	fs.StringVar(&f.listenAddress, "etcd-listen-address", "127.0.0.1", "IP address etcd listens on for clients and peers")
	fs.IntVar(&f.clientPort, "etcd-client-port", 2379, "etcd client port")
	fs.IntVar(&f.peerPort, "etcd-peer-port", 2380, "etcd peer port")
	fs.IntVar(&f.httpPort, "etcd-http-port", 2381, "etcd port for /health, /version and /metrics, behind the same mutual TLS")
}

func (f *etcdFlags) validate() error {
	var errs []error
	if net.ParseIP(f.listenAddress) == nil {
		errs = append(errs, fmt.Errorf("--etcd-listen-address %q is not an IP address", f.listenAddress))
	}
	for name, p := range map[string]int{"--etcd-client-port": f.clientPort, "--etcd-peer-port": f.peerPort, "--etcd-http-port": f.httpPort} {
		if p <= 0 || p > 65535 {
			errs = append(errs, fmt.Errorf("%s %d is out of range", name, p))
		}
	}
	return errors.Join(errs...)
}

func startEtcd(ctx context.Context, dir string, f *etcdFlags, logger *slog.Logger) (*etcd.Server, error) {
	l := datadir.Layout{Dir: dir}
	return etcd.Start(ctx, etcd.Config{
		Name:          "trustplane",
		DataDir:       l.EtcdData(),
		PKIDir:        l.EtcdPKI(),
		ClientAddress: net.JoinHostPort(f.listenAddress, strconv.Itoa(f.clientPort)),
		PeerAddress:   net.JoinHostPort(f.listenAddress, strconv.Itoa(f.peerPort)),
		HTTPAddress:   net.JoinHostPort(f.listenAddress, strconv.Itoa(f.httpPort)),
		Logger:        logger,
	})
}

func newEtcdCommand() *cobra.Command {
	var (
		dir string
		f   etcdFlags
	)
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Run etcd alone, behind mutual TLS and etcd authentication",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			logger := newLogger()
			srv, err := startEtcd(cmd.Context(), dir, &f, logger)
			if err != nil {
				return err
			}
			defer srv.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "etcd serving at %s\n", srv.ClientURL())
			select {
			case <-cmd.Context().Done():
				return nil
			case err := <-srv.Err():
				return fmt.Errorf("etcd: %w", err)
			}
		},
	}
	cmd.Flags().StringVar(&dir, "dir", datadir.DefaultDir, "data directory")
	f.addTo(cmd.Flags())
	return cmd
}

func newAPIServerCommand() *cobra.Command {
	o := apiserver.NewOptions()
	var mem memoryLimitFlag
	cmd := &cobra.Command{
		Use:   "apiserver",
		Short: "Run the API server alone, against etcd at --etcd-servers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger := newLogger()
			if err := mem.apply(logger); err != nil {
				return err
			}
			return runAPIServer(cmd.Context(), o, logger, func() {
				fmt.Fprintf(cmd.OutOrStdout(), "API server serving at https://%s\n", o.Address())
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.DataDir, "dir", o.DataDir, "data directory")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "IP address to listen on")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "HTTPS port")
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", o.EtcdServers, "etcd client URLs")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "time limit of a request")
	fs.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", o.MaxRequestsInFlight, "requests served at once; more get 429")
	fs.StringVar(&o.AuthenticationConfig, "authentication-config", "", "AuthenticationConfiguration file with OIDC issuers (default DIR/authentication-config.yaml when it exists)")
	fs.DurationVar(&o.MaxTokenExpiration, "service-account-max-token-expiration", o.MaxTokenExpiration, "longest ServiceAccount token a TokenRequest may ask for")
	fs.StringVar(&o.AdmissionPolicyDir, "admission-policy-dir", "", "directory of the Rego admission policies (default DIR/policies)")
	fs.DurationVar(&o.AdmissionPolicyTimeout, "admission-policy-timeout", o.AdmissionPolicyTimeout, "time limit of the admission policies' evaluation for one request; beyond it the request is refused")
	fs.StringVar(&o.ServiceClusterIPRange, "service-cluster-ip-range", o.ServiceClusterIPRange, "CIDR of Services' cluster IPs; its first address is the kubernetes Service's")
	fs.StringVar(&o.ServiceNodePortRange, "service-node-port-range", o.ServiceNodePortRange, "range of NodePort Services' node ports, both ends included")
	fs.StringSliceVar(&o.DisableCompressionForClientIPs, "disable-compression-for-client-ips", o.DisableCompressionForClientIPs, "CIDRs of clients never sent a compressed response, whatever they accept (on loopback compression only costs CPU); empty compresses for every client that accepts gzip")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "serve the Go runtime's profiles at /debug/pprof/ to users allowed to get those paths (cluster-admin)")
	addTolerationFlags(fs, o)
	addAuditLogFlags(fs, &o.Audit)
	mem.addTo(fs)
	return cmd
}

// runAPIServer serves until ctx is done; ready, when not nil, is called
// once the server listens.
func runAPIServer(ctx context.Context, o *apiserver.Options, logger *slog.Logger, ready func()) error {
	cfg, closeConfig, err := o.Config(ctx, logger)
	if err != nil {
		return err
	}
	defer closeConfig()
	// Where etcd is, for the commands that read it as the server does.
	if err := datadir.WriteEtcdServers(datadir.Layout{Dir: o.DataDir}, o.EtcdServers); err != nil {
		return err
	}
	srv, err := apiserver.New(*cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Address())
	if err != nil {
		return err
	}
	if ready != nil {
		ready()
	}
	return srv.Run(ctx, ln)
}
