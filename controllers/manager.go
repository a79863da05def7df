package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/trustplane/trustplane/pki"
	"github.com/trustplane/trustplane/rbac"
)

// runner runs a controller with n workers until ctx is done.
type runner func(ctx context.Context, workers int)

// controllerContext is what a controller is built with.
type controllerContext struct {
	// client is the controller's own identity, and config its
	// configuration, for the clients a controller makes itself.
	client kubernetes.Interface
	config *rest.Config
	// informers are shared by every controller.
	informers informers.SharedInformerFactory
	logger    *slog.Logger
	// rootCA is the cluster's CA, PEM, from the controller manager's
	// kubeconfig.
	rootCA []byte
	// signer signs node client certificates; nil without a signing CA.
	signer *csrSigner
	// nodeLifecycle configures the node lifecycle controller.
	nodeLifecycle NodeLifecycleConfig
}

// metadataClients are the clients of a controller that reads every kind
// the server serves, by metadata only: a metadata client (its requests
// ask for PartialObjectMetadata, so that no Secret's data reaches it) and
// a discovery client, both as the controller's own identity.
func (c *controllerContext) metadataClients(controller string) (metadata.Interface, discovery.DiscoveryInterface, error) {
	if c.config == nil {
		return nil, nil, fmt.Errorf("%s: no client configuration", controller)
	}
	meta, err := metadata.NewForConfig(c.config)
	if err != nil {
		return nil, nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(c.config)
	if err != nil {
		return nil, nil, err
	}
	return meta, disc, nil
}

// controllers are the controllers the manager runs, by the name
// --controllers takes, each with its constructor.
var controllers = map[string]func(*controllerContext) (runner, error){
	"serviceaccount":            newServiceAccountController,
	"root-ca-cert-publisher":    newRootCAPublisher,
	"namespace":                 newNamespaceController,
	"replicaset":                newReplicaSetController,
	"deployment":                newDeploymentController,
	"endpointslice":             newEndpointSliceController,
	"statefulset":               newStatefulSetController,
	"daemonset":                 newDaemonSetController,
	"garbagecollector":          newGarbageCollector,
	"csrapproving":              newCSRApprovingController,
	"csrsigning":                newCSRSigningController,
	"tokencleaner":              newTokenCleaner,
	"nodelifecycle":             newNodeLifecycleController,
	"taint-eviction-controller": newTaintEvictionController,
}

// Names are the names of every controller, sorted.
func Names() []string {
	var out []string
	for _, c := range rbac.Controllers() {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}

// Select reads a --controllers list as kube-controller-manager does:
// "*" (every controller), names, and -name to leave one out; empty is
// "*".
func Select(list []string) ([]string, error) {
	if len(list) == 0 {
		list = []string{"*"}
	}
	all := Names()
	on := map[string]bool{}
	for _, item := range list {
		name, off := strings.CutPrefix(strings.TrimSpace(item), "-")
		switch {
		case name == "*" && !off:
			for _, n := range all {
				if _, set := on[n]; !set {
					on[n] = true
				}
			}
		case slices.Contains(all, name):
			on[name] = !off
		default:
			return nil, fmt.Errorf("--controllers: unknown controller %q; known: %s", item, strings.Join(all, ", "))
		}
	}
	var out []string
	for _, n := range all {
		if on[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// DefaultQPS and DefaultBurst limit each controller's client unless set
// otherwise (--kube-api-qps, --kube-api-burst). kube-controller-manager's
// 20 and 30 date from before API Priority and Fairness, when the client's
// limit was the API server's only protection: at 20 a second a
// Deployment of 1,000 replicas takes 50 s to create its pods, and its
// rolling update twice that. Each controller has a client of its own,
// and its requests at once are bounded by its workers, so that one
// running away is held to its own rate, not the others'; past
// --max-requests-inflight the API server answers 429, which client-go
// retries. The server has no per-client fairness (kube's API Priority
// and Fairness): a controller running away at this rate could take much
// of its CPU.
const (
	DefaultQPS   = 500
	DefaultBurst = 1000
)

// Options configure the controller manager.
type Options struct {
	// Config is the controller manager's own identity, with which it
	// obtains the controllers' tokens and nothing else.
	Config *rest.Config
	// QPS and Burst limit each controller's client; when zero, Config's,
	// else DefaultQPS and DefaultBurst.
	QPS   float32
	Burst int
	// Controllers are the names of the controllers to run (Select).
	Controllers []string
	// Workers is how many keys each controller syncs at once.
	Workers int
	Logger  *slog.Logger
	// LeaseDuration, RenewDeadline and RetryPeriod are leader
	// election's, kube-controller-manager's defaults when zero.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ClusterSigningCertFile and ClusterSigningKeyFile are the CA the
	// csrsigning controller signs node client certificates with, read
	// from the files as kube's controller reads them: the controller
	// manager runs beside the API server, on the control plane's host.
	// Required when csrsigning runs.
	ClusterSigningCertFile, ClusterSigningKeyFile string
	// ClusterSigningDuration is how long the certificates it signs live
	// at most; a year when zero, kube's default
	// (defaultClusterSigningDuration).
	ClusterSigningDuration time.Duration
	// NodeLifecycle configures the nodelifecycle controller; its zero
	// fields are kube's defaults.
	NodeLifecycle NodeLifecycleConfig
}

// Run runs the controllers until ctx is done, while this instance leads:
// instances that share a cluster elect one leader through the Lease
// kube-system/kube-controller-manager, and a standby takes over within
// the lease's duration once the leader stops renewing it. An instance
// that loses its lease stops its controllers and stands again.
func Run(ctx context.Context, o Options) error {
	if o.Config == nil {
		return errors.New("controller manager: no client configuration")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Workers = max(o.Workers, 1)
	// Each controller's client is limited to this rate, not client-go's
	// default of 5 requests per second: too slow for a ReplicaSet of
	// hundreds of pods.
	o.Config = rest.CopyConfig(o.Config)
	o.Config.QPS = cmp.Or(o.QPS, o.Config.QPS, DefaultQPS)
	o.Config.Burst = cmp.Or(o.Burst, o.Config.Burst, DefaultBurst)
	rootCA := o.Config.CAData
	if len(rootCA) == 0 && o.Config.CAFile != "" {
		var err error
		if rootCA, err = os.ReadFile(o.Config.CAFile); err != nil {
			return fmt.Errorf("controller manager: read the CA: %w", err)
		}
	}
	var signer *csrSigner
	if slices.Contains(o.Controllers, "csrsigning") {
		var err error
		if signer, err = newCSRSigner(o); err != nil {
			return fmt.Errorf("controller manager: %w", err)
		}
	}
	if err := o.NodeLifecycle.validate(); err != nil {
		return fmt.Errorf("controller manager: %w", err)
	}
	manager, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return err
	}
	clientAs := func(sa string) (kubernetes.Interface, *rest.Config, error) {
		cfg := configAs(o.Config, manager, sa)
		cs, err := kubernetes.NewForConfig(cfg)
		return cs, cfg, err
	}
	leaderClient, _, err := clientAs(rbac.LeaderElectionServiceAccount)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	id := host + "_" + uuid.NewString()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: rbac.ControllersNamespace, Name: rbac.ControllerManagerLease},
		Client:     leaderClient.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	lead := func(ctx context.Context) {
		if err := runControllers(ctx, o, clientAs, rootCA, signer); err != nil && ctx.Err() == nil {
			o.Logger.Error("controller manager: controllers stopped", "err", err)
		}
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   cmp.Or(o.LeaseDuration, 15*time.Second),
			RenewDeadline:   cmp.Or(o.RenewDeadline, 10*time.Second),
			RetryPeriod:     cmp.Or(o.RetryPeriod, 2*time.Second),
			ReleaseOnCancel: true,
			Name:            rbac.ControllerManagerLease,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: lead,
				OnStoppedLeading: func() { o.Logger.Info("controller manager: not leading", "identity", id) },
				OnNewLeader: func(leader string) {
					if leader != id {
						o.Logger.Info("controller manager: another instance leads", "leader", leader)
					}
				},
			},
		})
		if err != nil {
			return err
		}
		le.Run(ctx)
	}
	return nil
}

// runControllers runs the chosen controllers over informers shared by
// all, until ctx is done.
func runControllers(ctx context.Context, o Options, clientAs func(string) (kubernetes.Interface, *rest.Config, error), rootCA []byte, signer *csrSigner) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	informerClient, _, err := clientAs(rbac.SharedInformersServiceAccount)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(informerClient, 0)
	accounts := map[string]string{}
	for _, c := range rbac.Controllers() {
		accounts[c.Name] = c.ServiceAccount
	}
	var runners []runner
	for _, name := range o.Controllers {
		client, cfg, err := clientAs(accounts[name])
		if err != nil {
			return err
		}
		run, err := controllers[name](&controllerContext{client: client, config: cfg, informers: factory, logger: o.Logger, rootCA: rootCA, signer: signer, nodeLifecycle: o.NodeLifecycle})
		if err != nil {
			return err
		}
		runners = append(runners, run)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	var wg sync.WaitGroup
	for _, run := range runners {
		wg.Go(func() { run(ctx, o.Workers) })
	}
	o.Logger.Info("controller manager: leading", "controllers", strings.Join(o.Controllers, ","))
	wg.Wait()
	return nil
}

// CheckOptions refuses, before anything runs, options that the
// controllers o names cannot run with: the CSR signer's CA must load.
func CheckOptions(o Options) error {
	if slices.Contains(o.Controllers, "csrsigning") {
		_, err := newCSRSigner(o)
		return err
	}
	return nil
}

// defaultClusterSigningDuration is kube-controller-manager's
// --cluster-signing-duration: a year.
const defaultClusterSigningDuration = 365 * 24 * time.Hour

// newCSRSigner is the signer of o's cluster signing CA and duration.
func newCSRSigner(o Options) (*csrSigner, error) {
	if o.ClusterSigningCertFile == "" || o.ClusterSigningKeyFile == "" {
		return nil, errors.New("csrsigning needs the cluster signing CA's certificate and key files")
	}
	if o.ClusterSigningDuration < 0 {
		return nil, fmt.Errorf("cluster signing duration %s is negative", o.ClusterSigningDuration)
	}
	ca, err := loadSigningCA(o.ClusterSigningCertFile, o.ClusterSigningKeyFile)
	if err != nil {
		return nil, err
	}
	return &csrSigner{ca: ca, duration: cmp.Or(o.ClusterSigningDuration, defaultClusterSigningDuration)}, nil
}

// loadSigningCA reads the cluster signing CA's certificate and key.
func loadSigningCA(certFile, keyFile string) (*pki.CA, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("read the cluster signing certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("read the cluster signing key: %w", err)
	}
	ca, err := pki.ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("cluster signing CA %s: %w", certFile, err)
	}
	return ca, nil
}
