package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/utils/clock"
)

// Config is one node agent's configuration.
type Config struct {
	// Name is the Node's name; its identity is system:node:<Name>.
	Name string
	// Server is the API server's URL, and CA the PEM of the CA it is
	// trusted under (DiscoverCA finds it from a pin).
	Server string
	CA     []byte
	// Token is the bootstrap token the first CSR is made with; empty
	// when Dir already holds a certificate.
	Token string
	// Dir holds the node's key and certificates, created 0700.
	Dir string
	// CertificateLifetime is the lifetime the node's CSRs ask for
	// (expirationSeconds); zero leaves it to the signer.
	CertificateLifetime time.Duration

	// Capacity is what the node reports it has; Allocatable the same.
	Capacity corev1.ResourceList
	// Labels are added to the labels every node has (hostname, os,
	// arch); Taints are registered with the Node.
	Labels map[string]string
	Taints []corev1.Taint
	// Address is the node's InternalIP.
	Address net.IP
	// PodCIDR is the range the node gives its pods' addresses from.
	PodCIDR *net.IPNet
	// KubeletVersion is the version the node reports.
	KubeletVersion string

	// LeaseDuration is its Lease's duration, renewed a quarter of it
	// apart (kubelet: 40 s).
	LeaseDuration time.Duration
	// StatusUpdateFrequency is how often it compares its status with
	// the Node's (kubelet: 10 s), StatusReportFrequency the longest it
	// goes without writing it (kubelet: 5 min).
	StatusUpdateFrequency, StatusReportFrequency time.Duration

	// QPS and Burst limit its clients (kubelet: 50, 100).
	QPS   float32
	Burst int

	Logger *slog.Logger
}

// Defaults are the kubelet's defaults, where it has them.
func (c *Config) defaults() {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 40 * time.Second
	}
	if c.StatusUpdateFrequency == 0 {
		c.StatusUpdateFrequency = 10 * time.Second
	}
	if c.StatusReportFrequency == 0 {
		c.StatusReportFrequency = 5 * time.Minute
	}
	if c.QPS == 0 {
		c.QPS, c.Burst = 50, 100
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("no node name"))
	}
	if c.Server == "" || len(c.CA) == 0 {
		errs = append(errs, errors.New("no API server and CA"))
	}
	if c.Dir == "" {
		errs = append(errs, errors.New("no directory for the node's certificates"))
	}
	if c.PodCIDR == nil || c.Address == nil {
		errs = append(errs, errors.New("no pod CIDR and address"))
	}
	if c.LeaseDuration < time.Second || c.StatusUpdateFrequency <= 0 || c.StatusReportFrequency < c.StatusUpdateFrequency {
		errs = append(errs, fmt.Errorf("lease duration %s, status update %s and report %s frequencies: want ≥1s, >0 and ≥ the update frequency", c.LeaseDuration, c.StatusUpdateFrequency, c.StatusReportFrequency))
	}
	if c.QPS <= 0 || c.Burst <= 0 {
		errs = append(errs, fmt.Errorf("QPS %g and burst %d must be positive", c.QPS, c.Burst))
	}
	return errors.Join(errs...)
}

// Run joins the node to the cluster, if it has no certificate yet, and
// runs it until ctx is done: its Node, its Lease, its pods.
func Run(ctx context.Context, c Config) error {
	c.defaults()
	if err := c.validate(); err != nil {
		return fmt.Errorf("node %s: %w", c.Name, err)
	}
	log := c.Logger.With("node", c.Name)
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return fmt.Errorf("node %s: %w", c.Name, err)
	}
	base := &rest.Config{
		Host:            c.Server,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CA},
		QPS:             c.QPS,
		Burst:           c.Burst,
		UserAgent:       "trustplane-node/" + c.Name,
	}
	creds, err := newCredentials(ctx, &c, base)
	if err != nil {
		return err
	}
	defer creds.stop()
	if creds.manager.Current() == nil {
		log.Info("requesting a node certificate with the bootstrap token")
	}
	if err := creds.start(ctx); err != nil {
		return fmt.Errorf("node %s: %w", c.Name, err)
	}
	log.Info("node certificate in use", "expires", creds.manager.Current().Leaf.NotAfter.UTC().Format(time.RFC3339))
	cs, err := kubernetes.NewForConfig(creds.config(base))
	if err != nil {
		return fmt.Errorf("node %s: %w", c.Name, err)
	}
	a := &agent{c: &c, cs: cs, log: log, clock: clock.RealClock{}}
	if err := a.register(ctx); err != nil {
		return err
	}
	return a.run(ctx)
}

// agent is one running node.
type agent struct {
	c     *Config
	cs    kubernetes.Interface
	log   *slog.Logger
	clock clock.Clock

	mu sync.Mutex
	// reported is when the node last wrote its status.
	reported time.Time
}

