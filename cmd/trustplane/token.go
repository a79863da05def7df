package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/pki"
)

// tokenFlags are the flags every `trustplane token` command takes.
type tokenFlags struct {
	kubeconfig string
	dir        string
}

func (f *tokenFlags) client() (*kubernetes.Clientset, *rest.Config, error) {
	cfg, err := clientConfig(f.kubeconfig, f.dir)
	if err != nil {
		return nil, nil, err
	}
	cfg.UserAgent = "trustplane-token/" + version
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	return cs, cfg, nil
}

func newTokenCommand() *cobra.Command {
	f := tokenFlags{dir: datadir.DefaultDir}
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and delete bootstrap tokens, with which a node asks for its certificate",
		Long: `Bootstrap tokens are kube's: Secrets of type bootstrap.kubernetes.io/token
named bootstrap-token-<id> in kube-system. The token <id>.<secret> is the user
system:bootstrap:<id> in the group system:bootstrappers (and the extra groups
of --groups) while its Secret exists and has not expired; that user may only
create CertificateSigningRequests and read its own.`,
	}
	flags := cmd.PersistentFlags()
	flags.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default $KUBECONFIG, else admin.conf in --dir)")
	flags.StringVar(&f.dir, "dir", f.dir, "data directory whose admin.conf is the default kubeconfig")
	cmd.AddCommand(newTokenCreateCommand(&f), newTokenListCommand(&f), newTokenDeleteCommand(&f))
	return cmd
}

