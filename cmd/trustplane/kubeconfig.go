package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/pki"
	"github.com/trustplane/trustplane/rbac"
)

// systemNamePrefix starts the names Kubernetes reserves for its own
// identities and groups (system:kube-scheduler, system:node:<name>,
// system:serviceaccount:..., system:authenticated, system:masters).
const systemNamePrefix = "system:"

// defaultKubeconfigTTL is short because a client certificate cannot be
// revoked: it is valid until it expires, whatever happens to its holder.
const defaultKubeconfigTTL = 24 * time.Hour

// kubeconfigFlags are the flags of `trustplane kubeconfig`.
type kubeconfigFlags struct {
	dir         string
	user        string
	groups      []string
	ttl         time.Duration
	out         string
	server      string
	allowSystem bool
	allowAdmin  bool
}

// validate checks what can be checked without reading the data directory,
// and reports every problem at once, each naming its flag.
func (f *kubeconfigFlags) validate() error {
	var errs []error
	if f.dir == "" {
		errs = append(errs, errors.New("--dir must not be empty"))
	}
	switch {
	case f.user == "":
		errs = append(errs, errors.New("--user is required"))
	case strings.IndexFunc(f.user, unicode.IsControl) >= 0:
		errs = append(errs, fmt.Errorf("--user %q holds a control character", f.user))
	case strings.HasPrefix(f.user, systemNamePrefix) && !f.allowSystem:
		errs = append(errs, fmt.Errorf("--user %q is a system name, reserved for Kubernetes identities; pass --allow-system to issue it anyway", f.user))
	}
	if f.out == "" && f.user != "" && !isPlainFileName(f.user) {
		errs = append(errs, fmt.Errorf("--user %q cannot name a file in --dir; give --out", f.user))
	}
	for _, g := range f.groups {
		switch {
		case g == "":
			errs = append(errs, errors.New("--group must not be empty"))
		case strings.IndexFunc(g, unicode.IsControl) >= 0:
			errs = append(errs, fmt.Errorf("--group %q holds a control character", g))
		case strings.HasPrefix(g, systemNamePrefix) && !f.allowSystem:
			errs = append(errs, fmt.Errorf("--group %q is a system group, reserved for Kubernetes; pass --allow-system to issue it anyway", g))
		case g == rbac.ClusterAdminsGroup && !f.allowAdmin:
			errs = append(errs, fmt.Errorf("--group %q makes its holder cluster-admin; pass --allow-admin to issue it anyway", g))
		}
	}
	if f.ttl <= 0 {
		errs = append(errs, fmt.Errorf("--ttl %s must be positive", f.ttl))
	}
	if f.server != "" {
		if u, err := url.Parse(f.server); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--server %q: want an https:// URL", f.server))
		}
	}
	return errors.Join(errs...)
}

