package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/trustplane/trustplane/apiserver/storage/encryption"
	"github.com/trustplane/trustplane/datadir"
)

// The defaults of rotate's throttle. The rewrite is bound by the API
// server's CPU: a rewrite costs it about as much as any update (the write
// path, admission, audit, etcd), so a 2-core machine rewrites about as
// fast as it serves updates. defaultRotateWorkers bounds what the rotation
// holds of the server: 16 requests in flight of its 600 (enough for etcd
// to batch its commits; fewer leave the server waiting on fsync), so
// other clients' requests keep their turn. defaultRotateQPS bounds the
// rate where the server is bigger: above what a small machine does, so
// that there the workers are the bound, and a cap of new etcd revisions
// per second on a large one.
const (
	defaultRotateWorkers = 16
	defaultRotateQPS     = 2000
)

func newSecretsEncryptRotateCommand() *cobra.Command {
	var f secretsEncryptFlags
	var (
		kubeconfig  string
		qps         float32
		workers     int
		pageSize    int64
		waitTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Replace the AES-GCM write key (add, wait, promote, wait, rewrite every object, verify, remove the old key), or rewrite under a KMS plugin's new key",
		Long: `Rotate the AES-GCM key of every rule of DIR/encryption-config.yaml whose
first provider is aesgcm, in the steps kube's documentation lists:

 1. add a new random key, key<N>, second: read, not yet written;
 2. wait until every API server on the etcd runs that file (each records
    the hash of the configuration it runs in etcd);
 3. make the new key the write key, and wait again;
 4. rewrite every object of the rotated resources that is not under the
    new key, through the API (--kubeconfig, default DIR/admin.conf): the
    scan of etcd gives each object's resourceVersion, and one PATCH that
    changes nothing, held to it, makes the API server write the object
    again under the new key; an object that changed since is read again
    from etcd, and rewritten unless the write that changed it already
    used the new key, so that a concurrent write is never lost or undone.
    --workers bounds the requests in flight and --qps their rate;
 5. scan etcd: nothing may be left under another key;
 6. remove the old keys, and wait until every server runs that file.

With no rule whose first provider is aesgcm, it rotates the rules whose
first provider is KMS v2 (one plugin's) to the key id the plugin's Status
reports now, after "trustplane kms-plugin rotate-key": it waits until the
API server writes under that key id (it asks the plugin every minute; up
to --wait-timeout), rewrites every object not under it as in step 4, and
scans as in step 5. The plugin's old keys are then its own to remove
(trustplane kms-plugin remove-key).

The command must run where the API servers read the file from. A journal
in etcd (/registry/trustplane.io/encryption-rotation) records each step and
how far the rewrite went: a rotation that is stopped, even killed,
continues where it was on the next run. The journal and the output hold
key names, never key material.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var errs []error
			if qps <= 0 {
				errs = append(errs, fmt.Errorf("--qps %v must be positive", qps))
			}
			if workers <= 0 {
				errs = append(errs, fmt.Errorf("--workers %d must be positive", workers))
			}
			if pageSize <= 0 {
				errs = append(errs, fmt.Errorf("--page-size %d must be positive", pageSize))
			}
			if waitTimeout <= 0 {
				errs = append(errs, fmt.Errorf("--wait-timeout %s must be positive", waitTimeout))
			}
			if err := errors.Join(errs...); err != nil {
				return badInput(err)
			}
			l := datadir.Layout{Dir: f.dir}
			restConfig, err := clientConfig(kubeconfig, f.dir)
			if err != nil {
				return badInput(err)
			}
			restConfig.QPS, restConfig.Burst = qps, max(1, int(qps))
			md, err := metadata.NewForConfig(restConfig)
			if err != nil {
				return badInput(err)
			}
			cli, err := f.etcdClient(cmd, l)
			if err != nil {
				return err
			}
			defer cli.Close()
			stored, err := storedResources()
			if err != nil {
				return err
			}
			versions := map[schema.GroupResource]string{}
			for _, gvr := range stored {
				versions[gvr.GroupResource()] = gvr.Version
			}
			r := &encryption.Rotation{
				ConfigPath:  l.EncryptionConfig(),
				Etcd:        cli,
				Scanner:     encryption.Scanner{Client: cli, PageSize: pageSize},
				Rewriter:    encryption.APIRewriter{Client: md, Versions: versions},
				Stored:      groupResources(stored),
				Workers:     workers,
				WaitTimeout: waitTimeout,
				Progress:    cmd.OutOrStdout(),
			}
			return r.Run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", datadir.DefaultDir, "data directory: its encryption config, etcd PKI and recorded etcd URLs")
	fl.StringSliceVar(&f.etcdServers, "etcd-servers", nil, "etcd client URLs (default: those recorded in DIR/etcd-servers)")
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the identity that rewrites the objects (default: $KUBECONFIG, else DIR/admin.conf)")
	fl.Float32Var(&qps, "qps", defaultRotateQPS, "API requests per second at most while rewriting, one per object")
	fl.IntVar(&workers, "workers", defaultRotateWorkers, "objects rewritten at once: the API requests the rotation holds in flight")
	fl.Int64Var(&pageSize, "page-size", encryption.DefaultPageSize, "objects read from etcd per range; the journal records progress after each page")
	fl.DurationVar(&waitTimeout, "wait-timeout", 2*time.Minute, "how long to wait for every API server to load each new configuration")
	return cmd
}