func newTokenCreateCommand(f *tokenFlags) *cobra.Command {
	var (
		ttl         time.Duration
		description string
		groups      []string
	)
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a bootstrap token and print it with the CA's pin",
		Long: `Create a bootstrap token and print it, once: it is not shown again. Beside it
is the pin of the cluster CA, sha256:<hex> of its public key (kubeadm's
--discovery-token-ca-cert-hash), with which a joining node checks the CA it is
given before trusting it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ttl < 0 {
				return fmt.Errorf("--ttl %s: want 0 (never expires) or more", ttl)
			}
			for _, g := range groups {
				if err := bootstraputil.ValidateBootstrapGroupName(g); err != nil {
					return fmt.Errorf("--groups: %w", err)
				}
			}
			cs, cfg, err := f.client()
			if err != nil {
				return err
			}
			pin, err := caPin(cfg)
			if err != nil {
				return err
			}
			token, expires, err := createBootstrapToken(cmd.Context(), cs, ttl, description, groups)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "token: %s\nca-cert-hash: %s\n", token, pin)
			if ttl > 0 {
				fmt.Fprintf(out, "expires: %s\n", expires.Format(time.RFC3339))
			} else {
				fmt.Fprintln(out, "expires: never")
			}
			return nil
		},
	}
	flags := cmd.Flags()
	flags.DurationVar(&ttl, "ttl", 24*time.Hour, "how long the token is valid; 0 never expires")
	flags.StringVar(&description, "description", "", "what the token is for, shown by token list")
	flags.StringSliceVar(&groups, "groups", nil, "extra groups of the token's user, each system:bootstrappers:…")
	return cmd
}

// createBootstrapToken creates a bootstrap token Secret in kube-system
// that lives for ttl (0: forever) and returns the token and its expiry.
func createBootstrapToken(ctx context.Context, cs kubernetes.Interface, ttl time.Duration, description string, groups []string) (string, time.Time, error) {
	token, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("generate token: %w", err)
	}
	id, secret, _ := strings.Cut(token, ".")
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraputil.BootstrapTokenSecretName(id), Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			bootstrapapi.BootstrapTokenIDKey:               []byte(id),
			bootstrapapi.BootstrapTokenSecretKey:           []byte(secret),
			bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
		},
	}
	var expires time.Time
	if ttl > 0 {
		expires = time.Now().Add(ttl).UTC().Truncate(time.Second)
		s.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(expires.Format(time.RFC3339))
	}
	if description != "" {
		s.Data[bootstrapapi.BootstrapTokenDescriptionKey] = []byte(description)
	}
	if len(groups) > 0 {
		s.Data[bootstrapapi.BootstrapTokenExtraGroupsKey] = []byte(strings.Join(groups, ","))
	}
	if _, err := cs.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		// The error names the Secret, never the token.
		return "", time.Time{}, fmt.Errorf("create token %s: %w", id, err)
	}
	return token, expires, nil
}

// caPin is kubeadm's pin of the CA the kubeconfig trusts: sha256 of the
// certificate's SubjectPublicKeyInfo, in hex.
func caPin(cfg *rest.Config) (string, error) {
	data := cfg.CAData
	if len(data) == 0 && cfg.CAFile != "" {
		var err error
		if data, err = os.ReadFile(cfg.CAFile); err != nil {
			return "", fmt.Errorf("read CA: %w", err)
		}
	}
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "CERTIFICATE" {
		return "", errors.New("the kubeconfig names no CA certificate to pin")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return "", fmt.Errorf("parse CA: %w", err)
	}
	return pki.Pin(c), nil
}

func newTokenListCommand(f *tokenFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the bootstrap tokens by id (their secrets are not shown)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cs, _, err := f.client()
			if err != nil {
				return err
			}
			list, err := cs.CoreV1().Secrets(metav1.NamespaceSystem).List(cmd.Context(), metav1.ListOptions{
				FieldSelector: fields.OneTermEqualSelector("type", string(bootstrapapi.SecretTypeBootstrapToken)).String(),
			})
			if err != nil {
				return fmt.Errorf("list tokens: %w", err)
			}
			return writeTokens(cmd.OutOrStdout(), list.Items, time.Now())
		},
	}
}

// writeTokens writes the tokens of secrets as a table, never their secret
// part.
func writeTokens(w io.Writer, secrets []corev1.Secret, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "ID\tTTL\tEXPIRES\tUSAGES\tDESCRIPTION\tEXTRA GROUPS")
	slices.SortFunc(secrets, func(a, b corev1.Secret) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range secrets {
		id := string(s.Data[bootstrapapi.BootstrapTokenIDKey])
		ttl, expires := "<forever>", "<never>"
		if exp := string(s.Data[bootstrapapi.BootstrapTokenExpirationKey]); exp != "" {
			expires = exp
			t, err := time.Parse(time.RFC3339, exp)
			switch {
			case err != nil:
				ttl = "<invalid>"
			case !now.Before(t):
				ttl = "<expired>"
			default:
				ttl = t.Sub(now).Round(time.Second).String()
			}
		}
		var usages []string
		for k, v := range s.Data {
			if u, ok := strings.CutPrefix(k, bootstrapapi.BootstrapTokenUsagePrefix); ok && string(v) == "true" {
				usages = append(usages, u)
			}
		}
		slices.Sort(usages)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", id, ttl, expires, orNone(strings.Join(usages, ",")),
			orNone(string(s.Data[bootstrapapi.BootstrapTokenDescriptionKey])), orNone(string(s.Data[bootstrapapi.BootstrapTokenExtraGroupsKey])))
	}
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func newTokenDeleteCommand(f *tokenFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID|TOKEN...",
		Short: "Delete bootstrap tokens, given by id or whole",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cs, _, err := f.client()
			if err != nil {
				return err
			}
			var errs []error
			for _, arg := range args {
				if err := deleteToken(cmd.Context(), cs, arg); err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "bootstrap token %q deleted\n", tokenID(arg))
			}
			return errors.Join(errs...)
		},
	}
}

// tokenID is the id of arg, a token or its id; only the id is ever
// printed.
func tokenID(arg string) string {
	id, _, _ := strings.Cut(arg, ".")
	return id
}

func deleteToken(ctx context.Context, cs kubernetes.Interface, arg string) error {
	id := tokenID(arg)
	if !bootstraputil.IsValidBootstrapTokenID(id) {
		return fmt.Errorf("%q is not a bootstrap token id", id)
	}
	err := cs.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, bootstraputil.BootstrapTokenSecretName(id), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("bootstrap token %q not found", id)
	}
	if err != nil {
		return fmt.Errorf("delete token %s: %w", id, err)
	}
	return nil
}
