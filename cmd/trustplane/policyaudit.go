package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/dynamic"

	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/admission/opa/policytest"
	"github.com/trustplane/trustplane/datadir"
)

// auditUser makes the requests of `trustplane policy audit` without --as:
// a user of no group but system:authenticated, so that a policy that
// lets named groups through shows every object it would hold against
// everyone else.
const auditUser = "system:trustplane:policy-audit"

// policyAuditFlags are the flags of `trustplane policy audit`.
type policyAuditFlags struct {
	kubeconfig string
	dir        string
	kinds      []string
	policies   []string
	as         string
	asGroups   []string
	output     string
	timeout    time.Duration
	chunkSize  int64
}

func (f *policyAuditFlags) validate() error {
	var errs []error
	for _, k := range f.kinds {
		if strings.TrimSpace(k) == "" {
			errs = append(errs, fmt.Errorf("--kinds %q: an empty resource", strings.Join(f.kinds, ",")))
			break
		}
	}
	for _, p := range f.policies {
		if p == "" {
			errs = append(errs, errors.New("--policy: an empty name"))
			break
		}
	}
	if len(f.asGroups) > 0 && f.as == "" {
		errs = append(errs, errors.New("--as-group requires --as"))
	}
	if f.output != "text" && f.output != "json" {
		errs = append(errs, fmt.Errorf("-o %q: want text or json", f.output))
	}
	if f.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s must be positive", f.timeout))
	}
	if f.chunkSize <= 0 {
		errs = append(errs, fmt.Errorf("--chunk-size %d must be positive", f.chunkSize))
	}
	return errors.Join(errs...)
}

// resources are the resources --kinds names, read as replicate.yaml reads
// them.
func (f *policyAuditFlags) resources() []schema.GroupResource {
	var out []schema.GroupResource
	for _, k := range f.kinds {
		if gr := opa.ParseResource(k); !slices.Contains(out, gr) {
			out = append(out, gr)
		}
	}
	return out
}

// user makes the requests: --as in the groups --as-group, else auditUser.
func (f *policyAuditFlags) user() user.Info {
	if f.as == "" {
		return policytest.User(auditUser, nil)
	}
	return policytest.User(f.as, f.asGroups)
}

