package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/trustplane/trustplane/apiserver/storage/encryption"
	"github.com/trustplane/trustplane/datadir"
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
		Short: "Replace the AES-GCM write key: add, wait, promote, wait, rewrite every object, verify, remove the old key",
		Long: `Rotate the AES-GCM key of every rule of DIR/encryption-config.yaml whose
first provider is aesgcm, in the steps kube's documentation lists:

 1. add a new random key, key<N>, second: read, not yet written;
 2. wait until every API server on the etcd runs that file (each records
    the hash of the configuration it runs in etcd);
 3. make the new key the write key, and wait again;
 4. rewrite every object of the rotated resources that is not under the
    new key, through the API (--kubeconfig, default DIR/admin.conf): a GET
    and an UPDATE held to its resourceVersion, read again on a conflict, so
    that a concurrent write is never lost or undone; --qps throttles it;
 5. scan etcd: nothing may be left under another key;
 6. remove the old keys, and wait until every server runs that file.

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
			dyn, err := dynamic.NewForConfig(restConfig)
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
				Rewriter:    encryption.APIRewriter{Client: dyn, Versions: versions},
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
	fl.Float32Var(&qps, "qps", 200, "API requests per second at most while rewriting (two per object)")
	fl.IntVar(&workers, "workers", 8, "objects rewritten at once")
	fl.Int64Var(&pageSize, "page-size", encryption.DefaultPageSize, "objects read from etcd per range; the journal records progress after each page")
	fl.DurationVar(&waitTimeout, "wait-timeout", 2*time.Minute, "how long to wait for every API server to load each new configuration")
	return cmd
}