// isPlainFileName reports whether name can be used as a file name inside a
// directory without leaving it or hiding.
func isPlainFileName(name string) bool {
	return name != "" && !strings.HasPrefix(name, ".") && !strings.ContainsAny(name, `/\`)
}

// outPath is where the kubeconfig goes: --out, else DIR/<user>.conf.
func (f *kubeconfigFlags) outPath() string {
	if f.out != "" {
		return f.out
	}
	return datadir.Layout{Dir: f.dir}.Kubeconfig(f.user)
}

func newKubeconfigCommand() *cobra.Command {
	f := kubeconfigFlags{dir: datadir.DefaultDir, ttl: defaultKubeconfigTTL}
	cmd := &cobra.Command{
		Use:   "kubeconfig --user NAME [--group GROUP]... [--ttl DURATION]",
		Short: "Issue a client certificate from the cluster CA and write a kubeconfig for it",
		Long: `Issue a client certificate for one user from the cluster CA in DIR/pki, and
write a kubeconfig holding it, its key and the CA to --out (default
DIR/<user>.conf), mode 0600. An existing file is never overwritten. It prints
the path it wrote.

The user is the certificate's common name and each --group one of its
organizations; the API server takes them as they are, so what the user may do
is whatever RBAC grants that name and those groups (and system:authenticated).
The certificate is for client authentication only.

A certificate cannot be revoked: it is valid until it expires. Keep --ttl
short; to cut access before then, remove the RBAC bindings of the user and
its groups.

Names starting with "system:" belong to Kubernetes' own identities and groups
and are refused without --allow-system; the group ` + rbac.ClusterAdminsGroup + `
is cluster-admin and is refused without --allow-admin.`,
		Example: `  trustplane kubeconfig --user alice --group dev --ttl 8h
  trustplane kubeconfig --user ci --out ci.conf --server https://cp.example.com:6443`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			path, err := writeUserKubeconfig(&f, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), path)
			return nil
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&f.dir, "dir", f.dir, "data directory holding the cluster CA (pki/ca.crt, pki/ca.key) and admin.conf")
	flags.StringVar(&f.user, "user", "", "user name: the certificate's common name (required)")
	flags.StringArrayVar(&f.groups, "group", nil, "group: a certificate organization (repeatable)")
	flags.DurationVar(&f.ttl, "ttl", f.ttl, "validity of the certificate; at most what remains of the CA's")
	flags.StringVar(&f.out, "out", "", "kubeconfig to write (default DIR/<user>.conf); must not exist")
	flags.StringVar(&f.server, "server", "", "API server URL (default: the server in DIR/admin.conf)")
	flags.BoolVar(&f.allowSystem, "allow-system", false, `allow a user or group name starting with "system:"`)
	flags.BoolVar(&f.allowAdmin, "allow-admin", false, "allow the group "+rbac.ClusterAdminsGroup)
	return cmd
}

// writeUserKubeconfig issues the certificate f describes, valid from now,
// and writes its kubeconfig. It returns the path written. Flags are
// validated.
func writeUserKubeconfig(f *kubeconfigFlags, now time.Time) (string, error) {
	l := datadir.Layout{Dir: f.dir}
	path := f.outPath()
	// Checked now for a clear error before anything is issued; the write
	// itself refuses an existing file too, so a race cannot overwrite one.
	if _, err := os.Lstat(path); err == nil {
		return "", fmt.Errorf("--out %s exists; refusing to overwrite it", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("--out %s: %w", path, err)
	}

	server := f.server
	if server == "" {
		var err error
		if server, err = kubeconfigServer(l.Kubeconfig("admin")); err != nil {
			return "", fmt.Errorf("find the API server URL (or give --server): %w", err)
		}
	}

	ca, err := pki.LoadCA(l.PKI(), pki.ClusterCAName)
	if err != nil {
		return "", fmt.Errorf("load the cluster CA from --dir %s: %w", f.dir, err)
	}
	// A leaf that outlives its CA would stop verifying before it expires;
	// refuse it rather than issue a certificate that lies about its validity.
	if remaining := ca.Cert.NotAfter.Sub(now); f.ttl > remaining {
		return "", fmt.Errorf("--ttl %s exceeds what remains of the cluster CA's validity (%s, until %s)",
			f.ttl, remaining.Truncate(time.Second), ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	}

	certPEM, keyPEM, err := ca.Issue(pki.Request{
		CommonName:    f.user,
		Organizations: uniqueStrings(f.groups),
		Profile:       pki.Client,
		Validity:      f.ttl,
	})
	if err != nil {
		return "", err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["trustplane"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca.CertPEM}
	cfg.AuthInfos[f.user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[f.user+"@trustplane"] = &clientcmdapi.Context{Cluster: "trustplane", AuthInfo: f.user}
	cfg.CurrentContext = f.user + "@trustplane"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", fmt.Errorf("encode kubeconfig: %w", err)
	}
	if err := pki.WriteFile(path, data, 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("--out %s exists; refusing to overwrite it", path)
		}
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// kubeconfigServer returns the server URL of the current context of the
// kubeconfig at path.
func kubeconfigServer(path string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return "", fmt.Errorf("%s: no current context", path)
	}
	cluster, ok := cfg.Clusters[ctx.Cluster]
	if !ok || cluster.Server == "" {
		return "", fmt.Errorf("%s: context %q has no cluster with a server", path, cfg.CurrentContext)
	}
	return cluster.Server, nil
}

// uniqueStrings returns s without repeats, in first-seen order.
func uniqueStrings(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
