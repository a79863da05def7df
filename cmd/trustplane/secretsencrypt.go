package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/apiserver/storage/encryption"
	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/etcd"
)

func newSecretsEncryptCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets-encrypt",
		Short: "See which key protects each object in etcd, prove none is in plain text, rotate the key",
		Long: `Inspect encryption at rest as the API server's EncryptionConfiguration
(DIR/encryption-config.yaml) and the raw values in etcd say it is.

The commands read etcd directly, over the API server's etcd identity
(DIR/pki/apiserver-etcd-client.crt and the etcd CA), at the client URLs
the last trustplane up or apiserver on DIR recorded in DIR/etcd-servers,
unless --etcd-servers names others. They read only the prefix of each
value, which names the provider and key (k8s:enc:aesgcm:v1:<key>:...),
and never print a key's material or a value.`,
	}
	cmd.AddCommand(newSecretsEncryptStatusCommand(), newSecretsEncryptVerifyCommand(), newSecretsEncryptRotateCommand())
	return cmd
}

// secretsEncryptFlags are the flags every secrets-encrypt command takes.
type secretsEncryptFlags struct {
	dir         string
	etcdServers []string
	output      string
	// probeKMS asks each KMS v2 plugin whether it still holds the keys
	// objects are stored under (verify).
	probeKMS bool
}

func (f *secretsEncryptFlags) addTo(fs *pflag.FlagSet) {
	fs.StringVar(&f.dir, "dir", datadir.DefaultDir, "data directory: its encryption config, etcd PKI and recorded etcd URLs")
	fs.StringSliceVar(&f.etcdServers, "etcd-servers", nil, "etcd client URLs (default: those recorded in DIR/etcd-servers)")
	fs.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
}

func (f *secretsEncryptFlags) validate() error {
	if f.output != "text" && f.output != "json" {
		return badInput(fmt.Errorf("--output %q: want text or json", f.output))
	}
	return nil
}

// scan reads the configuration and scans etcd.
func (f *secretsEncryptFlags) scan(cmd *cobra.Command) (*encryption.Report, error) {
	l := datadir.Layout{Dir: f.dir}
	cfg, err := encryption.ReadConfig(l.EncryptionConfig())
	if err != nil {
		return nil, badInput(err)
	}
	cli, err := f.etcdClient(cmd, l)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	stored, err := storedResources()
	if err != nil {
		return nil, err
	}
	var probe encryption.KMSProbe
	if f.probeKMS {
		probe = encryption.PluginProbe(cmd.Context())
	}
	report, err := encryption.Status(cmd.Context(), encryption.Scanner{Client: cli}, cfg, groupResources(stored), probe)
	if err != nil {
		return nil, badInput(err)
	}
	return report, nil
}

func (f *secretsEncryptFlags) etcdClient(cmd *cobra.Command, l datadir.Layout) (*clientv3.Client, error) {
	endpoints := f.etcdServers
	if len(endpoints) == 0 {
		var err error
		if endpoints, err = datadir.ReadEtcdServers(l); err != nil {
			return nil, badInput(err)
		}
	}
	cli, err := etcd.NewClient(cmd.Context(), etcd.APIServerClientConfig(l.PKI(), endpoints))
	if err != nil {
		return nil, badInput(err)
	}
	return cli, nil
}

// storedResources are the resources the API server keeps in etcd, with
// the version each is served at.
func storedResources() ([]schema.GroupVersionResource, error) {
	scheme, err := registry.NewScheme()
	if err != nil {
		return nil, err
	}
	reg, err := registry.New(scheme)
	if err != nil {
		return nil, err
	}
	var out []schema.GroupVersionResource
	seen := map[string]bool{}
	for _, res := range reg.Stored() {
		// Keys hold the resource alone: one prefix, one scan.
		if !seen[res.GVR.Resource] {
			seen[res.GVR.Resource] = true
			out = append(out, res.GVR)
		}
	}
	return out, nil
}

