package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/kms"
)

func newKMSPluginCommand() *cobra.Command {
	dir := datadir.DefaultDir
	var keyFile, listen string
	cmd := &cobra.Command{
		Use:   "kms-plugin",
		Short: "Run a KMS v2 plugin whose key-encryption keys are a 0600 file",
		Long: `Serve the KMS v2 API (k8s.io/kms) on a Unix socket, as kube-apiserver's
envelope encryption expects of a plugin: each data-encryption key the API
server sends is sealed with AES-256-GCM under the first key of --key-file,
and every key of the file opens what it sealed. The file holds one key a
line, 32 random bytes in base64, the write key first, mode 0600
(trustplane init --encryption kms writes one). The plugin reads the file
again when it changes: "kms-plugin rotate-key" puts a new write key first,
and Status reports its key id, from which the API server learns to make a
new data key (within a minute: kube's Status poll). trustplane up runs the
plugin itself when the encryption configuration names DIR/kms.sock; run it
alone for an API server that runs alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l := datadir.Layout{Dir: dir}
			if keyFile == "" {
				keyFile = l.KMSKey()
			}
			socket := l.KMSSocket()
			if listen != "" {
				if !strings.HasPrefix(listen, "unix://") {
					return badInput(fmt.Errorf("--listen %q: want unix:///path", listen))
				}
				socket = strings.TrimPrefix(listen, "unix://")
			}
			p, err := kms.Load(keyFile, newLogger())
			if err != nil {
				return badInput(err)
			}
			ln, err := kms.Listen(socket)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "KMS plugin serving at unix://%s, key id %s (%d keys)\n", socket, p.KeyID(), len(p.KeyIDs()))
			return p.Serve(cmd.Context(), ln)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", dir, "data directory: the defaults of --key-file and --listen")
	cmd.Flags().StringVar(&keyFile, "key-file", "", "the key-encryption keys, base64, one a line, the write key first, mode 0600 (default DIR/pki/kms.key)")
	cmd.Flags().StringVar(&listen, "listen", "", "the Unix socket to serve, unix:///path (default unix://DIR/kms.sock)")
	cmd.AddCommand(newKMSRotateKeyCommand(), newKMSRemoveKeyCommand())
	return cmd
}

// kmsKeyFile is the --key-file of the key commands, DIR/pki/kms.key by
// default.
func kmsKeyFile(cmd *cobra.Command, dir, keyFile *string) {
	*dir = datadir.DefaultDir
	cmd.Flags().StringVar(dir, "dir", *dir, "data directory: the default of --key-file")
	cmd.Flags().StringVar(keyFile, "key-file", "", "the KMS plugin's key file (default DIR/pki/kms.key)")
}

func newKMSRotateKeyCommand() *cobra.Command {
	var dir, keyFile string
	cmd := &cobra.Command{
		Use:   "rotate-key",
		Short: "Put a new key-encryption key first in the KMS plugin's key file; the others stay, to decrypt",
		Long: `Generate a new random key-encryption key and put it first in the key file,
which makes it the key the plugin seals new data keys with; the keys that
were there stay after it, so that what they sealed still opens. The file
is replaced at once, 0600. A running plugin reloads it within 2 seconds
and reports the new key id in its Status; the API server polls Status
every minute and then makes a new data key under it. Objects written
before stay under the old key until rewritten: secrets-encrypt status
counts the objects under each key id. Once none is left under an old key,
remove it with remove-key. It prints the new key id; never a key.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if keyFile == "" {
				keyFile = datadir.Layout{Dir: dir}.KMSKey()
			}
			id, err := kms.RotateKeyFile(keyFile)
			if err != nil {
				return badInput(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "new write key %s in %s\n", id, keyFile)
			return nil
		},
	}
	kmsKeyFile(cmd, &dir, &keyFile)
	return cmd
}

func newKMSRemoveKeyCommand() *cobra.Command {
	var keyFile, id string
	var force bool
	var f secretsEncryptFlags
	cmd := &cobra.Command{
		Use:   "remove-key --key-id ID",
		Short: "Remove an old key-encryption key from the KMS plugin's key file, once no object is under it",
		Long: `Remove the key of --key-id from the key file; never the write key. What it
sealed can no longer be opened once the API server no longer holds the
data key in its cache (a restart at the latest), so it first scans etcd
as secrets-encrypt status does (DIR's etcd, --etcd-servers) and refuses
while an object is stored under that key id: rewrite them first
(trustplane secrets-encrypt rotate). --force removes it unchecked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id == "" {
				return badInput(fmt.Errorf("--key-id is required"))
			}
			if keyFile == "" {
				keyFile = datadir.Layout{Dir: f.dir}.KMSKey()
			}
			if !force {
				report, err := f.scan(cmd)
				if err != nil {
					return fmt.Errorf("cannot check that no object is under key %s (--force removes it unchecked): %w", id, err)
				}
				var under []string
				for _, r := range report.Resources {
					for _, c := range r.Counts {
						if c.Key.KeyID == id && c.Count > 0 {
							under = append(under, fmt.Sprintf("%d of %s", c.Count, r.Resource))
						}
					}
				}
				if len(under) > 0 {
					return &exitError{code: exitFailed, err: fmt.Errorf("objects are still stored under key %s (%s) at etcd revision %d: rewrite them first (trustplane secrets-encrypt rotate), or --force", id, strings.Join(under, ", "), report.Revision)}
				}
			}
			if err := kms.RemoveKey(keyFile, id); err != nil {
				return badInput(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed key %s from %s\n", id, keyFile)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", datadir.DefaultDir, "data directory: the default of --key-file, the encryption config and the etcd it scans")
	fl.StringSliceVar(&f.etcdServers, "etcd-servers", nil, "etcd client URLs (default: those recorded in DIR/etcd-servers)")
	fl.StringVar(&keyFile, "key-file", "", "the KMS plugin's key file (default DIR/pki/kms.key)")
	fl.StringVar(&id, "key-id", "", "the id of the key to remove, as rotate-key, the plugin's log and secrets-encrypt status name it")
	fl.BoolVar(&force, "force", false, "remove the key without scanning etcd for objects under it")
	return cmd
}

// startKMSPlugin runs the KMS plugin of the data directory when its
// encryption configuration names the plugin's socket, DIR/kms.sock, until
// the returned stop is called. It returns once the socket listens: the API
// server's loader may call it.
func startKMSPlugin(ctx context.Context, l datadir.Layout, logger *slog.Logger, failed func()) (stop func(), err error) {
	sockets, err := kms.Sockets(l.EncryptionConfig())
	if err != nil {
		return nil, err
	}
	socket, err := filepath.Abs(l.KMSSocket())
	if err != nil {
		return nil, err
	}
	if !slices.Contains(sockets, socket) {
		return func() {}, nil
	}
	p, err := kms.Load(l.KMSKey(), logger)
	if err != nil {
		return nil, err
	}
	ln, err := kms.Listen(socket)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Serve(ctx, ln); err != nil {
			logger.Error("KMS plugin failed; stopping", "err", err)
			failed()
		}
	}()
	logger.Info("KMS plugin serving", "socket", socket, "key_id", p.KeyID())
	return func() {
		cancel()
		<-done
	}, nil
}