// register creates the node's Node, or takes over the one it made
// before, as the kubelet's registration does.
func (a *agent) register(ctx context.Context) error {
	want := a.node()
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 8, Cap: 7 * time.Second}, func(ctx context.Context) (bool, error) {
		_, err := a.cs.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
		switch {
		case err == nil:
			a.log.Info("node registered")
			return true, nil
		case apierrors.IsAlreadyExists(err):
			a.log.Info("node registered before; taking it over")
			return true, nil
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			return false, err
		default:
			a.log.Warn("register the node", "err", err)
			return false, nil
		}
	})
	if err != nil {
		return fmt.Errorf("node %s: register: %w", a.c.Name, err)
	}
	return a.writeStatus(ctx)
}

// node is the Node as the agent registers it.
func (a *agent) node() *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname:   a.c.Name,
		corev1.LabelOSStable:   runtime.GOOS,
		corev1.LabelArchStable: runtime.GOARCH,
	}
	for k, v := range a.c.Labels {
		labels[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: a.c.Name, Labels: labels},
		Spec: corev1.NodeSpec{
			PodCIDR:  a.c.PodCIDR.String(),
			PodCIDRs: []string{a.c.PodCIDR.String()},
			Taints:   a.c.Taints,
		},
		Status: a.status(nil),
	}
}

// status is the node's status, keeping the transition times of the
// conditions in old that have not changed.
func (a *agent) status(old *corev1.NodeStatus) corev1.NodeStatus {
	now := metav1.NewTime(a.clock.Now())
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: message, LastHeartbeatTime: now, LastTransitionTime: now}
		if old != nil {
			for _, o := range old.Conditions {
				if o.Type == t && o.Status == s {
					c.LastTransitionTime = o.LastTransitionTime
				}
			}
		}
		return c
	}
	return corev1.NodeStatus{
		Capacity:    a.c.Capacity.DeepCopy(),
		Allocatable: a.c.Capacity.DeepCopy(),
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: a.c.Address.String()},
			{Type: corev1.NodeHostName, Address: a.c.Name},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion:          a.c.KubeletVersion,
			OperatingSystem:         runtime.GOOS,
			Architecture:            runtime.GOARCH,
			ContainerRuntimeVersion: "none://trustplane",
		},
	}
}

// run heartbeats the node and runs its pods until ctx is done.
func (a *agent) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	leaseSeconds := int32(a.c.LeaseDuration / time.Second)
	leases := lease.NewController(a.clock, a.cs, a.c.Name, leaseSeconds, nil, a.c.LeaseDuration/4,
		a.c.Name, corev1.NamespaceNodeLease, a.ownLease)
	pods, err := newPodWorker(a)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { leases.Run(ctx) })
	wg.Go(func() { pods.run(ctx) })
	wg.Go(func() {
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			if err := a.syncStatus(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn("node status", "err", err)
			}
		}, a.c.StatusUpdateFrequency)
	})
	wg.Wait()
	return nil
}

// ownLease makes the Node the owner of its Lease, as the kubelet does,
// so that the Lease goes with the Node.
func (a *agent) ownLease(l *coordinationv1.Lease) error {
	if len(l.OwnerReferences) > 0 {
		return nil
	}
	// The lease controller gives no context: the read is bounded by the
	// renewal interval instead.
	ctx, cancel := context.WithTimeout(context.Background(), a.c.LeaseDuration/4)
	defer cancel()
	n, err := a.cs.CoreV1().Nodes().Get(ctx, a.c.Name, metav1.GetOptions{})
	if err != nil {
		// The lease controller tries again on the next renewal.
		return nil
	}
	l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}
	return nil
}

// syncStatus writes the node's status when the Node says otherwise (a
// node lifecycle controller marked it Unknown, say) or when it was last
// written StatusReportFrequency ago.
func (a *agent) syncStatus(ctx context.Context) error {
	n, err := a.cs.CoreV1().Nodes().Get(ctx, a.c.Name, metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return err
	}
	a.mu.Lock()
	due := a.clock.Since(a.reported) >= a.c.StatusReportFrequency
	a.mu.Unlock()
	if !due && !statusDiffers(&n.Status, a.status(&n.Status)) {
		return nil
	}
	return a.writeStatus(ctx)
}

// statusDiffers reports whether the Node's status says something the
// node would not: heartbeat times aside.
func statusDiffers(have *corev1.NodeStatus, want corev1.NodeStatus) bool {
	strip := func(s corev1.NodeStatus) corev1.NodeStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		s.Images, s.VolumesAttached, s.VolumesInUse, s.Config, s.Features, s.RuntimeHandlers = nil, nil, nil, nil, nil, nil
		s.NodeInfo.MachineID, s.NodeInfo.SystemUUID, s.NodeInfo.BootID = "", "", ""
		return s
	}
	return !apiequality.Semantic.DeepEqual(strip(*have), strip(want))
}

// writeStatus writes the node's status on the latest Node.
func (a *agent) writeStatus(ctx context.Context) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := a.cs.CoreV1().Nodes().Get(ctx, a.c.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status = a.status(&n.Status)
		_, err = a.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("node %s: status: %w", a.c.Name, err)
	}
	a.mu.Lock()
	a.reported = a.clock.Now()
	a.mu.Unlock()
	return nil
}

// podInformers are the agent's informers over the pods bound to it.
func (a *agent) podInformers() informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(a.cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", a.c.Name).String()
	}))
}