// newScanCommand is a command that scans etcd, then reports with show;
// with probeKMS it asks the KMS v2 plugins too (secretsEncryptFlags).
func newScanCommand(use, short, long string, probeKMS bool, show func(out io.Writer, f *secretsEncryptFlags, report *encryption.Report) error) *cobra.Command {
	f := secretsEncryptFlags{probeKMS: probeKMS}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			report, err := f.scan(cmd)
			if err != nil {
				return err
			}
			return show(cmd.OutOrStdout(), &f, report)
		},
	}
	f.addTo(cmd.Flags())
	return cmd
}

func groupResources(gvrs []schema.GroupVersionResource) []schema.GroupResource {
	out := make([]schema.GroupResource, len(gvrs))
	for i, gvr := range gvrs {
		out[i] = gvr.GroupResource()
	}
	return out
}

func newSecretsEncryptStatusCommand() *cobra.Command {
	return newScanCommand("status",
		"Print each encrypted resource's write key, its keys, and how many objects etcd holds under each",
		`For each resource the encryption configuration covers: the key new writes
are stored under, every key of its providers in order, and how many of its
objects etcd holds under each key or in plain text, all read at one etcd
revision. A key that objects are stored under but the configuration does
not have is listed too, marked "not in the configuration".`, false,
		func(out io.Writer, f *secretsEncryptFlags, report *encryption.Report) error {
			report.Problems = nil
			if f.output == "json" {
				return writeJSON(out, report)
			}
			return writeStatus(out, report)
		})
}

func newSecretsEncryptVerifyCommand() *cobra.Command {
	return newScanCommand("verify",
		"Fail if an object of an encrypted resource is in plain text or under a key not in the configuration",
		`Scan etcd as status does and name each object of an encrypted resource
stored in plain text, and each object stored under a key the
configuration does not have (it could not be read), or under a KMS v2
key id that its plugin no longer holds: verify asks each plugin once per
key id found whether it can open a data key sealed under it, as the API
server would. Exit status 1 when there is one, 2 when the scan could not
run or a plugin could not be asked.`, true,
		func(out io.Writer, f *secretsEncryptFlags, report *encryption.Report) error {
			if f.output == "json" {
				if err := writeJSON(out, report); err != nil {
					return err
				}
			} else {
				for _, p := range report.Problems {
					fmt.Fprintln(out, p)
				}
			}
			if n := len(report.Problems); n > 0 {
				return &exitError{code: exitFailed, err: fmt.Errorf("%d objects are not stored as the encryption configuration says", n)}
			}
			if f.output == "text" {
				objects := 0
				for _, r := range report.Resources {
					objects += r.Objects
				}
				fmt.Fprintf(out, "ok: %d objects of %d resources, at etcd revision %d\n", objects, len(report.Resources), report.Revision)
			}
			return nil
		})
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeStatus prints each resource, its keys and counts.
func writeStatus(w io.Writer, report *encryption.Report) error {
	fmt.Fprintf(w, "etcd revision %d\n", report.Revision)
	if len(report.Resources) == 0 {
		fmt.Fprintln(w, "no stored resource is covered by the encryption configuration")
	}
	for _, r := range report.Resources {
		fmt.Fprintf(w, "\n%s (rule %s): %d objects\n", r.Resource, r.Pattern, r.Objects)
		fmt.Fprintf(w, "  write key: %s\n", r.WriteKey)
		keys := make([]string, len(r.Keys))
		for i, k := range r.Keys {
			keys[i] = k.String()
		}
		fmt.Fprintf(w, "  keys: %s\n", strings.Join(keys, ", "))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, c := range r.Counts {
			note := ""
			switch {
			case c.Key == encryption.Plain:
				note = "plain text"
			case !c.InConfig:
				note = "not in the configuration"
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\n", c.Key, c.Count, note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
