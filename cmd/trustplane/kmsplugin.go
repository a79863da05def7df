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
		Short: "Run a KMS v2 plugin whose key-encryption key is a 0600 file",
		Long: `Serve the KMS v2 API (k8s.io/kms) on a Unix socket, as kube-apiserver's
envelope encryption expects of a plugin: each data-encryption key the API
server sends is sealed with AES-256-GCM under the key in --key-file (32
random bytes in base64, mode 0600; trustplane init --encryption kms writes
one). trustplane up runs it itself when the encryption configuration names
DIR/kms.sock; run it alone for an API server that runs alone.`,
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
			p, err := kms.Load(keyFile)
			if err != nil {
				return badInput(err)
			}
			ln, err := kms.Listen(socket)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "KMS plugin serving at unix://%s, key id %s\n", socket, p.KeyID())
			return p.Serve(cmd.Context(), ln)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", dir, "data directory: the defaults of --key-file and --listen")
	cmd.Flags().StringVar(&keyFile, "key-file", "", "the key-encryption key, base64, mode 0600 (default DIR/pki/kms.key)")
	cmd.Flags().StringVar(&listen, "listen", "", "the Unix socket to serve, unix:///path (default unix://DIR/kms.sock)")
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
	p, err := kms.Load(l.KMSKey())
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
