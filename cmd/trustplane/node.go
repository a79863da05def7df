package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/trustplane/trustplane/apiserver"
	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/node"
	"github.com/trustplane/trustplane/pki"
)

// nodeFlags are the flags of `trustplane node`.
type nodeFlags struct {
	name, server, token, tokenFile, pin, caFile, dir string
	count                                            int
	capacity, labels                                 map[string]string
	taints                                           []string
	address, podCIDR                                 string
	certLifetime                                     time.Duration
	leaseSeconds                                     int
	statusUpdate, statusReport                       time.Duration
	qps                                              float32
	burst                                            int
}

// newNodeFlags are the node agent's defaults.
func newNodeFlags() *nodeFlags {
	return &nodeFlags{
		dir:          "trustplane-node",
		count:        1,
		capacity:     map[string]string{"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi"},
		address:      "127.0.0.1",
		podCIDR:      "10.244.0.0/24",
		leaseSeconds: 40,
		statusUpdate: 10 * time.Second,
		statusReport: 5 * time.Minute,
		qps:          50,
		burst:        100,
	}
}

func newNodeCommand() *cobra.Command {
	f := newNodeFlags()
	cmd := &cobra.Command{
		Use:   "node --name N --server URL --token T (--ca-cert-hash sha256:… | --ca-file F)",
		Short: "Run a node agent: join with a bootstrap token, then report a Node and run its pods",
		Long: `Run a node agent, the control-plane side of a kubelet without a container
runtime. It checks the cluster CA against --ca-cert-hash (the pin that
trustplane token create prints; or trusts --ca-file), requests a client
certificate for system:node:<name> with the bootstrap token, and once the
controller manager has approved and signed it, uses only that certificate,
kept in --dir/<name>/ and renewed before it expires; the token is written
nowhere.
It registers its Node, renews its Lease in kube-node-lease, reports the pods
bound to it as running (and finished, for a pod whose restartPolicy is not
Always when its node.trustplane.io/run-for duration has passed), and deletes
gracefully deleted pods when their grace period ends.

Run again with the same --dir, it needs no token. --count N runs N nodes in
one process, named <name>-0 … <name>-N-1, each with its own certificate and
the next pod CIDR.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			configs, err := f.configs(cmd.Context(), newLogger())
			if err != nil {
				return err
			}
			return runNodes(cmd.Context(), configs)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.name, "name", "", "the node's name (with --count, the prefix of its nodes' names)")
	fs.IntVar(&f.count, "count", f.count, "how many nodes to run in this process")
	fs.StringVar(&f.server, "server", "", "the API server's URL, https://host:port")
	fs.StringVar(&f.token, "token", "", "the bootstrap token (trustplane token create) for the first certificate; not needed once --dir holds one")
	fs.StringVar(&f.tokenFile, "token-file", "", "a file that holds the bootstrap token, instead of --token (which other users of the machine can read in the process list)")
	fs.StringVar(&f.pin, "ca-cert-hash", "", "the cluster CA's pin, sha256:<hex>, that trustplane token create prints")
	fs.StringVar(&f.caFile, "ca-file", "", "the cluster CA's certificate, instead of --ca-cert-hash")
	fs.StringVar(&f.dir, "dir", f.dir, "directory of the nodes' certificates, one subdirectory each")
	fs.StringToStringVar(&f.capacity, "capacity", f.capacity, "what each node reports it has, resource=quantity")
	fs.StringToStringVar(&f.labels, "node-labels", nil, "labels added to each Node, key=value")
	fs.StringSliceVar(&f.taints, "register-with-taints", nil, "taints each Node registers with, key[=value]:Effect")
	fs.StringVar(&f.address, "address", f.address, "the nodes' InternalIP")
	fs.StringVar(&f.podCIDR, "pod-cidr", f.podCIDR, "the first node's pod range; each further node takes the next range of the same size")
	fs.DurationVar(&f.certLifetime, "certificate-lifetime", 0, "the lifetime the node's CSRs ask for (at least 10m); 0 leaves it to the signer")
	fs.IntVar(&f.leaseSeconds, "node-lease-duration-seconds", f.leaseSeconds, "the duration of each node's Lease, renewed a quarter of it apart")
	fs.DurationVar(&f.statusUpdate, "node-status-update-frequency", f.statusUpdate, "how often each node compares its status with its Node's")
	fs.DurationVar(&f.statusReport, "node-status-report-frequency", f.statusReport, "the longest each node goes without writing its status")
	fs.Float32Var(&f.qps, "kube-api-qps", f.qps, "requests per second of each node to the API server")
	fs.IntVar(&f.burst, "kube-api-burst", f.burst, "requests in a burst of each node to the API server")
	return cmd
}

// configs checks f and returns one configuration per node, logging to
// logger, with the CA found from the pin or the file.
func (f *nodeFlags) configs(ctx context.Context, logger *slog.Logger) ([]node.Config, error) {
	var errs []error
	if f.name == "" {
		errs = append(errs, errors.New("--name is required"))
	}
	if f.count < 1 {
		errs = append(errs, fmt.Errorf("--count %d: want 1 or more", f.count))
	}
	names := []string{f.name}
	if f.count > 1 {
		names = names[:0]
		for i := range f.count {
			names = append(names, fmt.Sprintf("%s-%d", f.name, i))
		}
	}
	for _, n := range names {
		for _, msg := range validation.IsDNS1123Subdomain(n) {
			errs = append(errs, fmt.Errorf("node name %q: %s", n, msg))
		}
	}
	if f.server == "" {
		errs = append(errs, errors.New("--server is required"))
	}
	if f.pin != "" && f.caFile != "" {
		errs = append(errs, errors.New("--ca-cert-hash and --ca-file: give one"))
	}
	if f.tokenFile != "" {
		// The error names the file, never what it holds.
		if f.token != "" {
			errs = append(errs, errors.New("--token and --token-file: give one"))
		} else if b, err := os.ReadFile(f.tokenFile); err != nil {
			errs = append(errs, fmt.Errorf("--token-file: %w", err))
		} else if f.token = strings.TrimSpace(string(b)); f.token == "" {
			errs = append(errs, fmt.Errorf("--token-file %s is empty", f.tokenFile))
		}
	}
	if f.certLifetime != 0 && f.certLifetime < 10*time.Minute {
		errs = append(errs, fmt.Errorf("--certificate-lifetime %s: want 0 or at least 10m, as CSRs allow", f.certLifetime))
	}
	capacity := corev1.ResourceList{}
	for k, v := range f.capacity {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("--capacity %s=%s: %w", k, v, err))
			continue
		}
		capacity[corev1.ResourceName(k)] = q
	}
	taints, err := parseTaints(f.taints)
	if err != nil {
		errs = append(errs, err)
	}
	address := net.ParseIP(f.address)
	if address == nil {
		errs = append(errs, fmt.Errorf("--address %q: not an IP address", f.address))
	}
	_, cidr, err := net.ParseCIDR(f.podCIDR)
	if err != nil {
		errs = append(errs, fmt.Errorf("--pod-cidr: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ca, err := f.ca(ctx)
	if err != nil {
		return nil, err
	}
	var out []node.Config
	for i, n := range names {
		podCIDR, err := nthRange(cidr, i)
		if err != nil {
			return nil, err
		}
		out = append(out, node.Config{
			Name: n, Server: f.server, CA: ca, Token: f.token, Dir: filepath.Join(f.dir, n),
			CertificateLifetime: f.certLifetime,
			Capacity:            capacity, Labels: f.labels, Taints: taints,
			Address: address, PodCIDR: podCIDR,
			KubeletVersion:        apiserver.Version.GitVersion,
			LeaseDuration:         time.Duration(f.leaseSeconds) * time.Second,
			StatusUpdateFrequency: f.statusUpdate, StatusReportFrequency: f.statusReport,
			QPS: f.qps, Burst: f.burst,
			Logger: logger,
		})
	}
	return out, nil
}

// ca is the cluster CA as PEM: from --ca-file; discovered and checked
// against --ca-cert-hash; or, on a later run, the one kept in --dir, which
// a pin must then match.
func (f *nodeFlags) ca(ctx context.Context) ([]byte, error) {
	kept := filepath.Join(f.dir, "ca.crt")
	if f.caFile != "" {
		data, err := os.ReadFile(f.caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		if _, err := parseCA(data); err != nil {
			return nil, fmt.Errorf("--ca-file %s: %w", f.caFile, err)
		}
		return data, nil
	}
	if data, err := os.ReadFile(kept); err == nil {
		ca, err := parseCA(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kept, err)
		}
		if f.pin != "" && !pki.MatchesPin(ca, f.pin) {
			return nil, fmt.Errorf("the CA kept in %s does not match --ca-cert-hash %s", kept, f.pin)
		}
		return data, nil
	}
	if f.pin == "" {
		return nil, errors.New("give --ca-cert-hash (printed by trustplane token create) or --ca-file, to know the cluster's CA")
	}
	if f.server == "" {
		return nil, errors.New("--server is required")
	}
	data, err := node.DiscoverCA(ctx, f.server, f.pin)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(kept, data, 0o644); err != nil {
		return nil, err
	}
	return data, nil
}

func parseCA(data []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(bytes.TrimSpace(data))
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, err
	}
	if !c.IsCA {
		return nil, errors.New("not a CA certificate")
	}
	return c, nil
}

// nthRange is the n-th range of cidr's size from cidr on.
func nthRange(cidr *net.IPNet, n int) (*net.IPNet, error) {
	ip4 := cidr.IP.To4()
	ones, bits := cidr.Mask.Size()
	if ip4 == nil || bits != 32 {
		return nil, fmt.Errorf("--pod-cidr %s: want an IPv4 range", cidr)
	}
	size := uint64(1) << (32 - ones)
	start := uint64(binary.BigEndian.Uint32(ip4)) + uint64(n)*size
	if start+size > 1<<32 {
		return nil, fmt.Errorf("--pod-cidr %s: no room for %d ranges", cidr, n+1)
	}
	out := make(net.IP, 4)
	binary.BigEndian.PutUint32(out, uint32(start))
	return &net.IPNet{IP: out, Mask: cidr.Mask}, nil
}

// parseTaints reads kubelet's --register-with-taints: key[=value]:Effect.
func parseTaints(specs []string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	for _, s := range specs {
		kv, effect, ok := strings.Cut(s, ":")
		key, value, _ := strings.Cut(kv, "=")
		e := corev1.TaintEffect(effect)
		if !ok || key == "" || (e != corev1.TaintEffectNoSchedule && e != corev1.TaintEffectPreferNoSchedule && e != corev1.TaintEffectNoExecute) {
			return nil, fmt.Errorf("--register-with-taints %q: want key[=value]:NoSchedule|PreferNoSchedule|NoExecute", s)
		}
		out = append(out, corev1.Taint{Key: key, Value: value, Effect: e})
	}
	return out, nil
}

// runNodes runs every node until ctx is done or one fails, which stops
// them all.
func runNodes(ctx context.Context, configs []node.Config) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, c := range configs {
		wg.Go(func() {
			if err := node.Run(ctx, c); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// runLocalNodes runs n node agents beside the control plane that up
// runs, each over loopback TLS with its own certificate, kept in
// DIR/nodes. Nodes without a certificate yet join with a bootstrap token
// that up creates for them as the admin, never shows, and deletes once
// every node holds its certificate (or after ten minutes, by expiry).
func runLocalNodes(ctx context.Context, dir, server string, n int, logger *slog.Logger) error {
	l := datadir.Layout{Dir: dir}
	f := newNodeFlags()
	f.name, f.count, f.server = "node", n, server
	f.dir = filepath.Join(dir, "nodes")
	f.caFile = filepath.Join(l.PKI(), pki.ClusterCAName+".crt")
	configs, err := f.configs(ctx, logger)
	if err != nil {
		return err
	}
	var joining []string
	for _, c := range configs {
		if _, err := os.Stat(filepath.Join(c.Dir, "node-client-current.pem")); err != nil {
			joining = append(joining, c.Dir)
		}
	}
	if len(joining) > 0 {
		cfg, err := clientConfig(l.Kubeconfig("admin"), "")
		if err != nil {
			return err
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		token, _, err := createBootstrapToken(ctx, cs, 10*time.Minute, "trustplane up --nodes", nil)
		if err != nil {
			return fmt.Errorf("nodes: %w", err)
		}
		for i := range configs {
			configs[i].Token = token
		}
		id, _, _ := strings.Cut(token, ".")
		go forgetToken(ctx, cs, id, joining, logger)
	}
	return runNodes(ctx, configs)
}

// forgetToken deletes the bootstrap token id once every directory in dirs
// holds a node certificate.
func forgetToken(ctx context.Context, cs kubernetes.Interface, id string, dirs []string, logger *slog.Logger) {
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, "node-client-current.pem")); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return
	}
	if err := cs.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, bootstraputil.BootstrapTokenSecretName(id), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		logger.Warn("delete the nodes' bootstrap token; it expires in ten minutes", "id", id, "err", err)
	}
}