func newPolicyAuditCommand() *cobra.Command {
	f := policyAuditFlags{dir: datadir.DefaultDir, output: "text", timeout: opa.DefaultTimeout, chunkSize: policytest.DefaultPageSize}
	cmd := &cobra.Command{
		Use:   "audit [--kubeconfig FILE] [--kinds R,...] [--policy NAME]... [PATH...]",
		Short: "List the live objects of a cluster that the policies would deny",
		Long: `Judge every live object of a running cluster with the policies at PATH
(directories or .rego files; without PATH, the data directory's
policies/), and list each object a policy would deny: what to fix before
a policy goes from dryrun or warn to deny.

Each object is judged as a CREATE of it as it now is, what re-creating it
would meet, with the server's own decoding, defaults, admission input and
plugin, and as if every policy were enforced as deny; each finding shows
the policy's enforcement as written. The policies are loaded as the
server loads them (their own tests must pass), and read as
data.kubernetes the live objects of the resources named in replicate.yaml:
that of the PATHs that are directories holding one, else the data
directory's policies/replicate.yaml.

The requests are made by --as in the groups --as-group and
system:authenticated; without --as, by the user
system:trustplane:policy-audit, in system:authenticated only. Policies
that judge the requester (which groups may write Secrets in kube-system,
say) judge that user, and so show every object they would hold against
someone outside the groups they let through.

Every served resource is read but the reviews, which are computed, never
stored (--kinds narrows it: secrets,configmaps,apps/deployments); an Event
is judged both as events and as events.events.k8s.io, since a policy may
be written against either. The objects are read --chunk-size at a time, as
the identity of the kubeconfig: --kubeconfig, else $KUBECONFIG, else the
data directory's admin.conf. A resource it may not list is skipped, with
the reason. The resources of replicate.yaml are not: without them the
policies would judge wrongly, so the audit fails.

It prints one line per object and policy that would deny it,
"<resource> <namespace>/<name>: <policy> [<enforcement>]: <message>", then
how many of the objects evaluated each policy would deny; -o json prints
the same as one object. --policy NAME (repeatable) reports only those
policies. No value of a Secret's (or a ConfigMap's) data appears in
anything printed: it is shown as <redacted>.

Exit status: 0 when no object would be denied, 1 when some object would be
denied (or the policies could not decide it, which the server refuses), 2
when the audit could not be made: bad input (a policy that does not
parse, compile or pass its tests, with its file:line; a path that does
not exist; a bad flag; a kubeconfig that does not load), or a cluster
whose objects cannot be read.`,
		Example: `  trustplane policy audit
  trustplane policy audit --kubeconfig admin.conf --kinds secrets,configmaps ./policies
  trustplane policy audit --policy secrets_namespace -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.validate(); err != nil {
				return badInput(err)
			}
			paths := policyPaths(args, f.dir)
			replicate, source, err := replication(paths, f.dir)
			if err != nil {
				return badInput(err)
			}
			if source == "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: no %s beside the policies or in %s: the policies read no data.kubernetes\n", opa.ReplicationFile, datadir.Layout{Dir: f.dir}.Policies())
			}
			restConfig, err := clientConfig(f.kubeconfig, f.dir)
			if err != nil {
				return badInput(err)
			}
			restConfig.UserAgent = "trustplane-policy-audit/" + version
			client, err := dynamic.NewForConfig(restConfig)
			if err != nil {
				return badInput(fmt.Errorf("client for %s: %w", restConfig.Host, err))
			}
			report, err := policytest.Audit(cmd.Context(), client, policytest.AuditOptions{
				Paths:     paths,
				Replicate: replicate,
				Resources: f.resources(),
				Policies:  f.policies,
				User:      f.user(),
				Timeout:   f.timeout,
				PageSize:  f.chunkSize,
			})
			if err != nil {
				return badInput(err)
			}
			write := report.WriteText
			if f.output == "json" {
				write = report.WriteJSON
			}
			if err := write(cmd.OutOrStdout()); err != nil {
				return err
			}
			if report.Denied() {
				return &exitError{code: exitFailed}
			}
			return nil
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default $KUBECONFIG, else admin.conf in --dir)")
	flags.StringVar(&f.dir, "dir", f.dir, "data directory whose policies/ are used when no PATH is given, and whose admin.conf is the default kubeconfig")
	flags.StringSliceVar(&f.kinds, "kinds", nil, "resources to audit, as replicate.yaml names them (secrets,apps/deployments); default: every stored resource")
	flags.StringArrayVar(&f.policies, "policy", nil, "report only this policy; repeat for more (default: all)")
	flags.StringVar(&f.as, "as", "", "user making the requests (default "+auditUser+", in group system:authenticated only)")
	flags.StringArrayVar(&f.asGroups, "as-group", nil, "a group of the --as user; repeat for more")
	flags.StringVarP(&f.output, "output", "o", f.output, "output format: text or json")
	flags.DurationVar(&f.timeout, "timeout", f.timeout, "time limit of each evaluation, as the server's --admission-policy-timeout")
	flags.Int64Var(&f.chunkSize, "chunk-size", f.chunkSize, "objects asked for in each list request, as kubectl's --chunk-size")
	return cmd
}

// replication is what the server replicates for the policies at paths:
// the resources of the replicate.yaml of each path that is a directory
// holding one, else of the data directory's policy directory, and the
// files read; none when there is no such file.
func replication(paths []string, dir string) ([]schema.GroupResource, string, error) {
	var files []string
	for _, p := range paths {
		if info, err := os.Stat(p); err != nil || !info.IsDir() {
			// A .rego file, or a path the policies' loading reports.
			continue
		}
		file := filepath.Join(p, opa.ReplicationFile)
		// A file that is there but cannot be read is LoadReplication's
		// error to report.
		if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
			files = append(files, file)
		}
	}
	if len(files) == 0 {
		file := filepath.Join(datadir.Layout{Dir: dir}.Policies(), opa.ReplicationFile)
		if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
			return nil, "", nil
		}
		files = append(files, file)
	}
	var out []schema.GroupResource
	for _, file := range files {
		grs, err := opa.LoadReplication(file)
		if err != nil {
			return nil, "", err
		}
		for _, gr := range grs {
			if !slices.Contains(out, gr) {
				out = append(out, gr)
			}
		}
	}
	return out, strings.Join(files, ", "), nil
}
